"""Settings read from the environment, in one place so the docs and the code agree."""
import os

BACKENDS = ("xla", "reference")


def backend_name():
    """LAZYX_BACKEND: which backend runs graphs (default xla)."""
    name = os.environ.get("LAZYX_BACKEND", "xla").strip().lower() or "xla"
    if name not in BACKENDS:
        raise ValueError(f"LAZYX_BACKEND={name!r} is not a lazyx backend; valid choices: "
                         f"{', '.join(BACKENDS)}")
    return name


def native():
    """core/_native.c (the C tracing core), or None: LAZYX_NATIVE=0 turns it off, and an
    install without a C compiler has none (core/ir.py and core/source.py then do its work)."""
    if os.environ.get("LAZYX_NATIVE", "1") == "0":
        return None
    try:
        from . import _native
    except ImportError:
        return None
    return _native


_POSIX = os.name == "posix"


def _env(name):
    """os.environ.get(name), cheaply where it can be: on POSIX, CPython keeps os.environ's
    values in a dict of bytes (`_data`), current after every os.environ write (monkeypatch
    included). os.environ.get encodes the name and decodes the value through Python code:
    1.3 us, against 0.4 here, paid by every barrier (LAZYX_NODE_CAP), a few per cent of a
    replayed tiny step. (Read at each call: code that replaces os.environ is still seen.)"""
    data = getattr(os.environ, "_data", None)
    if not _POSIX or type(data) is not dict:
        return os.environ.get(name)
    value = data.get(name.encode())
    return None if value is None else os.fsdecode(value)


def _int(name, default):
    raw = _env(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} must be an integer") from None


# Size suffixes for the byte settings. The docs state their defaults as "2 GiB", and "2G" is
# how a size is written elsewhere (docker, java's -Xmx): a bare K/M/G/T is binary, like those.
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40,
          "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
          "kb": 10 ** 3, "mb": 10 ** 6, "gb": 10 ** 9, "tb": 10 ** 12}


def _switch(name, default):
    """A yes/no variable: unset gives `default`; empty, 0, false and False mean no."""
    raw = os.environ.get(name)
    return default if raw is None else raw not in ("", "0", "false", "False")


def _bytes(name, default):
    """A byte count: an integer, or a number with a unit (`512M`, `2GiB`, `1.5 GB`)."""
    raw = _env(name)
    if raw is None or raw.strip() == "":
        return default
    text = raw.strip().lower()
    number = text.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = _UNITS.get(text[len(number):])
    try:  # a plain count stays an int: exact past 2**53
        return int(number) if unit == 1 else int(float(number) * unit)
    except (TypeError, ValueError, OverflowError):  # no such unit; not a number; nan, inf
        raise ValueError(f"{name}={raw!r} must be a number of bytes: an integer, or a number "
                         f"with a unit (512M, 2GiB, 1.5GB)") from None


def cache_size():
    """LAZYX_CACHE_SIZE: compiled programs kept (least recently used go first)."""
    return max(1, _int("LAZYX_CACHE_SIZE", 1024))


def cache_bytes():
    """LAZYX_CACHE_BYTES: memory the kept compiled programs may hold, by the backend's
    estimate (least recently used go first). 2 GiB: room for a laptop's other work."""
    return max(1, _bytes("LAZYX_CACHE_BYTES", 2 << 30))


def node_cap():
    """LAZYX_NODE_CAP: pending nodes traced before an automatic cut."""
    return max(1, _int("LAZYX_NODE_CAP", 100_000))


def loop_cut():
    """LAZYX_LOOP_CUT: pending nodes after which a graph that one loop made is cut, at the same
    place in the loop's body each time (runtime._at_node_mark); 0 turns this off."""
    return max(0, _int("LAZYX_LOOP_CUT", 5_000))


def slow_compile_seconds():
    """LAZYX_SLOW_COMPILE: seconds a compile runs before a warning says why (0: never)."""
    raw = _env("LAZYX_SLOW_COMPILE")
    if raw is None or raw == "":
        return 10.0
    try:
        return float(raw)
    except ValueError:
        raise ValueError(f"LAZYX_SLOW_COMPILE={raw!r} must be a number of seconds") from None


def debug():
    """LAZYX_DEBUG=1: explain recompiles and syncs on stderr as they happen."""
    return _switch("LAZYX_DEBUG", False)


def dump_dir():
    """LAZYX_DUMP_DIR: where every compiled graph is saved (unset: nowhere)."""
    return os.environ.get("LAZYX_DUMP_DIR") or None


def _physical_memory():
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return 1 << 40


def max_bytes():
    """LAZYX_MAX_BYTES: the largest single value an op may make (default: this machine's
    physical memory); a bigger request fails at the call, before anything is recorded.
    0 turns the check off."""
    return max(0, _bytes("LAZYX_MAX_BYTES", _physical_memory()))


def check_indices():
    """LAZYX_CHECK_INDICES: `host` (default) checks indices and integer divisors whose values
    already exist (host numbers, uploaded or finished data) at the call; `off` checks none."""
    mode = os.environ.get("LAZYX_CHECK_INDICES", "host").strip().lower() or "host"
    if mode not in ("host", "off"):
        raise ValueError(f"LAZYX_CHECK_INDICES={mode!r}; valid choices: host, off")
    return mode


def cache_dir():
    """LAZYX_CACHE_DIR: where compiled executables persist across processes. Unset: the user's
    cache directory ($XDG_CACHE_HOME/lazyx, else ~/.cache/lazyx); set but empty: no disk cache."""
    raw = os.environ.get("LAZYX_CACHE_DIR")
    if raw is not None:
        return os.path.abspath(os.path.expanduser(raw)) if raw.strip() else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "lazyx")


def cache_dir_bytes():
    """LAZYX_CACHE_DIR_BYTES: size bound of the disk cache; least recently used entries go
    first."""
    return max(1, _bytes("LAZYX_CACHE_DIR_BYTES", 2 << 30))


def cache_preload():
    """LAZYX_CACHE_PRELOAD: how many of the disk cache's most recently used executables a new
    process loads and runs once in the background (backends/preload.py); 0 turns it off, and
    also the background set-up of XLA:CPU's product kernels a process with nothing to preload
    does instead."""
    return max(0, _int("LAZYX_CACHE_PRELOAD", 4))


def scalars_first():
    """LAZYX_SCALARS_FIRST=0: never run a repeated cut's scalar results (a loss) as a program
    of their own ahead of the rest (core/early_results.py); on by default."""
    return _switch("LAZYX_SCALARS_FIRST", True)


def gc_freeze():
    """LAZYX_GC_FREEZE=0: leave the objects that exist when a frontend has been imported to
    the cyclic collector's full collections (core/long_lived.py); on by default."""
    return _switch("LAZYX_GC_FREEZE", True)


def bake_literals():
    """LAZYX_BAKE_LITERALS=0: never compile a repeated cut again with its unchanged Python
    numbers as constants (core/baked_literals.py); on by default."""
    return _switch("LAZYX_BAKE_LITERALS", True)


def tiered():
    """LAZYX_TIERED=1: run a new graph on the reference interpreter while XLA compiles it."""
    return _switch("LAZYX_TIERED", False)
