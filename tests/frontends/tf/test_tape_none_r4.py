"""ltf.GradientTape gives None, as TF's tape does, for a source reached only through ops TF
registers as not differentiable (Floor, Ceil, Round, Rint, FloorDiv, StopGradient) or through
an integer or boolean result (argmax, a comparison, a cast to int); it gave zeros. Ops TF
differentiates to zeros (Sign) still give zeros, and a source with another path keeps its
gradient. Each case is compared with eager TF's own tape."""
import numpy as np
import pytest
import tensorflow as tf

import lazyx.frontends.tf as ltf

_A = np.array([[-1.5, 0.3], [2.7, -0.2]], np.float32)
_CASES = {
    "floor": tf.floor, "ceil": tf.math.ceil, "round": tf.round, "rint": tf.math.rint,
    "floordiv": lambda x: tf.math.floordiv(x, 0.7),
    "stop_gradient": tf.stop_gradient,
    "argmax": lambda x: tf.cast(tf.argmax(x), tf.float32),
    "equal": lambda x: tf.cast(tf.equal(x, 0.3), tf.float32),
    "cast_to_int": lambda x: tf.cast(tf.cast(x, tf.int32), tf.float32),
    "sign": tf.sign,                                   # zeros in TF
    "floormod": lambda x: tf.math.floormod(x, 0.7),    # ones in TF
    "floor_plus_x": lambda x: tf.floor(x) + x * x,     # another path: a gradient
}


def _gradient(fn, make, Tape, **kwargs):
    x = make(_A)
    with Tape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(fn(x))
    g = tape.gradient(y, x, **kwargs)
    return None if g is None else np.asarray(g)


# TF's own tape over lazy values too: the bridge records the lazy ops on it as one op whose
# gradient lazyx computes, and that gradient must be None where TF's is
@pytest.mark.parametrize("Tape", [ltf.GradientTape, tf.GradientTape], ids=["ltf", "tf"])
@pytest.mark.parametrize("name", sorted(_CASES))
def test_unconnected_gradient_is_tfs(name, Tape):
    want = _gradient(_CASES[name], tf.constant, tf.GradientTape)
    got = _gradient(_CASES[name], ltf.constant, Tape)
    assert (got is None) == (want is None), (got, want)
    if want is not None:
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_unconnected_gradients_zero_still_gives_zeros():
    got = _gradient(tf.floor, ltf.constant, ltf.GradientTape,
                    unconnected_gradients=tf.UnconnectedGradients.ZERO)
    np.testing.assert_array_equal(got, np.zeros_like(_A))


@pytest.mark.parametrize("Tape", [ltf.GradientTape, tf.GradientTape], ids=["ltf", "tf"])
def test_unconnected_gradient_is_none_after_a_value_was_read_mid_step(Tape):
    # a value read under the tape (a logged loss) makes lazyx carry gradients on through
    # realized values (runtime.ORIGINS): that path must stop at floor as TF's tape does
    def run(make, tape_cls):
        x = make(_A)
        with tape_cls() as tape:
            tape.watch(x)
            h = x * x
            float(tf.reduce_sum(h))  # read mid-step
            y = tf.reduce_sum(tf.floor(h))
        return tape.gradient(y, x)

    want, got = run(tf.constant, tf.GradientTape), run(ltf.constant, Tape)
    assert want is None and got is None, got
    # and a connected source through the same realized value keeps its gradient
    x = ltf.constant(_A)
    with Tape() as tape:
        tape.watch(x)
        h = x * x
        float(tf.reduce_sum(h))
        z = tf.reduce_sum(h * 3.0)
    np.testing.assert_allclose(np.asarray(tape.gradient(z, x)), 6.0 * _A, rtol=1e-6)
