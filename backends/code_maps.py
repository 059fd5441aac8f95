"""How close the process is to the kernel's limit on memory mappings (Linux).

XLA:CPU maps each compiled kernel's code and data as separate regions, a few hundred per large
program (EfficientNetB0's training step: about 300). Linux caps a process at
`vm.max_map_count` regions (65,530 by default); past it, LLVM cannot map the next program's
code and aborts the whole process ("Unable to allocate section memory"), an error no caller
can catch. The runtime asks `short()` before each compile and sheds half of its compiled
programs when mappings run short (the freed executables unmap their code).
"""
import os

CHECK_EVERY = 8  # compiles between two reads: a large program maps ~300 regions, far below
SHARE = 0.5      # of vm.max_map_count the process may use before shedding

_state = {"limit": None, "since_check": CHECK_EVERY}


def limit():
    """vm.max_map_count, or None where there is no such limit to read."""
    if _state["limit"] is None:
        try:
            with open("/proc/sys/vm/max_map_count") as f:
                _state["limit"] = int(f.read())
        except (OSError, ValueError):
            _state["limit"] = 0
    return _state["limit"] or None


def mapped_regions():
    """The process's current number of memory mappings (None off Linux)."""
    try:
        with open("/proc/self/maps", "rb") as f:
            return f.read().count(b"\n")
    except OSError:
        return None


def short():
    """True when the process uses more than SHARE of its mappings (read every CHECK_EVERY
    calls: reading /proc/self/maps costs ~1 ms per 1,000 regions)."""
    _state["since_check"] += 1
    if _state["since_check"] < CHECK_EVERY:
        return False
    _state["since_check"] = 0
    cap = limit()
    regions = mapped_regions() if cap else None
    return regions is not None and regions > SHARE * cap
