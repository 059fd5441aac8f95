"""Contractions as dot_general: matmul, dot, tensordot, vecdot, inner, outer, einsum, norm.

Every contraction here is one decomposition onto ``dot_general`` (batch axes first, then the
free axes of each side), written once; einsum contracts its operands pairwise left to right.
"""
import builtins
import math

import numpy as np

from ...core import dtypes as dt
from ...core import compose, ir, ops, runtime
from ._base import LazyArray, wrap
from ._fallback import run_eagerly
from ._entry import GUFUNCS, apply, register, traced
from ._manipulation import expand_dims, ravel
from ._promote import (as_lazy, as_node, assign, axes_tuple, axis_index, broadcast_node,
                       broadcast_shapes, dtype_key, nodes_result_dtype, result_ir_dtype, shape_of,
                       shape_text)
from ._reductions import sum as sum_
from ._ufuncs import fill

_MATMUL_SIG = "(n?,k),(k,m?)->(n?,m?)"


def _operands(a, b):
    dtype = result_ir_dtype(a, b)
    compute = "int64" if dtype == dt.BOOL else dtype
    return as_node(a, compute), as_node(b, compute), dtype


def _node_operands(a, b):
    """_operands for two IR nodes (the lowerings' view): no weak scalars left to promote."""
    dtype = nodes_result_dtype(a, b)
    compute = "int64" if dtype == dt.BOOL else dtype
    return (a if a.dtype == compute else ops.convert(a, dtype=compute),
            b if b.dtype == compute else ops.convert(b, dtype=compute), dtype)


def _finish_node(node, dtype):
    if dtype == dt.BOOL:
        node = ops.ne(node, fill(0, node.dtype, node.shape))
    return node


def _finish(node, dtype):
    return wrap(_finish_node(node, dtype))


@traced("x1", "x2")
def matmul(x1, x2, /):
    a, b, dtype = _node_operands(x1, x2)
    if dtype == "bfloat16":  # np.matmul has no bfloat16 loop: NumPy casts to its float32 one
        a, b, dtype = ops.convert(a, dtype="float32"), ops.convert(b, dtype="float32"), "float32"
    for i, n in enumerate((a, b)):
        if n.ndim == 0:
            raise ValueError(f"matmul: Input operand {i} does not have enough dimensions (has "
                             f"0, gufunc core with signature {_MATMUL_SIG} requires 1)")
    squeeze_a, squeeze_b = a.ndim == 1, b.ndim == 1
    if squeeze_a:
        a = ops.reshape(a, new_sizes=(1,) + a.shape)
    if squeeze_b:
        b = ops.reshape(b, new_sizes=b.shape + (1,))
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"matmul: Input operand 1 has a mismatch in its core dimension 0, "
                         f"with gufunc signature {_MATMUL_SIG} (size {b.shape[-2]} is "
                         f"different from {a.shape[-1]})")
    if b.ndim == 2 and a.ndim > 2:
        # activations (..., k) @ weights (k, n): one matrix product over the flattened rows,
        # as torch and TF record it -- not the weight broadcast to every batch entry, whose
        # gradient is a batched product summed over the batch
        out = compose.tensordot(a, b, (a.ndim - 1,), (0,))
        shape = a.shape[:-1] + (() if squeeze_b else (b.shape[-1],))
        return _finish_node(out if shape == out.shape else ops.reshape(out, new_sizes=shape),
                            dtype)
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = broadcast_node(a, batch + a.shape[-2:])
    b = broadcast_node(b, batch + b.shape[-2:])
    out = compose.batch_matmul(a, b)
    shape = batch + (() if squeeze_a else (a.shape[-2],)) + (() if squeeze_b else (b.shape[-1],))
    if shape != out.shape:
        out = ops.reshape(out, new_sizes=shape)
    return _finish_node(out, dtype)


def dot(a, b, out=None):
    runtime.maybe_cut()
    x, y, dtype = _operands(a, b)
    if x.ndim == 0 or y.ndim == 0:
        result = apply(np.multiply, (a, b))
    else:
        ya = 0 if y.ndim == 1 else y.ndim - 2
        if x.shape[-1] != y.shape[ya]:
            raise ValueError(f"shapes {shape_text(x.shape)} and {shape_text(y.shape)} not "
                             f"aligned: {x.shape[-1]} (dim {x.ndim - 1}) != {y.shape[ya]} "
                             f"(dim {ya})")
        result = _finish(ops.dot_general(x, y, contracting_dimensions=((x.ndim - 1,), (ya,))),
                         dtype)
    if out is not None:
        return assign(out, result)
    return result


