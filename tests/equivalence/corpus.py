"""The equivalence corpus: each program written once per framework, in that framework's idiom.

A Program has input specs and up to three functions (numpy, torch, tf); each function takes the
framework module and the inputs and runs unchanged on eager values and on lazyx values. The
claim under test: the three lazy versions record the same graph (equal lazyx.graph_hash), give
the same numbers on every backend, and match each framework's own eager result.
"""
import math
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Program:
    name: str
    inputs: list                    # [(dtype, shape, kind)] kind: "normal", "positive", "int:<lo>:<hi>"
    numpy: object = None
    torch: object = None
    tf: object = None
    rtol: float = 2e-5
    atol: float = 2e-6
    eager_comparable: bool = True   # False for seeded random: lazyx's stream is its own
    note: str = ""
    frontends: tuple = field(default=("numpy", "torch", "tf"))


def make_inputs(program, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for dtype, shape, kind in program.inputs:
        if kind.startswith("int:"):
            lo, hi = (int(v) for v in kind.split(":")[1:])
            out.append(rng.integers(lo, hi, size=shape).astype(dtype))
        elif kind == "positive":
            out.append((rng.random(shape) + 0.5).astype(dtype))
        else:
            out.append(rng.standard_normal(shape).astype(dtype))
    return out


F32 = "float32"
PROGRAMS = []


def program(name, inputs, **kw):
    def register(cls):
        PROGRAMS.append(Program(name, inputs, numpy=getattr(cls, "numpy", None),
                                torch=getattr(cls, "torch", None), tf=getattr(cls, "tf", None),
                                **kw))
        return cls
    return register


@program("elementwise_chain", [(F32, (4, 5), "normal")])
class _:
    def numpy(np, x): return np.tanh(x * 2.0 + 1.0) * np.exp(-x) - x / 3.0
    def torch(torch, x): return torch.tanh(x * 2.0 + 1.0) * torch.exp(-x) - x / 3.0
    def tf(tf, x): return tf.tanh(x * 2.0 + 1.0) * tf.exp(-x) - x / 3.0


@program("unary_math", [(F32, (3, 7), "normal")])
class _:
    def numpy(np, x): return np.sqrt(np.abs(x)) + np.log1p(x * x) + np.sin(x) * np.cos(x)
    def torch(torch, x): return torch.sqrt(torch.abs(x)) + torch.log1p(x * x) + torch.sin(x) * torch.cos(x)
    def tf(tf, x): return tf.sqrt(tf.abs(x)) + tf.math.log1p(x * x) + tf.sin(x) * tf.cos(x)


@program("relu_scale", [(F32, (6, 4), "normal")])
class _:
    def numpy(np, x): return np.maximum(x, 0.0) * 0.5
    def torch(torch, x): return torch.relu(x) * 0.5
    def tf(tf, x): return tf.nn.relu(x) * 0.5


@program("broadcast_add", [(F32, (4, 1), "normal"), (F32, (3,), "normal")])
class _:
    def numpy(np, x, y): return x + y
    def torch(torch, x, y): return x + y
    def tf(tf, x, y): return x + y


@program("broadcast_3d", [(F32, (2, 3, 4), "normal"), (F32, (3, 1), "normal"), (F32, (4,), "normal")])
class _:
    def numpy(np, x, y, z): return x * y - z
    def torch(torch, x, y, z): return x * y - z
    def tf(tf, x, y, z): return x * y - z


@program("sum_axis", [(F32, (5, 6), "normal")])
class _:
    def numpy(np, x): return np.sum(x, axis=1)
    def torch(torch, x): return torch.sum(x, dim=1)
    def tf(tf, x): return tf.reduce_sum(x, axis=1)


@program("population_variance", [(F32, (5, 7), "normal")])
class _:
    def numpy(np, x): return np.var(x, axis=1)
    def torch(torch, x): return torch.var(x, dim=1, correction=0)
    def tf(tf, x): return tf.math.reduce_variance(x, axis=1)


@program("sample_std", [(F32, (5, 7), "normal")], frontends=("numpy", "torch"))
class _:  # (TF has no sample standard deviation)
    def numpy(np, x): return np.std(x, axis=0, ddof=1)
    def torch(torch, x): return torch.std(x, dim=0)


@program("center_rows", [(F32, (5, 6), "normal")])
class _:
    def numpy(np, x): return x - x.mean(axis=-1, keepdims=True)
    def torch(torch, x): return x - x.mean(dim=-1, keepdim=True)
    def tf(tf, x): return x - tf.reduce_mean(x, axis=-1, keepdims=True)


@program("range_per_column", [(F32, (7, 3), "normal")])
class _:
    def numpy(np, x): return x.max(axis=0) - x.min(axis=0)
    def torch(torch, x): return x.amax(dim=0) - x.amin(dim=0)
    def tf(tf, x): return tf.reduce_max(x, axis=0) - tf.reduce_min(x, axis=0)


@program("argmax_rows", [(F32, (6, 9), "normal")], frontends=("numpy", "torch"))
class _:  # (TF's argmax skips NaN, another graph: test_differences.py's argmax_with_nan)
    def numpy(np, x): return np.argmax(x, axis=1)
    def torch(torch, x): return torch.argmax(x, dim=1)
    def tf(tf, x): return tf.argmax(x, axis=1)


@program("matmul", [(F32, (8, 16), "normal"), (F32, (16, 4), "normal")], rtol=1e-5, atol=1e-5)
class _:
    def numpy(np, x, w): return x @ w
    def torch(torch, x, w): return x @ w
    def tf(tf, x, w): return tf.matmul(x, w)


@program("batched_matmul", [(F32, (2, 8, 16), "normal"), (F32, (2, 16, 4), "normal")],
         rtol=1e-5, atol=1e-5)
class _:
    def numpy(np, a, b): return np.matmul(a, b)
    def torch(torch, a, b): return torch.bmm(a, b)
    def tf(tf, a, b): return tf.matmul(a, b)


@program("activations_at_weights", [(F32, (2, 8, 16), "normal"), (F32, (16, 4), "normal")],
         rtol=1e-5, atol=1e-5)
class _:  # (..., k) @ (k, n): one matrix product over the flattened rows in every frontend
    def numpy(np, a, w): return a @ w
    def torch(torch, a, w): return a @ w
    def tf(tf, a, w): return tf.matmul(a, w)


@program("tensordot", [(F32, (3, 4, 5), "normal"), (F32, (4, 5, 2), "normal")], rtol=1e-5, atol=1e-5)
class _:
    def numpy(np, a, b): return np.tensordot(a, b, axes=([1, 2], [0, 1]))
    def torch(torch, a, b): return torch.tensordot(a, b, dims=([1, 2], [0, 1]))
    def tf(tf, a, b): return tf.tensordot(a, b, axes=[[1, 2], [0, 1]])


@program("transpose_reshape", [(F32, (2, 3, 4), "normal")])
class _:
    def numpy(np, x): return x.transpose(1, 0, 2).reshape(3, 8)
    def torch(torch, x): return x.permute(1, 0, 2).reshape(3, 8)
    def tf(tf, x): return tf.reshape(tf.transpose(x, [1, 0, 2]), [3, 8])


@program("strided_slice", [(F32, (5, 6), "normal")])
class _:
    def numpy(np, x): return x[1:4, ::2]
    def torch(torch, x): return x[1:4, ::2]
    def tf(tf, x): return x[1:4, ::2]


@program("windows_in_any_axis_order", [(F32, (5, 6, 4), "normal")])
class _:  # torch takes one axis at a time (a strided slice, then windows); NumPy and TF all at once
    def numpy(np, x): return x[::2, 1:3] + x[2:, 3][:, None] + x[1, 2] + x[1:4, 4:6, 1:2]
    def torch(torch, x): return x[::2, 1:3] + x[2:, 3][:, None] + x[1, 2] + x[1:4, 4:6, 1:2]
    def tf(tf, x): return x[::2, 1:3] + x[2:, 3][:, None] + x[1, 2] + x[1:4, 4:6, 1:2]


@program("roll_columns", [(F32, (5, 6), "normal")])
class _:  # (torch's own roll decomposition was a 16-op gather)
    def numpy(np, x): return np.roll(x, 2, axis=1) - np.roll(x, -1, axis=0)
    def torch(torch, x): return torch.roll(x, 2, 1) - torch.roll(x, -1, 0)
    def tf(tf, x): return tf.roll(x, 2, 1) - tf.roll(x, -1, 0)


@program("einsum_and_matrix_vector", [(F32, (5, 6), "normal"), (F32, (6, 4), "normal"),
                                      (F32, (6,), "normal")], rtol=1e-5, atol=1e-5)
class _:  # torch's einsum is a bmm with a unit batch axis; NumPy's x @ v a (6, 1) matrix
    def numpy(np, x, w, v): return np.einsum("ij,jk->ik", x, w).sum(1) + x @ v
    def torch(torch, x, w, v): return torch.einsum("ij,jk->ik", x, w).sum(1) + x @ v
    def tf(tf, x, w, v): return tf.reduce_sum(tf.einsum("ij,jk->ik", x, w), 1) + tf.linalg.matvec(x, v)


@program("gather_rows", [(F32, (6, 3), "normal"), ("int64", (4,), "int:0:6")])
class _:
    def numpy(np, x, idx): return x[idx]
    def torch(torch, x, idx): return x[idx]
    def tf(tf, x, idx): return tf.gather(x, idx)


@program("take_along_axis", [(F32, (4, 5), "normal"), ("int64", (4, 2), "int:0:5")])
class _:
    def numpy(np, x, idx): return np.take_along_axis(x, idx, axis=1)
    def torch(torch, x, idx): return torch.gather(x, 1, idx)
    def tf(tf, x, idx): return tf.gather(x, idx, axis=1, batch_dims=1)


@program("concatenate", [(F32, (2, 3), "normal"), (F32, (4, 3), "normal")])
class _:
    def numpy(np, x, y): return np.concatenate([x, y], axis=0)
    def torch(torch, x, y): return torch.cat([x, y], dim=0)
    def tf(tf, x, y): return tf.concat([x, y], axis=0)


@program("stack", [(F32, (2, 3), "normal"), (F32, (2, 3), "normal")])
class _:
    def numpy(np, x, y): return np.stack([x, y], axis=1)
    def torch(torch, x, y): return torch.stack([x, y], dim=1)
    def tf(tf, x, y): return tf.stack([x, y], axis=1)


@program("softmax", [(F32, (4, 10), "normal")])
class _:
    def numpy(np, x):
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    def torch(torch, x): return torch.softmax(x, dim=-1)
    def tf(tf, x): return tf.nn.softmax(x, axis=-1)


@program("log_softmax", [(F32, (4, 10), "normal")])
class _:
    def numpy(np, x):
        shifted = x - x.max(axis=-1, keepdims=True)
        return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    def torch(torch, x): return torch.log_softmax(x, dim=-1)
    def tf(tf, x): return tf.nn.log_softmax(x, axis=-1)


@program("layernorm", [(F32, (4, 8), "normal"), (F32, (8,), "normal"), (F32, (8,), "normal")],
         rtol=1e-4, atol=1e-5)
class _:
    def numpy(np, x, g, b):
        mu = x.mean(axis=-1, keepdims=True)
        var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-5) * g + b
    def torch(torch, x, g, b):
        mu = x.mean(dim=-1, keepdim=True)
        var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)
        return (x - mu) / torch.sqrt(var + 1e-5) * g + b
    def tf(tf, x, g, b):
        mu = tf.reduce_mean(x, axis=-1, keepdims=True)
        var = tf.reduce_mean((x - mu) ** 2, axis=-1, keepdims=True)
        return (x - mu) / tf.sqrt(var + 1e-5) * g + b


