"""The objects a process holds once a frontend is imported, kept out of the cyclic collector's
full collections.

Importing a framework leaves hundreds of thousands of objects tracked by Python's cyclic
collector -- its modules, classes, functions and their dicts (TF, Keras and jax together:
about 430,000) -- which live as long as the process. A full collection walks every one of them:
166 ms in a TF process. The first step of a lazy program compiles, and lowering and compiling
leave enough new long-lived objects (jax's and MLIR's caches) to set a full collection off
there: it was 166 of the 448 ms of TF's first W1 step (benchmarks in docs/bench.md). So once a
frontend is imported, every object that exists then is frozen (gc.freeze): moved to the
collector's permanent generation, which no collection walks.

Freezing changes nothing for reference counting: a frozen object is still freed the moment
its last reference goes. Only a reference cycle made wholly of objects that existed at the
import is never collected -- an import's own objects, or anything the program made before
importing lazyx. Objects made after it (a model, its data, every traced step) are collected
as before. LAZYX_GC_FREEZE=0 turns this off.
"""
import gc

from . import config


def freeze_imported():
    """Freeze every object the collector tracks now (a frontend's import is done)."""
    if config.gc_freeze():
        gc.freeze()
