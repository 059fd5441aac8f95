"""The Array API's element-wise functions, each the NumPy ufunc of the same meaning."""
import numpy as np

from ...core import ops
from ._base import LazyArray, wrap
from ._entry import apply, array_ufunc
from ._fallback import run_eagerly
from ._promote import as_node, assign
from ._ufuncs import UFUNCS, fill
from . import _complex

# Array API name -> NumPy ufunc (names differ where NumPy's predate the standard).
ARRAY_API_UFUNCS = {
    "abs": np.absolute, "acos": np.arccos, "acosh": np.arccosh, "add": np.add,
    "asin": np.arcsin, "asinh": np.arcsinh, "atan": np.arctan, "atan2": np.arctan2,
    "atanh": np.arctanh, "bitwise_and": np.bitwise_and, "bitwise_left_shift": np.left_shift,
    "bitwise_invert": np.invert, "bitwise_or": np.bitwise_or,
    "bitwise_right_shift": np.right_shift, "bitwise_xor": np.bitwise_xor, "ceil": np.ceil,
    "conj": np.conjugate, "copysign": np.copysign, "cos": np.cos, "cosh": np.cosh,
    "divide": np.true_divide, "equal": np.equal, "exp": np.exp, "expm1": np.expm1,
    "floor": np.floor, "floor_divide": np.floor_divide, "greater": np.greater,
    "greater_equal": np.greater_equal, "hypot": np.hypot, "isfinite": np.isfinite,
    "isinf": np.isinf, "isnan": np.isnan, "less": np.less, "less_equal": np.less_equal,
    "log": np.log, "log1p": np.log1p, "log2": np.log2, "log10": np.log10,
    "logaddexp": np.logaddexp, "logical_and": np.logical_and, "logical_not": np.logical_not,
    "logical_or": np.logical_or, "logical_xor": np.logical_xor, "maximum": np.maximum,
    "minimum": np.minimum, "multiply": np.multiply, "negative": np.negative,
    "not_equal": np.not_equal, "positive": np.positive, "pow": np.power,
    "remainder": np.remainder, "sign": np.sign, "signbit": np.signbit, "sin": np.sin,
    "sinh": np.sinh, "square": np.square, "sqrt": np.sqrt, "subtract": np.subtract,
    "tan": np.tan, "tanh": np.tanh, "trunc": np.trunc, "nextafter": np.nextafter,
    "reciprocal": np.reciprocal,
    # NumPy spellings people also call through the namespace
    "absolute": np.absolute, "arccos": np.arccos, "arccosh": np.arccosh, "arcsin": np.arcsin,
    "arcsinh": np.arcsinh, "arctan": np.arctan, "arctan2": np.arctan2,
    "arctanh": np.arctanh, "true_divide": np.true_divide, "power": np.power,
    "mod": np.remainder, "fmod": np.fmod, "exp2": np.exp2, "cbrt": np.cbrt, "rint": np.rint,
    "fabs": np.fabs, "fmax": np.fmax, "fmin": np.fmin, "logaddexp2": np.logaddexp2,
    "deg2rad": np.deg2rad, "rad2deg": np.rad2deg, "degrees": np.degrees,
    "radians": np.radians, "invert": np.invert, "left_shift": np.left_shift,
    "right_shift": np.right_shift, "float_power": np.float_power, "heaviside": np.heaviside,
    "ldexp": np.ldexp, "divmod": np.divmod, "conjugate": np.conjugate,
}
# every other NumPy ufunc under its own name (lowered ones trace; isnat, for datetimes the IR
# does not hold, runs on NumPy as a counted fallback); matmul and vecdot have their own
# functions (_linalg.py), with the Array API's rules
ARRAY_API_UFUNCS.update({name: getattr(np, name) for name in dir(np)
                         if isinstance(getattr(np, name), np.ufunc) and
                         name not in ARRAY_API_UFUNCS and name not in ("matmul", "vecdot")})


