"""The base of what a lazy cut caches when it compiles more programs later, in a background
thread, while its steps go on running the program compiled first: a loss run ahead of the
rest (early_results.Splitting), unchanged literals baked (baked_literals.Baking).

Such a wrapper is a cache entry like the executable it wraps, `single` (its `program`,
`aliases`, `nbytes`; any other attribute is read through to `single`). Its thread is not a
daemon (backends/tiered.py: a daemon thread inside XLA's compiler at interpreter shutdown
aborts the process), so a script that ends right after starting one waits for the compile
at exit."""
import threading
import weakref


class CompilingLater:
    __slots__ = ("single", "program", "aliases", "nbytes", "_thread", "__weakref__")

    def __init__(self, single):
        self.single = single  # the program compiled first, run until the others are ready
        self.program = single.program
        self.aliases = []
        self.nbytes = getattr(single, "nbytes", 0)
        self._thread = None

    def __getattr__(self, name):  # (slots are all set in __init__: no recursion)
        return getattr(self.single, name)

    def compiling(self):
        """Whether the later programs are not compiled yet (nor given up on)."""
        raise NotImplementedError

    def start(self, target, args, name):
        """Run `target(*args)` (the later compile) in a background thread."""
        self._thread = threading.Thread(target=target, args=args, name=name, daemon=False)
        _STARTED.add(self)
        self._thread.start()

    def join(self, timeout=None):
        """Wait until the later compile has finished, where it has started."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)


_STARTED = weakref.WeakSet()  # wrappers whose later compile has started


def join_all(kind=CompilingLater):
    """Wait for every `kind` of wrapper (by default every kind) still compiling (tests that
    count compiles, a benchmark's steady state); True if one was."""
    compiling = False
    for wrapper in list(_STARTED):
        if isinstance(wrapper, kind):
            compiling = compiling or wrapper.compiling()
            wrapper.join()
    return compiling
