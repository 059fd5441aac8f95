"""Real NumPy programs, written for plain NumPy; the tests run them unchanged on lazy arrays.

`barrier` is the step boundary: lazyx.sync on lazy arrays, a no-op for NumPy (lazyx.sync()
with nothing pending returns at once).
"""
import numpy as np


def mlp_train(X, Y, W1, b1, W2, b2, lr, steps, batch, barrier):
    """A two-layer tanh MLP with softmax cross-entropy, hand-written backprop, minibatch SGD."""
    losses = []
    n = X.shape[0]
    for step in range(steps):
        start = (step * batch) % n
        xb, yb = X[start:start + batch], Y[start:start + batch]
        h = np.tanh(xb @ W1 + b1)
        logits = h @ W2 + b2
        shifted = logits - np.max(logits, axis=1, keepdims=True)
        e = np.exp(shifted)
        p = e / np.sum(e, axis=1, keepdims=True)
        loss = -np.mean(np.sum(yb * np.log(p + 1e-12), axis=1))
        g_logits = (p - yb) / batch
        g_W2 = h.T @ g_logits
        g_b2 = g_logits.sum(axis=0)
        g_h = (g_logits @ W2.T) * (1 - h ** 2)
        g_W1 = xb.T @ g_h
        g_b1 = g_h.sum(axis=0)
        W1 -= lr * g_W1
        b1 -= lr * g_b1
        W2 -= lr * g_W2
        b2 -= lr * g_b2
        losses.append(loss)
        barrier()
    return W1, b1, W2, b2, losses


def kmeans(X, centers, iters, barrier):
    """Lloyd's algorithm: assign to the nearest centre, move centres to their means."""
    k = centers.shape[0]
    for _ in range(iters):
        d2 = ((X[:, None, :] - centers[None, :, :]) ** 2).sum(axis=-1)
        labels = np.argmin(d2, axis=1)
        onehot = (labels[:, None] == np.arange(k)[None, :]).astype(X.dtype)
        counts = onehot.sum(axis=0)
        centers = (onehot.T @ X) / np.maximum(counts, 1)[:, None]
        inertia = np.min(d2, axis=1).sum()
        barrier()
    return centers, labels, inertia