def _make(name, ufunc):
    lowered = ufunc in UFUNCS

    def fn(*args, **kwargs):
        if not kwargs and lowered:
            return apply(ufunc, args)
        # out=, dtype=, casting=, where= as the ufunc takes them (NEP 13's body: a tuple out)
        out = kwargs.get("out")
        if out is None:
            kwargs.pop("out", None)
        elif not isinstance(out, tuple):
            kwargs["out"] = (out,)
        result = array_ufunc(ufunc, "__call__", args, kwargs)
        if result is NotImplemented:  # an operand of another library: NumPy dispatches
            return ufunc(*args, **kwargs)
        return result
    fn.__name__ = name
    fn.__qualname__ = name
    fn.__doc__ = f"Element-wise {name} (numpy.{ufunc.__name__} semantics), traced lazily."
    _ufunc_methods(fn, ufunc)
    return fn


_UFUNC_ATTRIBUTES = ("nin", "nout", "nargs", "ntypes", "types", "identity", "signature")


def _lazy_operand(x):
    """An array-like operand of a ufunc method as a lazy array, as the namespace's functions
    take it; a lazy array, a scalar or what the IR cannot hold (objects) as given."""
    if isinstance(x, LazyArray) or np.isscalar(x) or x is None:
        return x
    try:
        return wrap(as_node(x))
    except (TypeError, ValueError):
        return x


def _ufunc_methods(fn, ufunc):
    """`lnp.add.reduce`, `.accumulate`, `.outer`, `.reduceat` and `.at` (numpy-100 and the
    Python Data Science Handbook call them through the namespace): NumPy's own methods, with
    array-like operands made lazy first, so they trace through __array_ufunc__ as
    `np.add.reduce(lazy)` does. `.at` writes in place, so its target stays the caller's."""
    def method(name, lazy_operands):
        bound = getattr(ufunc, name)

        def call(*args, **kwargs):
            args = [_lazy_operand(a) if k < lazy_operands else a for k, a in enumerate(args)]
            return bound(*args, **kwargs)
        call.__name__ = call.__qualname__ = f"{fn.__name__}.{name}"
        call.__doc__ = f"numpy.{ufunc.__name__}.{name}, traced lazily."
        return call
    fn.reduce, fn.accumulate = method("reduce", 1), method("accumulate", 1)
    fn.reduceat, fn.outer = method("reduceat", 1), method("outer", 2)
    fn.at = ufunc.at
    for attribute in _UFUNC_ATTRIBUTES:
        setattr(fn, attribute, getattr(ufunc, attribute))


FUNCTIONS = {name: _make(name, ufunc) for name, ufunc in ARRAY_API_UFUNCS.items()}


def round(x, decimals=0, out=None):  # noqa: A001 - the Array API's name
    """Half to even; with decimals, NumPy's x * 10**d, rint, / 10**d."""
    node = as_node(x)
    if node.dtype in ("complex64", "complex128"):  # each part on its own, as NumPy does
        parts = [round(wrap(p), decimals)._node for p in (ops.real(node), ops.imag(node))]
        result = wrap(ops.complex_(*parts))
    elif decimals == 0:
        result = apply(np.rint, (x,))
        if node.dtype not in ("float16", "bfloat16", "float32", "float64"):
            result = wrap(node)  # rounding an integer array returns it unchanged
    else:
        if node.dtype in ("float16", "bfloat16", "float32", "float64"):
            scale = fill(10.0 ** abs(decimals), node.dtype, node.shape)
            if decimals > 0:
                result = wrap(ops.div(ops.round(ops.mul(node, scale)), scale))
            else:
                result = wrap(ops.mul(ops.round(ops.div(node, scale)), scale))
        else:
            return run_eagerly(np.round, "numpy.round", (x, decimals), {})
    return result if out is None else assign(out, result)


def real(x):
    return wrap(_complex.real(as_node(x)))


def imag(x):
    return wrap(_complex.imag(as_node(x)))


def angle(z, deg=False):
    return wrap(_complex.angle(as_node(z), deg))
