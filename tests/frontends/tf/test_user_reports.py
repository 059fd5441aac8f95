"""Bugs users' code hit, each held to plain TF on the same inputs: formatting a lazy scalar
(f"{loss:.4f}") and tensor.ref(); reading the loss between an ltf.GradientTape's block and
tape.gradient(); tf.compat.v1.shape (TF's internal array_ops.shape) as a reshape's shape;
pickling a pending float64 tensor."""
import warnings

import numpy as np
import pytest
import tensorflow as tf

import lazyx
import lazyx.frontends.tf as ltf


def _format(value, spec):
    try:
        return format(value, spec)
    except Exception as err:  # noqa: BLE001 - the error is part of what must match
        return f"{type(err).__name__}: {err}"


_VALUES = [np.float32(2.3333333), np.int32(3), np.array([1.0, 2.0], np.float32), True,
           np.float64(2.5), np.float16(1.5), np.uint8(7), np.complex128(1 + 2j)]


@pytest.mark.parametrize("spec", [".4f", "8.2e", "", "5", "d", ">10"])
@pytest.mark.parametrize("value", _VALUES, ids=lambda v: str(np.asarray(v).dtype))
def test_format_spec_like_eager(value, spec):
    """EagerTensor.__format__ formats its NumPy array: a 0-d tensor takes any spec its
    number does, a spec on a vector raises NumPy's TypeError (lazyx raised for every spec)."""
    lazy = ltf.constant(value) * 1 if np.asarray(value).dtype != bool else ltf.constant(value)
    assert _format(lazy, spec) == _format(tf.constant(value), spec)


def test_format_of_a_computed_loss():
    x = np.array([1.0, 2.0, 4.0], np.float32)
    want = tf.reduce_mean(tf.constant(x))
    got = tf.reduce_mean(ltf.constant(x))
    assert f"loss {got:.4f}" == f"loss {want:.4f}" == "loss 2.3333"


def test_ref_and_deref():
    x, y = ltf.constant([1.0]), ltf.constant([1.0])
    refs = {x.ref(): "x", y.ref(): "y"}   # TF's idiom for tensors as keys
    assert refs[x.ref()] == "x" and refs[y.ref()] == "y"
    assert x.ref() == x.ref() and x.ref() != y.ref()
    assert x.ref().deref() is x
    assert type(x.ref()) is type(tf.constant(1.0).ref())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert x.experimental_ref().deref() is x
