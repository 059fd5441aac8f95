"""The lazy array object: a LazyHandle plus NumPy's observation protocols.

Everything that reads values (``__array__``, ``item``, ``float``, ``repr``, ``tolist``) syncs
through the runtime with the cause it stands for; everything else (shape, dtype, ndim, size,
len) is known at trace time and never syncs. Operators and methods are attached by
``_methods.py`` so that this file stays free of the op tables.
"""
import os
import sys
import warnings

import numpy as np

from ...core import dtypes as dt
from ...core import runtime
from ...core.split_steps import observed
from ...core.symbolic import plain

_NP_DTYPES = {}


def np_dtype(ir_dtype):
    """The numpy dtype object for an IR dtype name (cached: it sits on the hot path)."""
    d = _NP_DTYPES.get(ir_dtype)
    if d is None:
        d = _NP_DTYPES[ir_dtype] = dt.to_numpy(ir_dtype)
    return d


class Device:
    """The one device lazy arrays live on (the active backend's, behind the runtime)."""
    __slots__ = ()

    def __repr__(self):
        return "Device('lazyx')"

    def __eq__(self, other):
        return isinstance(other, Device) or other == "lazyx"

    def __hash__(self):
        return hash("lazyx")


DEVICE = Device()


class LazyArray:
    """A NumPy-like array whose operations are recorded into lazyx's IR instead of running."""
    __slots__ = ("__lazyx_handle__", "__weakref__")
    __hash__ = None  # __eq__ is element-wise; a 0-d array hashes as a scalar (_methods.py)
    __array_priority__ = 100

    def __init__(self, node, *args, **kwargs):
        # (wrap below makes the same object in C: keep the two alike)
        if type(self) is not LazyArray and hasattr(self, "__lazyx_handle__"):
            # a subclass whose __new__ made it as a view, `lnp.asarray(a).view(cls)` (the
            # ndarray-subclass recipe): Python then calls __init__ with __new__'s arguments,
            # which ndarray's __init__ ignores
            return
        if args or kwargs:
            raise TypeError(f"LazyArray.__init__() takes 2 positional arguments but "
                            f"{2 + len(args)} were given")
        self.__lazyx_handle__ = runtime.LazyHandle(node)

    # ------------------------------------------------------------ static facts (no sync)
    @property
    def _node(self):
        return self.__lazyx_handle__.node

    @property
    def shape(self):
        return self.__lazyx_handle__.node.shape

    @property
    def dtype(self):
        return np_dtype(self.__lazyx_handle__.node.dtype)

    @property
    def ndim(self):
        return len(self.__lazyx_handle__.node.shape)

    @property
    def size(self):
        return self.__lazyx_handle__.node.size

    @property
    def itemsize(self):
        return self.dtype.itemsize

    # (`base`, NumPy's view base, is _views.base: installed by _methods.py)

    @property
    def nbytes(self):
        return self.size * self.dtype.itemsize

    @property
    def device(self):
        return DEVICE

    def to_device(self, device, /, *, stream=None):
        if device != DEVICE:
            raise ValueError(f"lazyx arrays live on {DEVICE!r}; cannot move to {device!r}")
        return self

    def __array_namespace__(self, *, api_version=None):
        if api_version not in (None, "2021.12", "2022.12", "2023.12"):
            raise ValueError(f"lazyx.frontends.numpy implements the 2023.12 Array API, "
                             f"not {api_version!r}")
        from .. import numpy as namespace
        return namespace

    def __len__(self):
        # The length is a static fact: it never syncs.
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    # ------------------------------------------------------------ observation (syncs)
    def _host(self, cause, source=None):
        if cause != "fallback":
            inside, frame = _library_caller()
            if inside is not None:  # a library's own code reads the value: not the user
                if _first_read_in(frame):  # (np.mean of a list reads each element twice)
                    runtime.fallback(inside, inside.partition(".")[0], read=True)
                cause = "fallback"
                if self.__lazyx_handle__.pending:
                    _read_siblings(frame, cause)
        # (the user's line is looked up by to_host only when the value is pending: a read of
        # data needs none)
        host = runtime.to_host(self.__lazyx_handle__, cause=cause, source=source)
        if not host.flags.writeable:  # XLA may hand out a read-only view of its buffer
            host = host.copy()
        return host

    def __array__(self, dtype=None, copy=None):
        if copy is False:
            raise ValueError("lazyx: a lazy array lives on its backend's device; it cannot "
                             "be exposed to NumPy without a copy (use copy=None or True)")
        host = self._host("convert")
        return host if dtype is None else host.astype(dtype, copy=False)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        # an observation: the host copy is what DLPack consumers get (CPU, kDLCPU = 1)
        host = self._host("convert")
        if max_version is None:
            return host.__dlpack__()
        return host.__dlpack__(max_version=max_version, dl_device=dl_device, copy=copy)

    def __dlpack_device__(self):
        return (1, 0)

    def numpy(self):
        return self._host("convert")

    def tolist(self):
        return self._host("convert").tolist()

    def tobytes(self, order="C"):
        return self._host("convert").tobytes(order)

    def tofile(self, fid, sep="", format="%s"):  # noqa: A002 - NumPy's name
        return self._host("convert").tofile(fid, sep, format)

    def item(self, *args):
        if not args and self.size != 1:
            raise ValueError("can only convert an array of size 1 to a Python scalar")
        value = self._host("item").item(*args)
        return value if args else observed(value, self.__lazyx_handle__, number=True)

    def _scalar(self, kind):
        if self.ndim and (_SCALAR_NEEDS_0D or self.size != 1):
            raise TypeError(_SCALAR_MESSAGE)
        if self.ndim:
            warnings.warn("Conversion of an array with ndim > 0 to a scalar is deprecated, "
                          "and will error in future. Ensure you extract a single element "
                          "from your array before performing this operation. (Deprecated "
                          "NumPy 1.25.)", DeprecationWarning, stacklevel=3)
        value = kind(self._host("item").reshape(()).item())
        # (plain: __float__ and __int__ must return exactly a float or an int)
        return plain(observed(value, self.__lazyx_handle__))

    def __float__(self):
        return self._scalar(float)

    def __int__(self):
        return self._scalar(int)

    def __complex__(self):
        return self._scalar(complex)

    def __index__(self):
        if self.ndim or not dt.is_int(self._node.dtype):
            raise TypeError("only integer scalar arrays can be converted to a scalar index")
        return observed(int(self._host("item")), self.__lazyx_handle__)

    def __bool__(self):
        if self.size == 0:
            raise ValueError("The truth value of an empty array is ambiguous. Use "
                             "`array.size > 0` to check that an array is not empty.")
        if self.size != 1:  # decided from the shape alone, before any sync
            raise ValueError("The truth value of an array with more than one element is "
                             "ambiguous. Use a.any() or a.all()")
        return observed(bool(self._host("item").reshape(())), self.__lazyx_handle__)

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        if self.ndim == 1:
            # Element-wise Python loops want host scalars: one sync, not one graph per element
            # -- at the first element, not at iter() (np.iterable asks for an iterator only)
            return self._host_items()
        return (self[i] for i in range(self.shape[0]))

    def _host_items(self):
        yield from self._host("convert")

    def __repr__(self):
        text = repr(self._host("print"))
        if text.startswith("array("):
            text = "lazy_" + text.replace("\n      ", "\n           ")
        return text

    def __str__(self):
        return str(self._host("print"))

    def __format__(self, spec):
        if not spec and self.ndim:
            return str(self)
        # a 0-d value formats as NumPy's scalar does -- a reduction's or an element's result,
        # far more common than a 0-d array: f"{loss}" of a float32 mean is its float's
        # digits (0.15000000596046448), where str() gives the short form (0.15)
        return format(self._host("print").reshape(()).item() if self.size == 1
                      else self._host("print"), spec)

    def __copy__(self):
        return wrap(self._node)

    def __deepcopy__(self, memo):
        return wrap(self._node)

    def __reduce__(self):
        # pickled as NumPy's array of the value (an observation), as x.dumps() pickles it: a
        # file np.save wrote of an object array holding lazy arrays (a dict of weights) loads
        # without lazyx, as ndarrays (it loaded as lazy arrays, and not at all without lazyx).
        # Asked for by whoever pickles, never NumPy's own computing: not a fallback even
        # inside np.save (docs/numpy.md's table)
        return runtime.to_host(self.__lazyx_handle__, cause="convert").__reduce__()