def tensordot(a, b, /, axes=2):
    runtime.maybe_cut()
    x, y, dtype = _operands(a, b)
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if n < 0:
            raise ValueError("'axes' must be a non-negative integer")
        ax_a, ax_b = tuple(range(x.ndim - n, x.ndim)), tuple(range(n))
    else:
        ax_a, ax_b = axes
        ax_a = (ax_a,) if isinstance(ax_a, (int, np.integer)) else tuple(ax_a)
        ax_b = (ax_b,) if isinstance(ax_b, (int, np.integer)) else tuple(ax_b)
        if len(ax_a) != len(ax_b):
            raise ValueError("shape-mismatch for sum")
        ax_a = tuple(axis_index(i, x.ndim) for i in ax_a)
        ax_b = tuple(axis_index(i, y.ndim) for i in ax_b)
    if builtins.any(x.shape[i] != y.shape[j] for i, j in zip(ax_a, ax_b)) or \
            builtins.max(ax_a, default=-1) >= x.ndim or builtins.max(ax_b, default=-1) >= y.ndim:
        raise ValueError("shape-mismatch for sum")
    # the shared formulation (transpose, flatten, one matmul): the same graph as torch's and TF's
    return _finish(compose.tensordot(x, y, ax_a, ax_b), dtype)


@traced("x1", "x2")
def vecdot(x1, x2, /, *, axis=-1):
    a, b, dtype = _node_operands(x1, x2)
    shape = broadcast_shapes(a.shape, b.shape)
    ax = axis_index(axis, len(shape))
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("vecdot: inputs must have at least one dimension")
    k = ax - len(shape)  # the contracted axis never broadcasts (a gufunc core dimension)
    if k < -a.ndim or k < -b.ndim or a.shape[k] != b.shape[k]:
        raise ValueError(f"vecdot: x1 and x2 must have the same size along axis {axis} "
                         f"(got {a.shape} and {b.shape})")
    a, b = broadcast_node(a, shape), broadcast_node(b, shape)
    if dt.is_complex(dtype):  # the Array API's (and np.vecdot's) conj(x1) . x2
        a = ops.conj(a)
    prod = ops.and_(a, b) if dtype == dt.BOOL else ops.mul(a, b)
    return _finish_node(ops.reduce_sum(prod, axes=(ax,)), dtype)


def inner(a, b, /):
    x, y, dtype = _operands(a, b)
    if x.ndim == 0 or y.ndim == 0:
        return apply(np.multiply, (a, b))
    if x.shape[-1] != y.shape[-1]:
        raise ValueError(f"shapes {shape_text(x.shape)} and {shape_text(y.shape)} not aligned: "
                         f"{x.shape[-1]} (dim {x.ndim - 1}) != {y.shape[-1]} (dim {y.ndim - 1})")
    return _finish(ops.dot_general(x, y, contracting_dimensions=((x.ndim - 1,), (y.ndim - 1,))),
                   dtype)


def outer(a, b, out=None):
    x, y = ravel(a), ravel(b)
    result = apply(np.multiply, (x[:, None], y[None, :]))
    if out is not None:
        return assign(out, result)
    return result


# ---------------------------------------------------------------- einsum

_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _take_diagonals(node, term, operand):
    """A label repeated within one operand's term ('ii', 'iji') reads that operand's diagonal
    over those axes: (node, term) with each repeat gathered away, the label first."""
    while len(set(term)) != len(term):
        label = next(c for c in term if term.count(c) > 1)
        first = term.index(label)
        second = term.index(label, first + 1)
        n, m = node.shape[first], node.shape[second]
        if n != m:
            raise ValueError(f"dimensions in operand {operand} for collapsing index "
                             f"'{label}' don't match ({n} != {m})")
        node = _diagonal_first(node, first, second)
        term = label + "".join(term[k] for k in range(len(term)) if k not in (first, second))
    return node, term


def _parse_einsum(subscripts, ndims):
    subscripts = subscripts.replace(" ", "")
    if "->" in subscripts:
        inputs, output = subscripts.split("->")
    else:
        inputs, output = subscripts, None
    terms = inputs.split(",")
    if len(terms) != len(ndims):
        raise ValueError("more operands were provided than specified in the subscripts string"
                         if len(ndims) > len(terms) else
                         "fewer operands provided to einstein sum function than specified in "
                         "the subscripts string")
    unused = [c for c in _LETTERS if c not in subscripts]
    ell_rank = builtins.max([nd - len(t.replace("...", "")) for t, nd in zip(terms, ndims)
                             if "..." in t], default=0)
    ell = "".join(unused[:ell_rank])
    out_terms = []
    for t, nd in zip(terms, ndims):
        if "..." in t:
            k = nd - len(t.replace("...", ""))
            t = t.replace("...", ell[ell_rank - k:] if k else "")
        if len(t) != nd:
            raise ValueError(f"einstein sum subscripts string contains too many subscripts "
                             f"for operand {len(out_terms)}")
        out_terms.append(t)
    if output is None:
        counts = {}
        for t in out_terms:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        output = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    else:
        output = output.replace("...", ell)
    return out_terms, output


