"""np.histogram and np.histogram_bin_edges with a given range or given edges, lowered, by
NumPy's own algorithms: for equal bins, each value's bin by arithmetic, corrected against the
edges (NumPy's fast path, so the same bin for a value within an ulp of an edge) and summed as
np.bincount sums (weights in double); for given edges, counts from a sorted copy. The edges
are NumPy's (np.linspace in NumPy's bin dtype, on the host: they depend on the arguments
only). Without a range, the edges come from the data's min and max, and NumPy refuses
non-finite data there: that needs the values, so it stays NumPy's (a counted fallback)."""
import operator

import numpy as np

from ._base import LazyArray
from ._fallback import run_eagerly
from ._promote import as_lazy


def _outer_edges(range_):
    first, last = range_
    if first > last:
        raise ValueError("max must be larger than min in range parameter.")
    if not (np.isfinite(first) and np.isfinite(last)):
        raise ValueError(f"supplied range of [{first}, {last}] is not finite")
    if first == last:
        first, last = first - 0.5, last + 0.5
    return first, last


def _edges(x, bins, range_):
    """(host bin edges, number of equal bins or None, the range's two ends as given), NumPy's
    checks and errors; None when NumPy must decide (bins estimated by name, edges from the
    data, lazy edges)."""
    if isinstance(bins, (str, LazyArray)) or isinstance(range_, LazyArray):
        return None
    if np.ndim(bins) == 0:
        try:
            n = operator.index(bins)
        except TypeError as err:
            raise TypeError("`bins` must be an integer, a string, or an array") from err
        if n < 1:
            raise ValueError("`bins` must be positive, when an integer")
        if range_ is None:
            return None
        first, last = _outer_edges(range_)
        bin_type = np.result_type(first, last, x)
        if np.issubdtype(bin_type, np.integer):
            bin_type = np.result_type(bin_type, float)
        edges = np.linspace(first, last, n + 1, endpoint=True, dtype=bin_type)
        if np.any(edges[:-1] >= edges[1:]):
            raise ValueError(f"Too many bins for data range. Cannot create {n} finite-sized "
                             f"bins.")
        return edges, n, (first, last)
    if np.ndim(bins) == 1:
        edges = np.asarray(bins)
        if np.any(edges[:-1] > edges[1:]):
            raise ValueError("`bins` must increase monotonically, when an array")
        return edges, None, None
    raise ValueError("`bins` must be 1d, when an array")


def _equal_bins(x, w, edges, n, ends, ntype):
    """NumPy's fast path: value -> bin by arithmetic, corrected within an ulp of the edges. The
    range's ends are the numbers given (Python numbers: weak, as in NumPy's arithmetic)."""
    first, last = ends
    keep = (x >= first) & (x <= last)
    xs = x.astype(edges.dtype)
    index = (((xs - first) / (last - first)) * n).astype(np.int64)
    index = np.clip(np.where(index == n, index - 1, index), 0, n - 1)
    lazy_edges = as_lazy(edges)
    index = index - (xs < lazy_edges[index])
    index = index + ((xs >= lazy_edges[index + 1]) & (index != n - 1))
    index = np.where(keep, index, 0)
    # np.bincount: weights summed in double, then cast to the histogram's dtype
    counts = np.zeros(n, np.float64 if w is not None else np.int64)
    values = np.where(keep, 1, 0) if w is None else np.where(keep, w.astype(np.float64), 0.0)
    counts = as_lazy(counts)
    np.add.at(counts, index, values)
    return counts.astype(ntype)


def _given_edges(x, w, edges, ntype):
    """NumPy's path for given edges: counts (or weights) at or below each edge in a sorted
    copy, differenced."""
    order = None if w is None else np.argsort(x)
    sa = np.sort(x) if w is None else x[order]
    at = np.concatenate((np.searchsorted(sa, edges[:-1], "left"),
                         np.searchsorted(sa, edges[-1:], "right")))
    if w is None:
        return np.diff(at)
    cw = np.concatenate((as_lazy(np.zeros(1, ntype)), np.cumsum(w[order])))
    return np.diff(cw[at])


def histogram(a, bins=10, range=None, density=None, weights=None):  # noqa: A002 (NumPy's)
    x = as_lazy(a).reshape(-1)
    w = None if weights is None else as_lazy(weights).reshape(-1)
    found = None
    if x.dtype.kind != "c" and (w is None or (w.shape == x.shape and w.dtype.kind in "biuf")):
        found = _edges(x, bins, range)
    if found is None:
        return run_eagerly(np.histogram, "numpy.histogram", (a,), dict(
            bins=bins, range=range, density=density, weights=weights))
    edges, n, ends = found
    ntype = np.dtype(np.intp) if w is None else w.dtype
    counts = _equal_bins(x, w, edges, n, ends, ntype) if n is not None else \
        _given_edges(x, w, edges, ntype)
    if density:
        widths = np.diff(edges).astype(float)
        return counts / widths / np.sum(counts), as_lazy(edges)
    return counts, as_lazy(edges)


def histogram_bin_edges(a, bins=10, range=None, weights=None):  # noqa: A002 (NumPy's)
    x = as_lazy(a)
    found = None if x.dtype.kind == "c" else _edges(x, bins, range)
    if found is None:
        return run_eagerly(np.histogram_bin_edges, "numpy.histogram_bin_edges", (a,), dict(
            bins=bins, range=range, weights=weights))
    return as_lazy(found[0])


FUNCTIONS = {np.histogram: histogram, np.histogram_bin_edges: histogram_bin_edges}
