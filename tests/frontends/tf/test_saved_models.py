"""tf.saved_model and concrete functions around lazy values: a tf.function called only lazily
is still saved, a saved variable holds its latest (lazy) value, and a restored or concrete
function takes lazy arguments -- each as eager TF does, the last two as counted fallbacks
(a TF graph cannot hold a lazy value)."""
import numpy as np
import pytest
import tensorflow as tf

import lazyx
import lazyx.frontends.tf as ltf


class _Scale(tf.Module):
    def __init__(self):
        super().__init__()
        self.weight = tf.Variable([1.0, 2.0, 3.0])

    @tf.function
    def multiply(self, x):
        return x * self.weight


class _Exported(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = tf.Variable([[1.0], [2.0]])

    @tf.function(input_signature=[tf.TensorSpec(shape=[None, None], dtype=tf.float32)])
    def __call__(self, x):
        return tf.matmul(x, self.w)


def _fallbacks():
    return lazyx.metrics()["fallbacks"]


def test_a_function_called_only_lazily_is_saved(tmp_path):
    module = _Scale()
    first = module.multiply(ltf.constant([1.0, 1.0, 2.0]))
    np.testing.assert_array_equal(first.numpy(), [1.0, 2.0, 6.0])
    tf.saved_model.save(module, str(tmp_path))
    restored = tf.saved_model.load(str(tmp_path))
    real = restored.multiply(tf.constant([2.0, 2.0, 2.0]))
    np.testing.assert_array_equal(real.numpy(), [2.0, 4.0, 6.0])


def test_a_saved_variable_holds_its_lazy_value(tmp_path):
    module = _Scale()
    module.weight.assign(ltf.constant([4.0, 5.0, 6.0]) * 2.0)  # pending, not yet written
    module.multiply(ltf.constant([1.0, 1.0, 1.0]))
    tf.saved_model.save(module, str(tmp_path))
    restored = tf.saved_model.load(str(tmp_path))
    np.testing.assert_array_equal(restored.weight.numpy(), [8.0, 10.0, 12.0])
    out = restored.multiply(tf.constant([1.0, 1.0, 1.0]))
    np.testing.assert_array_equal(out.numpy(), [8.0, 10.0, 12.0])


@pytest.mark.parametrize("lazy_first_call", [False, True])
def test_a_restored_function_takes_lazy_arguments(tmp_path, lazy_first_call):
    module = _Scale()
    make = ltf.constant if lazy_first_call else tf.constant
    module.multiply(make([1.0, 1.0, 1.0]))
    tf.saved_model.save(module, str(tmp_path))
    restored = tf.saved_model.load(str(tmp_path))
    before = _fallbacks()
    out = restored.multiply(ltf.constant([1.0, 2.0, 3.0]) + 1.0)
    assert isinstance(out, ltf.LazyTensor)
    np.testing.assert_array_equal(out.numpy(), [2.0, 6.0, 12.0])
    assert _fallbacks() == before + 1  # one counted fallback: the graph on materialized values


def test_a_restored_function_with_a_signature_takes_lazy_arguments(tmp_path):
    tf.saved_model.save(_Exported(), str(tmp_path))
    restored = tf.saved_model.load(str(tmp_path))
    x = [[1.0, 1.0], [2.0, 3.0]]
    out = restored(ltf.constant(x))
    np.testing.assert_array_equal(np.asarray(out), [[3.0], [8.0]])
    serving = restored.signatures["serving_default"]
    (name, result), = serving(x=ltf.constant(x)).items()
    assert isinstance(result, ltf.LazyTensor)
    np.testing.assert_array_equal(np.asarray(result), [[3.0], [8.0]])
    with pytest.raises(Exception) as eager:
        restored(tf.constant([[1, 2]]))  # int32 against a float32 signature
    with pytest.raises(type(eager.value)):
        restored(ltf.constant([[1, 2]]))


def test_concrete_functions_take_lazy_arguments():
    @tf.function
    def power(a, b):
        return a ** b

    square = power.get_concrete_function(a=tf.TensorSpec([], tf.float32), b=2)
    np.testing.assert_allclose(np.asarray(square(ltf.constant(10.0))), 100.0)
    np.testing.assert_allclose(np.asarray(square(a=ltf.constant(3.0))), 9.0)

    @tf.function
    def double(x):
        return x + x

    concrete = double.get_concrete_function(ltf.constant([1.0, 2.0]))  # traced on its spec
    spec = concrete.structured_input_signature[0][0]
    assert (spec.shape, spec.dtype) == ((2,), tf.float32)
    np.testing.assert_allclose(np.asarray(concrete(ltf.constant([3.0, 4.0]))), [6.0, 8.0])
    np.testing.assert_allclose(concrete(tf.constant([3.0, 4.0])).numpy(), [6.0, 8.0])


def test_a_concrete_function_refuses_a_wrong_lazy_dtype_as_tf_does():
    @tf.function
    def strings(s):
        return s + s

    concrete = strings.get_concrete_function(tf.TensorSpec([], tf.string))
    with pytest.raises((TypeError, tf.errors.InvalidArgumentError)) as eager:
        concrete(tf.constant(1))
    with pytest.raises(type(eager.value)):
        concrete(ltf.constant(1))


def test_py_function_as_a_decorator_takes_lazy_arguments():
    @tf.py_function(Tout=tf.float32)
    def plus(x, y):
        return x + y

    @tf.function
    def wrapper(x, y):
        return plus(x, y)

    np.testing.assert_allclose(np.asarray(plus(ltf.constant(1.0), ltf.constant(2.0))), 3.0)
    np.testing.assert_allclose(np.asarray(wrapper(ltf.constant(1.0), ltf.constant(5.0))), 6.0)
    np.testing.assert_allclose(plus(tf.constant(1.0), tf.constant(2.0)).numpy(), 3.0)

    @tf.numpy_function(Tout=tf.float32)
    def twice(x):
        return x * 2

    np.testing.assert_allclose(np.asarray(twice(ltf.constant([1.0, 2.0]))), [2.0, 4.0])
    with pytest.raises(TypeError, match="Tout"):
        tf.py_function()


def test_a_lazily_run_function_tf_cannot_trace_is_saved_without_it(tmp_path):
    class Reads(tf.Module):
        @tf.function(autograph=False)
        def positive(self, x):
            return x * 2.0 if float(tf.reduce_sum(x)) > 0 else -x  # a value read in Python

    module = Reads()
    np.testing.assert_allclose(np.asarray(module.positive(ltf.constant([1.0, 2.0]))),
                               [2.0, 4.0])
    with pytest.warns(RuntimeWarning, match="cannot trace it"):
        tf.saved_model.save(module, str(tmp_path))