@program("convolution_1d", [(F32, (32,), "normal"), (F32, (5,), "normal")], rtol=1e-5, atol=1e-5)
class _:
    def numpy(np, x, w): return np.convolve(x, w, mode="valid")
    def torch(torch, x, w):
        out = torch.nn.functional.conv1d(x.reshape(1, 1, -1), torch.flip(w, [0]).reshape(1, 1, -1))
        return out.reshape(-1)
    def tf(tf, x, w):
        out = tf.nn.conv1d(tf.reshape(x, [1, -1, 1]), tf.reshape(tf.reverse(w, [0]), [-1, 1, 1]),
                           stride=1, padding="VALID")
        return tf.reshape(out, [-1])


@program("mlp_forward_loss", [(F32, (16, 8), "normal"), (F32, (8, 32), "normal"), (F32, (32,), "normal"),
                              (F32, (32, 4), "normal"), (F32, (4,), "normal"), (F32, (16, 4), "normal")],
         rtol=1e-4, atol=1e-5)
class _:
    def numpy(np, x, w1, b1, w2, b2, y):
        h = np.maximum(x @ w1 + b1, 0.0)
        return np.mean((h @ w2 + b2 - y) ** 2)
    def torch(torch, x, w1, b1, w2, b2, y):
        h = torch.relu(x @ w1 + b1)
        return torch.mean((h @ w2 + b2 - y) ** 2)
    def tf(tf, x, w1, b1, w2, b2, y):
        h = tf.nn.relu(tf.matmul(x, w1) + b1)
        return tf.reduce_mean((tf.matmul(h, w2) + b2 - y) ** 2)


