"""Keras' recurrent layers on lazy tensors train to eager TF's numbers, one program per step.
Keras' TF backend loops over time with tf.while_loop over TensorArrays, which take no lazy
value: LSTM, GRU, SimpleRNN and Bidirectional raised TypeError until hooks.py had Keras unroll
the loop for a lazy input."""
import numpy as np
import pytest

import keras
import lazyx
from .conftest import train_keras

LAYERS = {
    "lstm": lambda: [keras.layers.LSTM(8)],
    "gru_sequences": lambda: [keras.layers.GRU(6, return_sequences=True),
                              keras.layers.GlobalAveragePooling1D()],
    "simple_rnn_backwards": lambda: [keras.layers.SimpleRNN(5, go_backwards=True)],
    "bidirectional": lambda: [keras.layers.Bidirectional(keras.layers.LSTM(4))],
    # a backward pass's every output: Keras' unrolled loop zeroed masked steps in the wrong
    # order (hooks._wrap_keras_rnn reverses the sequence itself)
    "bidirectional_sequences": lambda: [
        keras.layers.Bidirectional(keras.layers.LSTM(4, return_sequences=True)),
        keras.layers.GlobalAveragePooling1D()],
    "gru_backwards_sequences": lambda: [
        keras.layers.GRU(4, go_backwards=True, return_sequences=True),
        keras.layers.Flatten()],
}


def _train(layers, lazy, inputs, head, steps=3):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([inputs, *head(), *LAYERS[layers](), keras.layers.Dense(3)])
    rng = np.random.default_rng(0)
    if inputs.dtype == "int32":  # token ids, 0 = padding (masked)
        x = rng.integers(1, 12, size=(4, 7)).astype(np.int32)
        x[0, 5:] = 0
        x[2, 3:] = 0
    else:
        x = rng.normal(size=(4, 7, 5)).astype(np.float32)
    y = rng.integers(0, 3, size=(4,))
    losses, weights, _ = train_keras(model, keras.optimizers.Adam(0.01), x, y, lazy, steps)
    return losses, weights


@pytest.mark.parametrize("masked", [False, True], ids=["dense", "masked-embedding"])
@pytest.mark.parametrize("layers", sorted(LAYERS))
def test_recurrent_layers_train_lazily_to_eager_numbers(layers, masked):
    if masked:
        inputs = keras.Input((7,), dtype="int32")
        head = lambda: [keras.layers.Embedding(12, 5, mask_zero=True)]  # noqa: E731
    else:
        inputs, head = keras.Input((7, 5)), list
    want_losses, want_weights = _train(layers, False, inputs, head)
    lazyx.reset_metrics()
    got_losses, got_weights = _train(layers, True, inputs, head)
    m = lazyx.metrics()
    assert m["syncs"] == 3 and m["fallback_ops"] == {}, m
    np.testing.assert_allclose(got_losses, want_losses, rtol=1e-5)
    for got, want in zip(got_weights, want_weights):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
