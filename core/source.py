"""Finds the user's source line behind an operation or a sync.

Walks up the Python stack to the first frame that belongs neither to lazyx nor to a
framework's own code, so that IR dumps and sync reports point at the line a person wrote.
The verdict per file name is cached, which keeps the walk cheap enough to run per node.
"""
import importlib.util
import os
import sys
import sysconfig
import threading
import warnings

from . import config

_LAZYX_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_FRAMEWORKS = ("torch", "numpy", "tensorflow", "keras", "tf_keras", "jax", "jaxlib", "ml_dtypes",
               "_pytest", "pluggy", "hypothesis")
_STDLIB = sysconfig.get_paths().get("stdlib", "\0") + os.sep
_verdicts = {}
_framework_dirs = None


def _framework_roots():
    """Install folders of the frameworks, found without importing them (a user's own folder
    that happens to be called numpy/ or torch/ is not framework code)."""
    global _framework_dirs
    if _framework_dirs is None:
        roots = []
        for name in _FRAMEWORKS:
            try:
                spec = importlib.util.find_spec(name)
            except (ImportError, ValueError):
                spec = None
            for location in (spec and spec.submodule_search_locations) or ():
                roots.append(os.path.abspath(location) + os.sep)
        _framework_dirs = tuple(roots)
    return _framework_dirs

ENABLED = os.environ.get("LAZYX_SOURCE_LINES", "1") != "0"


def is_internal(filename):
    """Whether a file belongs to lazyx, a framework or the standard library."""
    return _is_internal(filename)


def _is_internal(filename):
    verdict = _verdicts.get(filename)
    if verdict is None:
        path = os.path.abspath(filename) if not filename.startswith("<") else filename
        verdict = (path.startswith(_LAZYX_DIR) and os.sep + "tests" + os.sep not in path[len(_LAZYX_DIR) - 1:]) \
            or path.startswith(_STDLIB) \
            or path.startswith(_framework_roots()) \
            or filename.startswith("<frozen")
        _verdicts[filename] = verdict
    return verdict


class _OpLine(threading.local):
    """The user line of the frontend op now running in this thread (see `op_line`)."""
    line = None
    depth = 0  # nested frontend ops inside it (a decomposition calling public ops)


_NATIVE = config.native()
# core/_native_lines.c keeps the same two per-thread fields in C (a threading.local's
# attribute access cost 0.25 us of every traced op)
CURRENT = _OpLine() if _NATIVE is None else _NATIVE.ThreadLines()


class op_line:
    """`with source.OP_LINE:` around a frontend op: the user's line is found once for the op,
    and everything that asks for it while the op runs -- the 2-20 nodes its lowering makes, a
    sync or fallback it causes -- gets that answer instead of walking the same frames again.
    Nested ops keep the outermost line."""
    __slots__ = ()

    def __enter__(self):
        current = CURRENT
        if not current.depth:
            current.line = user_line(2)
        current.depth += 1

    def __exit__(self, *exc):
        CURRENT.depth -= 1


# stateless: one instance serves every `with` (core/_native_lines.c's does the same in C)
OP_LINE = op_line() if _NATIVE is None else _NATIVE.OpLine(globals())


def user_line(depth=2):
    """(filename, lineno) of the nearest user frame, or None when capture is off or none exists."""
    if not ENABLED:
        return None
    current = CURRENT
    if current.depth:  # inside a frontend op: its line was found as it began
        return current.line
    try:
        frame = sys._getframe(depth)
    except ValueError:
        return None
    while frame is not None:
        filename = frame.f_code.co_filename
        if not _is_internal(filename):
            return (filename, frame.f_lineno)
        frame = frame.f_back
    return None


def warn(message, category, source):
    """warnings.warn at the user's line `source` (user_line's answer): what the user reads is
    their own line, not lazyx's code that noticed (a fixed stacklevel lands inside whichever
    frontend or framework function happened to call). Without a user line, at the caller."""
    if source is None:
        warnings.warn(message, category, stacklevel=4)  # (the caller of the function that warns)
        return
    filename, lineno = source
    module = os.path.splitext(os.path.basename(filename))[0] or "<unknown>"
    warnings.warn_explicit(message, category, filename, lineno, module=module)


def format_line(source):
    if not source:
        return "<unknown>"
    filename, lineno = source
    try:
        relative = os.path.relpath(filename)
        if not relative.startswith(os.pardir + os.sep):  # outside the working folder: keep it whole
            filename = relative
    except ValueError:
        pass
    return f"{filename}:{lineno}"



def requester(frameworks, skip=(), depth=2):
    """Who asked for a conversion: None when it is the user's own code (an observation), else
    "module.function" of the framework code that asked (a silent eager turn, see DESIGN.md
    principle 9). Frames of lazyx itself and of the `skip` folders (a framework's dispatch
    plumbing, which only forwards the call) are passed over; `frameworks` are the top-level
    package names whose code counts as framework code (the standard library and NumPy do
    not: `logging` formatting a value or `np.testing` reading it is the user's request)."""
    try:
        frame = sys._getframe(depth)
    except ValueError:
        return None
    kinds = _file_kinds.get((frameworks, skip))
    if kinds is None:
        kinds = _file_kinds[(frameworks, skip)] = {}
    while frame is not None:
        filename = frame.f_code.co_filename
        verdict = kinds.get(filename)
        if verdict is None:
            verdict = kinds[filename] = _file_kind(filename, frameworks, skip)
        if verdict is not _PASSED:
            if verdict is _USER:
                return None
            code = frame.f_code
            return f"{frame.f_globals.get('__name__', '?')}.{getattr(code, 'co_qualname', code.co_name)}"
        frame = frame.f_back
    return None


# What a file is to `requester`: passed over (lazyx, dispatch plumbing), the user's, or a
# framework's. Memoized per (frameworks, skip), then per file: every .item() of every step
# asks, for each frame up to the user's (one tuple hashed per question, not one per frame).
_PASSED, _USER, _FRAMEWORK = range(3)
_file_kinds = {}  # (frameworks, skip) -> {co_filename: kind}


def _file_kind(co_filename, frameworks, skip):
    filename = os.path.abspath(co_filename)
    lazyx_own = filename.startswith(_LAZYX_DIR) and \
        os.sep + "tests" + os.sep not in filename[len(_LAZYX_DIR) - 1:]
    if lazyx_own or any(part in filename for part in skip):
        return _PASSED
    return _FRAMEWORK if filename.startswith(_package_roots(frameworks)) else _USER


_roots_by_names = {}


def _package_roots(names):
    roots = _roots_by_names.get(names)
    if roots is None:
        found = []
        for name in names:
            try:
                spec = importlib.util.find_spec(name)
            except (ImportError, ValueError):
                spec = None
            found.extend(os.path.abspath(p) + os.sep
                         for p in (spec and spec.submodule_search_locations) or ())
        roots = _roots_by_names[names] = tuple(found)
    return roots