@program("attention", [(F32, (2, 4, 8), "normal"), (F32, (2, 4, 8), "normal"), (F32, (2, 4, 8), "normal")],
         rtol=1e-4, atol=1e-5)
class _:
    def numpy(np, q, k, v):
        s = q @ np.swapaxes(k, -1, -2) / math.sqrt(8)
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        return (e / e.sum(axis=-1, keepdims=True)) @ v
    def torch(torch, q, k, v):
        return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(8), dim=-1) @ v
    def tf(tf, q, k, v):
        return tf.matmul(tf.nn.softmax(tf.matmul(q, tf.transpose(k, [0, 2, 1])) / math.sqrt(8)), v)


@program("cumulative_sum", [(F32, (3, 6), "normal")])
class _:
    def numpy(np, x): return np.cumsum(x, axis=1)
    def torch(torch, x): return torch.cumsum(x, dim=1)
    def tf(tf, x): return tf.cumsum(x, axis=1)


@program("where_select", [(F32, (4, 5), "normal"), (F32, (4, 5), "normal")])
class _:
    def numpy(np, x, y): return np.where(x > 0, x, y * 0.5)
    def torch(torch, x, y): return torch.where(x > 0, x, y * 0.5)
    def tf(tf, x, y): return tf.where(x > 0, x, y * 0.5)


