"""Scalar packs a repeated step need not transfer again: for the XLA backend's executables.

Every Python number a program uses (a learning rate, `x * 0.5`) is a run-time scalar, packed
with the others of its dtype into one array that the executable takes at each call
(xla._Signature). On a CPU that array is passed as it lies. On a GPU it is a host-to-device
copy at every step: on the lent H100s (benchmarks/gpu_profile.py, docs/bench.md "On a GPU") a
NumPy argument added 70-110 us to a 40-50 us call, and W1's lazy NumPy step spent 480-560 us
in the call with its pack against 255-270 with the pack on the device. A step's scalars
rarely change between steps, so a pack whose values repeat is put on the device once and
that array passed from then on.
"""

# A pack put on the device once its values have come this many calls in a row: a value that
# changes every step (a step counter, a bias correction) is never put, one that settles is.
REPEATS_BEFORE_PUT = 3


class ScalarPacks:
    """Per pack argument of one executable: the last values passed and their device copy."""
    __slots__ = ("positions", "put", "last")

    def __init__(self, positions, put):
        self.positions = positions   # argument indices that hold packs
        self.put = put               # NumPy array -> device array
        self.last = [None] * len(positions)  # per pack: [bytes, calls in a row, device array]

    def substitute(self, args):
        """Replace the packs in `args` (a list) whose values repeat by their device copies.
        Values are compared bit for bit (0.0 and -0.0 differ, a NaN equals only itself)."""
        for n, k in enumerate(self.positions):
            host = args[k]
            key = host.tobytes()
            last = self.last[n]
            if last is None or last[0] != key:
                self.last[n] = [key, 1, None]
            elif last[2] is not None:
                args[k] = last[2]
            else:
                last[1] += 1
                if last[1] >= REPEATS_BEFORE_PUT:
                    last[2] = args[k] = self.put(host)
