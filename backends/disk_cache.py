"""A compile cache on disk, shared by processes: a new process finds what an earlier one compiled.

One file per executable, named by its key: a digest of the program's content (leaves, every
instruction with its attributes and constants, the outputs) and of the context that changes
what the compiler makes of it (versions, platform, device, flags; the backend supplies that
part). `Program.key` is not used: it is built from process-local interned ids.

File layout: MAGIC | key (32 bytes) | payload length (8 bytes, little-endian) | blake2b-256 of
the payload | payload. A file that does not check out (truncated, overwritten, another
version's layout) is ignored with a warning and removed, so the next compile rewrites it.

Writers write a private temporary file and `os.replace` it into place, which is atomic on
POSIX and Windows: a reader sees the old file, the new one or none, never half of one, and two
processes storing the same entry at once simply both succeed. The folder is bounded in bytes;
a hit refreshes the file's mtime, and eviction removes the oldest mtimes first (LRU).
"""
import hashlib
import os
import struct
import threading
import time
import warnings

import numpy as np

from ..core import config

MAGIC = b"LAZYX-EXE 2\n"  # bump when the layout changes: old files then read as foreign
SUFFIX = ".lxc"
_HEADER = len(MAGIC) + 32 + 8 + 32
_STALE_TMP_SECONDS = 3600  # a temporary file this old belongs to a writer that died
_EVICTING = threading.Lock()  # eviction scans: one at a time per process


class Unkeyable(Exception):
    """A program attribute with no process-independent encoding: such a program is not cached
    on disk (never wrongly shared)."""


def _encode(value, out):
    """Append a typed, process-independent encoding of an attribute value to `out` (a list)."""
    kind = type(value)
    if value is None or kind is bool:
        out.append(f"{value!r};")
    elif kind is int:
        out.append(f"i{value};")
    elif kind is float:
        out.append(f"f{value.hex()};")  # exact; repr() would do, but hex states the intent
    elif kind is str:
        out.append(f"s{len(value)}:{value};")
    elif kind in (tuple, list):
        out.append(f"{'t' if kind is tuple else 'l'}{len(value)}(")
        for v in value:
            _encode(v, out)
        out.append(")")
    elif isinstance(value, np.generic):
        out.append(f"n{value.dtype.str}:{value.tobytes().hex()};")
    elif isinstance(value, np.dtype):
        out.append(f"d{value.str};")
    else:
        raise Unkeyable(f"attribute value of type {kind.__name__}")


def program_key(program, context):
    """32-byte digest of `program`'s content and the backend's `context` (bytes), or None when
    some attribute cannot be encoded independently of the process."""
    h = hashlib.blake2b(digest_size=32)
    h.update(context)
    try:
        parts = [f"L{len(program.leaves)}("]
        for leaf in program.leaves:
            _encode(tuple(leaf), parts)
        parts.append(")I(")
        h.update("".join(parts).encode())
        for op, attrs, ins, shape, dtype, const in program.instructions:
            parts = [f"{op}:"]
            _encode(tuple(sorted(attrs.items())), parts)
            _encode((ins, shape, dtype), parts)
            h.update("".join(parts).encode())
            if const is not None:
                const = np.ascontiguousarray(const)
                h.update(f"c{const.dtype.str}{const.shape}:".encode())
                h.update(const.tobytes())
        parts = [")O"]
        _encode(tuple(program.outputs), parts)
        h.update("".join(parts).encode())
    except Unkeyable:
        return None
    return h.digest()