@program("clip", [(F32, (4, 5), "normal")])
class _:
    def numpy(np, x): return np.clip(x, -0.5, 0.5)
    def torch(torch, x): return torch.clamp(x, -0.5, 0.5)
    def tf(tf, x): return tf.clip_by_value(x, -0.5, 0.5)


@program("int_floor_div_mod", [("int32", (5, 4), "int:-50:50"), ("int32", (5, 4), "int:1:9")])
class _:
    def numpy(np, a, b): return (a // b) * 3 + a % b
    def torch(torch, a, b): return (a // b) * 3 + a % b
    def tf(tf, a, b): return (a // b) * 3 + a % b


# factorizations: one IR node with several results each (core/ir.py); sign-free outputs only
@program("singular_values", [(F32, (2, 5, 3), "normal")], rtol=1e-4, atol=1e-5)
class _:
    # (torch.linalg.svdvals asks aten for U and V too on lazy tensors: the full svd's S here)
    def numpy(np, x): return np.linalg.svd(x, full_matrices=False).S
    def torch(torch, x): return torch.linalg.svd(x, full_matrices=False).S
    def tf(tf, x): return tf.linalg.svd(x)[0]


@program("eigenvalues_lower_triangle", [(F32, (2, 4, 4), "normal")], rtol=1e-4, atol=1e-5)
class _:
    def numpy(np, x): return np.linalg.eigvalsh(x) * 2.0
    def torch(torch, x): return torch.linalg.eigvalsh(x) * 2.0
    def tf(tf, x): return tf.linalg.eigvalsh(x) * 2.0


@program("qr_r_magnitudes", [(F32, (5, 3), "normal")], rtol=1e-4, atol=1e-5)
class _:
    def numpy(np, x): return np.abs(np.linalg.qr(x)[1])
    def torch(torch, x): return torch.abs(torch.linalg.qr(x)[1])
    def tf(tf, x): return tf.abs(tf.linalg.qr(x)[1])


@program("seeded_uniform", [], eager_comparable=False,
         note="one seed gives one stream in every frontend (not the frameworks' own streams)")
class _:
    def numpy(np, rng=None):
        import lazyx.frontends.numpy as lnp
        return lnp.random.default_rng(7).random((3, 4), dtype="float32")
    def torch(torch):
        import lazyx.frontends.torch as lt
        torch.manual_seed(7)
        return torch.rand(3, 4, device=lt.device)
    def tf(tf):
        # TF's type-based dispatch cannot see a call with no lazy argument: lazyx mirrors
        # tf.random's stateless API (as lnp.random mirrors numpy.random)
        import lazyx.frontends.tf as ltf
        return ltf.random.stateless_uniform([3, 4], seed=[7, 0])
