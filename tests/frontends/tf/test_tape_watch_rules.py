"""What has a gradient is TF's answer under both tapes, with variables holding lazy values
(as after any lazy optimizer step) and lazy tensors: the TF guide's autodiff cells.

A plain tf.GradientTape gave d(x * x)/dx as 2.0 and d(x ** 2)/dx as None (a variable's
operators read its lazy value past TF's tape). ltf.GradientTape gave gradients where TF gives
None: to a non-trainable variable, to a tensor made before the tape and never watched, to a
value made before tape.reset(), and to an unwatched lazy constant."""
import pytest
import tensorflow as tf

import lazyx.frontends.tf as ltf

TAPES = {"tf.GradientTape": tf.GradientTape, "ltf.GradientTape": ltf.GradientTape}


def _variable(value, lazy, **kwargs):
    v = tf.Variable(value, **kwargs)
    if lazy:
        v.assign(ltf.constant(value))  # the variable now holds a pending lazy value
    return v


def _number(g):
    return None if g is None else float(g)


def _cases(tape_kind, lazy):
    Tape = TAPES[tape_kind]
    out = {}
    x0 = _variable(3.0, lazy, name="x0")
    x1 = _variable(3.0, lazy, name="x1", trainable=False)
    x2 = _variable(2.0, lazy, name="x2") + 1.0  # a tensor made before the tape, not watched
    with Tape() as tape:
        y = (x0 ** 2) + (x1 ** 2) + (x2 ** 2)
    out["cell 10"] = [_number(g) for g in tape.gradient(y, [x0, x1, x2])]
    x, w = _variable(2.0, lazy), _variable(3.0, lazy)
    with Tape() as tape:
        z = x * x
    out["x * x"] = _number(tape.gradient(z, x))
    with Tape() as tape:
        w_sq = w * w
        tape.reset()
        z = x * x + w_sq
    out["reset"] = [_number(g) for g in tape.gradient(z, [x, w])]
    with Tape() as tape:
        x_sq = x * x
        with tape.stop_recording():
            w_sq = w * w
        z = x_sq + w_sq
    out["stop_recording"] = [_number(g) for g in tape.gradient(z, [x, w])]
    with Tape() as tape:
        tape.watch(x1)
        x1_sq = x1 * x1
    out["watched non-trainable"] = _number(tape.gradient(x1_sq, x1))
    return out


@pytest.mark.parametrize("tape_kind", sorted(TAPES))
def test_gradients_are_tfs_with_lazy_variables(tape_kind):
    assert _cases(tape_kind, lazy=True) == _cases("tf.GradientTape", lazy=False)


@pytest.mark.parametrize("tape_kind", sorted(TAPES))
def test_lazy_tensors_have_a_gradient_only_when_watched_or_made_under_the_tape(tape_kind):
    Tape = TAPES[tape_kind]
    for make in (tf.constant, ltf.constant):
        x = make(3.0)
        with Tape(persistent=True) as tape:
            y = x + 1
            u = y * y
        assert tape.gradient(y, x) is None
        if Tape is ltf.GradientTape:  # (TF's tape still answers 8.0 here for a lazy y)
            assert tape.gradient(u, y) is None  # made under the tape, from nothing watched
        with Tape(persistent=True) as tape:
            tape.watch(x)
            y = x * x
            u = y * y
        assert float(tape.gradient(y, x)) == 6.0
        assert float(tape.gradient(u, y)) == 18.0  # made under the tape from x, watched