def _numpy_scalar_rule():
    """(whether float() needs a 0-d array, the TypeError's wording) of the installed NumPy:
    its 1.25 deprecation of float(np.ones(1)) ended in a TypeError later."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            float(np.ones(1))
        except TypeError:
            needs_0d = True
        else:
            needs_0d = False
        try:
            float(np.ones(2))
        except TypeError as err:
            return needs_0d, str(err)
    return needs_0d, "only length-1 arrays can be converted to Python scalars"


_SCALAR_NEEDS_0D, _SCALAR_MESSAGE = _numpy_scalar_rule()
_LAZYX_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep
_NUMPY_DIR = os.path.dirname(os.path.abspath(np.__file__)) + os.sep
_NUMPY_TESTING = os.path.join(_NUMPY_DIR, "testing") + os.sep


_SCIPY_DIR = []  # [scipy's folder] once scipy is imported (lazyx never imports it)


def _scipy_dir():
    if not _SCIPY_DIR:
        scipy = sys.modules.get("scipy")
        if scipy is None or not getattr(scipy, "__file__", None):
            return None
        _SCIPY_DIR.append(os.path.dirname(os.path.abspath(scipy.__file__)) + os.sep)
    return _SCIPY_DIR[0]


def _scipy_name(frame):
    """scipy.signal.convolve for scipy/signal/_signaltools.py's convolve: the module path up
    to its first private part, the name the user called it by."""
    parts = frame.f_globals.get("__name__", "scipy").split(".")
    private = next((i for i, part in enumerate(parts) if part.startswith("_")), len(parts))
    return ".".join(parts[:private] + [getattr(frame.f_code, "co_qualname", frame.f_code.co_name)])


def _library_caller():
    """(`numpy.<function>` or `scipy.<module>.<function>`, its frame) when the code reading a
    lazy value (past lazyx's own frames) is NumPy's or scipy's Python code -- a function with
    no lowering that did not dispatch to lazyx (np.vectorize, np.piecewise, scipy.signal's and
    scipy.ndimage's filters, np.mean of a list, ...) -- else (None, None): the user (or a C
    entry point such as np.asarray called by the user) is observing it. Names the outermost
    such frame, the function the user called. (Called by LazyArray._host only.)"""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(_LAZYX_DIR):
        frame = frame.f_back
    name = outermost = None
    scipy_dir = _scipy_dir()
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename.startswith(_NUMPY_DIR):
            if filename.startswith(_NUMPY_TESTING):
                return None, None  # np.testing compares because the user asked: an observation
            name = "numpy." + getattr(frame.f_code, "co_qualname", frame.f_code.co_name)
        elif scipy_dir is not None and filename.startswith(scipy_dir):
            name = _scipy_name(frame)
        else:
            break
        outermost = frame
        frame = frame.f_back
    return name, outermost


_COUNTED = "__lazyx_read__"


def _first_read_in(frame):
    """Whether the library call running in `frame` reads a lazy value for the first time: a
    fallback is counted once per call, however many values it reads. The mark is a key of the
    frame's own locals dict, which lives and dies with that call's frame object (CPython
    reuses a finished frame's address, so an id would take the next call for the same)."""
    local = frame.f_locals
    if _COUNTED in local:
        return False
    local[_COUNTED] = True
    return True


_SIBLINGS_MAX = 100_000  # pending elements computed together, at most


def _read_siblings(frame, cause):
    """A library function given a list of arrays (`np.mean(losses)`, `np.argmax(scores)`):
    NumPy converts the list element by element, so each pending lazy element would be a cut
    of its own. Its pending lazy elements are computed together instead, in one cut."""
    code = frame.f_code
    if not code.co_argcount:
        return
    first = frame.f_locals.get(code.co_varnames[0])
    if type(first) not in (list, tuple):
        return
    handles, todo = [], [first]
    while todo and len(handles) < _SIBLINGS_MAX:
        for item in todo.pop():
            if type(item) in (list, tuple):
                todo.append(item)
            elif is_lazy(item) and item.__lazyx_handle__.pending:
                handles.append(item.__lazyx_handle__)
    if len(handles) > 1:
        runtime.sync(*handles, cause=cause, source=runtime.user_line(3), sharing=True)


def _py_wrap(node):
    """A new lazy array for an IR node."""
    return LazyArray(node)


# LazyArray(node) without a Python __init__ (core/_native_live.c), for every traced op
wrap = _py_wrap if runtime._NATIVE is None else \
    runtime._NATIVE.Wrapper(LazyArray, runtime.LazyHandle)


def is_lazy(x):
    return type(x) is LazyArray or isinstance(x, LazyArray)