class DiskCache:
    """Executables as bytes in `folder`, at most about `max_bytes` of them."""

    def __init__(self, folder, max_bytes):
        self.folder = folder
        self.max_bytes = max_bytes

    def path(self, key):
        return os.path.join(self.folder, key.hex() + SUFFIX)

    def get(self, key):
        """The payload stored under `key`, or None (missing, or corrupt: warned and removed)."""
        path = self.path(key)
        blob = self._blob(path)
        if blob is None:
            return None
        why = _check(blob, key)
        if why is not None:
            self.discard(key, why)
            return None
        self.touch(key)
        return blob[_HEADER:]

    def touch(self, key):
        """Mark `key`'s entry recently used: eviction removes the oldest mtimes first."""
        try:
            os.utime(self.path(key))
        except OSError:
            pass

    def make_newest(self, key):
        """Mark `key`'s entry used after every other entry, even one written within the same
        tick of the file system's clock (whose coarse timestamps tie otherwise)."""
        try:
            newest = max((e.stat().st_mtime_ns for e in os.scandir(self.folder)
                          if e.name.endswith(SUFFIX)), default=0)
            now = time.time_ns()
            os.utime(self.path(key), ns=(now, max(now, newest + 1)))
        except OSError:
            pass

    def read(self, key):
        """The payload under `key` if it checks out, else None: no warning, no removal, no
        LRU refresh (for the preloader, which must leave the folder as it found it)."""
        blob = self._blob(self.path(key))
        return blob[_HEADER:] if blob is not None and _check(blob, key) is None else None

    @staticmethod
    def _blob(path):
        try:
            with open(path, "rb") as f:
                return f.read()
        except OSError:
            return None

    def discard(self, key, why):
        """Drop a bad entry with a warning; the compile that follows writes a good one."""
        path = self.path(key)
        warnings.warn(f"lazyx: ignoring compile-cache entry {path}: {why}; it will be "
                      f"rewritten", RuntimeWarning, stacklevel=3)
        try:
            os.remove(path)
        except OSError:
            pass

    def put(self, key, payload):
        """Store `payload` under `key` atomically, then evict past the size bound."""
        header = MAGIC + key + struct.pack("<Q", len(payload)) + \
            hashlib.blake2b(payload, digest_size=32).digest()
        path = self.path(key)
        tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.{time.monotonic_ns()}.tmp"
        try:
            os.makedirs(self.folder, exist_ok=True)
            with open(tmp, "wb") as f:
                f.write(header)
                f.write(payload)
            os.replace(tmp, path)
        except OSError as err:
            _remove_quietly(tmp)
            warn_once(f"lazyx: cannot write the compile cache in {self.folder} ({err}); "
                       f"compiled programs are not kept across processes (set LAZYX_CACHE_DIR "
                       f"to a writable folder, or LAZYX_CACHE_DIR= to turn it off)")
            return False
        self.evict(keep=path)
        return True

    def evict(self, keep=None):
        """Remove least recently used entries until the folder fits in max_bytes."""
        with _EVICTING:
            entries, total, now = [], 0, time.time()
            try:
                scan = list(os.scandir(self.folder))
            except OSError:
                return
            for entry in scan:
                try:
                    st = entry.stat()
                except OSError:
                    continue
                if entry.name.endswith(".tmp"):
                    if now - st.st_mtime > _STALE_TMP_SECONDS:
                        _remove_quietly(entry.path)
                elif entry.name.endswith(SUFFIX):
                    entries.append((st.st_mtime, entry.path, st.st_size))
                    total += st.st_size
            if total <= self.max_bytes:
                return
            for _mtime, path, size in sorted(entries):
                if path == keep:
                    continue
                _remove_quietly(path)
                total -= size
                if total <= self.max_bytes:
                    break


def _check(blob, key):
    """Why `blob` is not a sound entry for `key`, or None when it is."""
    if len(blob) < _HEADER or not blob.startswith(MAGIC):
        return "not a lazyx cache file of this version" if len(blob) >= _HEADER else \
            f"truncated ({len(blob)} bytes)"
    at = len(MAGIC)
    if blob[at:at + 32] != key:
        return "it holds another key"
    (size,) = struct.unpack("<Q", blob[at + 32:at + 40])
    payload = blob[_HEADER:]
    if len(payload) != size:
        return f"truncated ({len(payload)} of {size} payload bytes)"
    if hashlib.blake2b(payload, digest_size=32).digest() != blob[at + 40:_HEADER]:
        return "checksum mismatch"
    return None


def _remove_quietly(path):
    try:
        os.remove(path)
    except OSError:
        pass


_warned = set()


def warn_once(text):
    """Warn about a cache-wide condition once per process (not once per program)."""
    if text not in _warned:
        _warned.add(text)
        warnings.warn(text, RuntimeWarning, stacklevel=4)


_writer = []  # one background thread that serializes and writes entries, made on first use
_writer_lock = threading.Lock()
_pending = []


def store_later(fn, *args):
    """Run fn(*args) (serialize + put) on the writer thread: a cold step does not wait for
    its executable to be written. Python waits for the writer at exit, so a short process
    still leaves its entries behind; `flush()` waits now."""
    from concurrent.futures import ThreadPoolExecutor
    with _writer_lock:
        if not _writer:
            _writer.append(ThreadPoolExecutor(max_workers=1, thread_name_prefix="lazyx-cache"))
        _pending[:] = [f for f in _pending if not f.done()]
        try:
            _pending.append(_writer[0].submit(fn, *args))
            return
        except RuntimeError:  # the interpreter is exiting and the writer has stopped:
            pass  # a compile finishing now (a background one, which exit waits for)
    fn(*args)  # writes its entry on its own thread, or the next process compiles it again


def flush():
    """Wait until every entry handed to store_later is on disk (or has failed with a warning)."""
    with _writer_lock:
        pending = list(_pending)
    for future in pending:
        future.result()


def open_cache():
    """The DiskCache configured by the environment now, or None when turned off. The variables
    are read at each compile (not once at import), so a test or a program can move the cache."""
    folder = config.cache_dir()
    if folder is None:
        return None
    return DiskCache(folder, config.cache_dir_bytes())
