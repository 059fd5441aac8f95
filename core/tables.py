"""Tables that refuse a second entry (DESIGN.md principle 12).

Every registry in lazyx -- the op set, the backends' lowering tables, the autodiff rules, each
frontend's lowering table -- is a `Table`: a dict whose keys are set once. A second entry for
a key is a mistake that a plain dict hides (the later one silently wins, and which one that is
depends on import order), so it raises `DuplicateEntry` naming the file and line of both.
"""
import os
import sys
import types

_HERE = os.path.dirname(os.path.abspath(__file__))


class DuplicateEntry(KeyError):
    """A table got a second entry for a key it already holds."""

    def __str__(self):  # KeyError would print the message as a quoted repr
        return self.args[0]


def caller(depth=1):
    """'file:line' of the frame `depth` levels above the caller of this function."""
    frame = sys._getframe(depth + 1)
    path = frame.f_code.co_filename
    root = os.path.dirname(_HERE)  # paths inside the package are shown relative to it
    if path.startswith(root + os.sep):
        path = os.path.relpath(path, os.path.dirname(root))
    return f"{path}:{frame.f_lineno}"


class Table(dict):
    """A dict whose keys are set once, remembering where each entry came from.

    `table[key] = value` and `table.add(key, value, where)` raise DuplicateEntry for a key
    already present; `update` adds each entry the same way. Reading is a plain dict's.
    """

    def __init__(self, name, entries=(), where=None):
        super().__init__()
        self.name = name
        self.where = {}  # key -> "file:line" of its registration
        self.update(entries, where=where or caller())

    def add(self, key, value, where=None):
        where = where or caller()
        if dict.__contains__(self, key):
            raise DuplicateEntry(f"{self.name}: a second entry for {_show(key)} at {where}; "
                                 f"the first is at {self.where[key]}")
        dict.__setitem__(self, key, value)
        self.where[key] = where
        return value

    def __setitem__(self, key, value):
        self.add(key, value, caller())

    def update(self, entries=(), where=None, **kwargs):
        where = where or caller()
        if isinstance(entries, Table):  # keep the places the other table recorded
            for key, value in entries.items():
                self.add(key, value, entries.where.get(key, where))
        else:
            for key, value in dict(entries).items():
                self.add(key, value, where)
        for key, value in kwargs.items():
            self.add(key, value, where)

    def register(self, *keys):
        """A decorator: the function becomes the entry of each key (the decorator's line is
        the place an error names)."""
        where = caller()

        def register(fn):
            for key in keys:
                self.add(key, fn, where)
            return fn
        return register

    def setdefault(self, key, value=None):
        if not dict.__contains__(self, key):
            self.add(key, value, caller())
        return self[key]

    def __ior__(self, other):
        self.update(other, where=caller())
        return self


def _show(key):
    if isinstance(key, str):
        return repr(key)
    if isinstance(key, (types.FunctionType, types.BuiltinFunctionType)):
        return f"{key.__module__}.{key.__qualname__}"  # a function: its name, not its address
    return str(key)
