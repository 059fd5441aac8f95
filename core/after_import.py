"""Run code once a module is imported, without importing it: at once if it already is, else
when some later import loads it. Frontends use it to register with optional libraries (an
einops backend for lazy values) that lazyx does not depend on.

One meta path finder serves every waiting name: two finders of their own for one module
(each frontend had one for einops) hide each other, since the first to answer loads it.
"""
import importlib.util
import sys

_WAITING = {}  # module name -> callbacks to run with the module once it has executed


def after_import(name, callback):
    """callback(module) once `name` is imported (now, if it already is)."""
    module = sys.modules.get(name)
    if module is not None:
        callback(module)
        return
    _WAITING.setdefault(name, []).append(callback)
    if _Finder not in sys.meta_path:
        sys.meta_path.insert(0, _Finder)


class _Finder:
    """Finds nothing itself: the finder that would load a waiting module loads it (asked
    through importlib.util.find_spec, once this name no longer waits, so it does not ask us
    again), and the callbacks run after the module's code."""

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        callbacks = _WAITING.pop(name, None)
        if callbacks is None:
            return None
        if not _WAITING:
            sys.meta_path.remove(cls)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            for callback in callbacks:
                callback(module)
        spec.loader.exec_module = exec_module
        return spec