def _sum_out(node, term, keep):
    drop = tuple(i for i, c in enumerate(term) if c not in keep)
    if not drop:
        return node, term
    return ops.reduce_sum(node, axes=drop), "".join(c for c in term if c in keep)


def einsum(subscripts, *operands, out=None, dtype=None, order="K", casting="safe",
           optimize=False):
    output = subscripts.split("->")[1].replace("...", "") if isinstance(subscripts, str) and \
        "->" in subscripts else ""
    if not isinstance(subscripts, str) or len(set(output)) != len(output):
        # (a label twice in the output: NumPy's error)
        return run_eagerly(np.einsum, "numpy.einsum", (subscripts,) + operands,
                           {"out": out, "dtype": dtype, "optimize": optimize}
                           if out is not None else {"dtype": dtype, "optimize": optimize})
    runtime.maybe_cut()
    if dtype is not None:  # NumPy's iterator casts every operand to dtype under `casting`
        for i, o in enumerate(operands):
            src = dtype_key(o)  # (a Python number is weak: NumPy casts it as it likes)
            if isinstance(src, np.dtype) and not np.can_cast(src, dtype, casting=casting):
                raise TypeError(f"Iterator operand {i} dtype could not be cast from {src!r} to "
                                f"{np.dtype(dtype)!r} according to the rule '{casting}'")
    result_dtype = dtype and np.dtype(dtype).name or result_ir_dtype(*operands)
    compute = "int64" if result_dtype == dt.BOOL else result_ir_dtype(*operands)
    if dtype is not None:
        compute = np.dtype(dtype).name
    nodes = [as_node(o, compute) for o in operands]
    terms, output = _parse_einsum(subscripts, [n.ndim for n in nodes])
    nodes, terms = map(list, zip(*(_take_diagonals(n, t, k)
                                   for k, (n, t) in enumerate(zip(nodes, terms)))))
    sizes = {}
    for n, t in zip(nodes, terms):
        for c, d in zip(t, n.shape):
            if sizes.setdefault(c, d) != d:
                raise ValueError(f"einstein sum subscripts string included output subscript "
                                 f"'{c}' with sizes {sizes[c]} and {d} that do not match")
    acc, acc_term = nodes[0], terms[0]
    for i in range(1, len(nodes) + 1):
        later = output + "".join(terms[i + 1:]) if i < len(nodes) else output
        if i == len(nodes):
            acc, acc_term = _sum_out(acc, acc_term, later)
            break
        rhs, rhs_term = nodes[i], terms[i]
        acc, acc_term = _sum_out(acc, acc_term, later + rhs_term)
        rhs, rhs_term = _sum_out(rhs, rhs_term, later + acc_term)
        shared = [c for c in acc_term if c in rhs_term]
        batch = [c for c in shared if c in later]
        contract = [c for c in shared if c not in later]
        acc = ops.dot_general(acc, rhs,
                              contracting_dimensions=(tuple(acc_term.index(c) for c in contract),
                                                      tuple(rhs_term.index(c) for c in contract)),
                              batch_dimensions=(tuple(acc_term.index(c) for c in batch),
                                                tuple(rhs_term.index(c) for c in batch)))
        acc_term = "".join(batch) + "".join(c for c in acc_term if c not in shared) + \
            "".join(c for c in rhs_term if c not in shared)
    perm = tuple(acc_term.index(c) for c in output)
    if perm != tuple(range(len(perm))):
        acc = ops.transpose(acc, permutation=perm)
    result = _finish(acc, result_dtype) if result_dtype == dt.BOOL else wrap(acc)
    if out is not None:
        return assign(out, result)
    return result


# ---------------------------------------------------------------- norms and diagonals

def _abs(node):
    return ops.abs_(node)


def norm(x, ord=None, axis=None, keepdims=False):
    runtime.maybe_cut()
    node = as_node(x)
    if dt.is_complex(node.dtype):  # every norm lowered here is a norm of the magnitudes
        node = ops.abs_(node)
    if not dt.is_float(node.dtype):
        node = ops.convert(node, dtype="float64")
    if axis is None:
        if ord is None:
            flat = ops.reshape(node, new_sizes=(node.size,))
            out = ops.sqrt(ops.reduce_sum(ops.mul(flat, flat), axes=(0,)))
            if keepdims:
                out = ops.reshape(out, new_sizes=(1,) * node.ndim)
            return wrap(out)
        if node.ndim not in (1, 2):
            raise ValueError("Improper number of dimensions to norm.")
        axis = tuple(range(node.ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    axes = tuple(axis_index(a, node.ndim) for a in axes)
    if len(axes) == 1:
        out = _vector_norm(node, ord, axes)
    elif len(axes) == 2:
        if axes[0] == axes[1]:
            raise ValueError("Duplicate axes given.")
        out = _matrix_norm(x, node, ord, axes)
    else:
        raise ValueError("Improper number of dimensions to norm.")
    if keepdims:
        out = compose.keepdims(out, node.shape, axes)
    return wrap(out)


def _vector_norm(node, ord, axes):
    if ord is None or ord == 2:
        return ops.sqrt(ops.reduce_sum(ops.mul(node, node), axes=axes))
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    a = _abs(node)
    if ord == math.inf:
        return ops.reduce_max(a, axes=axes)
    if ord == -math.inf:
        return ops.reduce_min(a, axes=axes)
    if ord == 0:
        return ops.reduce_sum(ops.convert(ops.ne(node, fill(0, node.dtype, node.shape)),
                                          dtype=node.dtype), axes=axes)
    if ord == 1:
        return ops.reduce_sum(a, axes=axes)
    p = fill(ord, node.dtype, node.shape)
    total = ops.reduce_sum(ops.pow_(a, p), axes=axes)
    return ops.pow_(total, fill(1.0 / ord, node.dtype, total.shape))


def _matrix_norm(x, node, ord, axes):
    row, col = axes
    if ord in (None, "fro"):
        return ops.sqrt(ops.reduce_sum(ops.mul(node, node), axes=tuple(sorted(axes))))
    a = _abs(node)
    if ord in (1, -1):
        sums = ops.reduce_sum(a, axes=(row,))
        col_after = col - (1 if col > row else 0)
        return (ops.reduce_max if ord == 1 else ops.reduce_min)(sums, axes=(col_after,))
    if ord in (math.inf, -math.inf):
        sums = ops.reduce_sum(a, axes=(col,))
        row_after = row - (1 if row > col else 0)
        return (ops.reduce_max if ord > 0 else ops.reduce_min)(sums, axes=(row_after,))
    if ord in ("nuc", 2, -2):
        complex_input = x.dtype.kind == "c" if isinstance(x, LazyArray) else \
            np.iscomplexobj(x)
        if complex_input or node.dtype not in ("float32", "float64") or not node.size:
            # complex (the magnitudes' singular values are not the matrix's), half, empty
            return as_node(run_eagerly(np.linalg.norm, "numpy.linalg.norm", (x,),
                                       {"ord": ord, "axis": axes}))
        # from the singular values of each matrix (its two axes moved last)
        rest = tuple(k for k in range(node.ndim) if k not in axes)
        values = ops.svd(ops.transpose(node, permutation=rest + (row, col)),
                         compute_uv=False)[0]
        reduce = {2: ops.reduce_max, -2: ops.reduce_min}.get(ord, ops.reduce_sum)
        return reduce(values, axes=(values.ndim - 1,))
    raise ValueError("Invalid norm order for matrices.")


@traced("a")
def diagonal(a, offset=0, axis1=0, axis2=1):
    node = a
    i, j = axis_index(axis1, node.ndim), axis_index(axis2, node.ndim)
    if i == j:
        raise ValueError("axis1 and axis2 cannot be the same")
    out = _diagonal_first(node, i, j, offset)
    perm = tuple(range(1, out.ndim)) + (0,)
    return ops.transpose(out, permutation=perm) if out.ndim > 1 else out


def _diagonal_first(node, i, j, offset=0):
    """The diagonal of axes i and j (offset as np.diagonal's) as the first axis, the other
    axes after it in order: one gather of the (row, column) pairs."""
    rest = tuple(k for k in range(node.ndim) if k not in (i, j))
    node = ops.transpose(node, permutation=(i, j) + rest)
    rows, cols = node.shape[:2]
    start_r, start_c = (0, offset) if offset >= 0 else (-offset, 0)
    n = builtins.max(0, builtins.min(rows - start_r, cols - start_c))
    idx = np.stack([np.arange(n) + start_r, np.arange(n) + start_c], axis=-1)
    return ops.gather(node, runtime.from_host(idx.astype(np.int64)))


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    if len(shape_of(a)) < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    return sum_(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype, out=out)


def diag(v, k=0):
    node = as_node(v)
    if node.ndim == 2:
        return diagonal(v, k)
    if node.ndim != 1:
        raise ValueError("Input must be 1- or 2-d.")
    n = node.shape[0] + abs(k)
    rows = ops.iota(dtype="int64", shape=(n, n), dimension=0)
    cols = ops.iota(dtype="int64", shape=(n, n), dimension=1)
    on_diag = ops.eq(ops.add(rows, fill(k, "int64", (n, n))), cols)
    # Along the diagonal the value is v[row] for k >= 0 and v[column] for k < 0.
    padded = ops.pad(node, fill(0, node.dtype, ()), padding_config=((0, abs(k), 0),))
    values = ops.broadcast_in_dim(padded, shape=(n, n), broadcast_dimensions=(0 if k >= 0 else 1,))
    return wrap(ops.select(on_diag, values, fill(0, node.dtype, (n, n))))


def is_lazy(x):
    return isinstance(x, LazyArray)


__all__ = ["matmul", "dot", "tensordot", "vecdot", "inner", "outer", "einsum", "norm",
           "diagonal", "trace", "diag", "as_lazy", "axes_tuple"]


def convolve(a, v, mode="full"):
    """np.convolve: 1-d discrete convolution ('full', 'same' or 'valid')."""
    runtime.maybe_cut()
    x, w, dtype = _operands(a, v)
    if x.ndim > 1 or w.ndim > 1:
        raise ValueError("object too deep for desired array")
    x = ops.reshape(x, new_sizes=(x.size,)) if x.ndim == 0 else x
    w = ops.reshape(w, new_sizes=(w.size,)) if w.ndim == 0 else w
    if x.shape[0] == 0:
        raise ValueError("a cannot be empty")
    if w.shape[0] == 0:
        raise ValueError("v cannot be empty")
    if dt.is_complex(dtype):  # (a + ib) * (c + id): four real convolutions (XLA's are real)
        re, im = ops.real(x), ops.imag(x)
        wre, wim = ops.real(w), ops.imag(w)
        parts = [convolve(wrap(p), wrap(q), mode)._node
                 for p, q in ((re, wre), (im, wim), (re, wim), (im, wre))]
        return wrap(ops.complex_(ops.sub(parts[0], parts[1]), ops.add(parts[2], parts[3])))
    if w.shape[0] > x.shape[0]:
        x, w = w, x  # NumPy convolves the longer with the shorter
    n, k = x.shape[0], w.shape[0]
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"mode must be one of 'full', 'same', or 'valid' (got {mode!r})")
    if mode != "valid":
        zero = ir.constant(0, x.dtype)
        x = ops.pad(x, zero, padding_config=((k - 1, k - 1, 0),))
    out = compose.convolve_valid(x, w)
    if mode == "same":
        start = (k - 1) // 2
        out = ops.slice_(out, start_indices=(start,), limit_indices=(start + n,))
    return _finish(out, dtype)


# np.matmul / np.vecdot called on lazy arrays (NEP 13): the gufuncs' entries in the ufunc table

def _matmul_gufunc(a, b, dtype=None, where=True, casting="same_kind"):
    return matmul(a, b) if dtype is None else matmul(a, b).astype(dtype)


def _vecdot_gufunc(a, b, dtype=None, where=True, casting="same_kind"):
    return vecdot(a, b) if dtype is None else vecdot(a, b).astype(dtype)


def _matvec_gufunc(a, b, dtype=None, where=True, casting="same_kind"):
    """(..., m, n) x (..., n) -> (..., m), no conjugate (NumPy 2.2's np.matvec)."""
    out = matmul(a, expand_dims(b, -1))[..., 0]
    return out if dtype is None else out.astype(dtype)


def _vecmat_gufunc(a, b, dtype=None, where=True, casting="same_kind"):
    """(..., n) x (..., n, m) -> (..., m), with the vector conjugated (NumPy 2.2's np.vecmat)."""
    x = as_lazy(a)
    if x.dtype.kind == "c":
        x = apply(np.conjugate, (x,))
    out = matmul(expand_dims(x, -2), b)[..., 0, :]
    return out if dtype is None else out.astype(dtype)


register(GUFUNCS, np.matmul, _matmul_gufunc)
for _name, _fn in (("matvec", _matvec_gufunc), ("vecmat", _vecmat_gufunc)):
    if hasattr(np, _name):
        register(GUFUNCS, getattr(np, _name), _fn)
if hasattr(np, "vecdot"):
    register(GUFUNCS, np.vecdot, _vecdot_gufunc)
