"""Integer programs through one frontend on the backend LAZYX_BACKEND names, run by
test_integer_fuzz.py in a subprocess: a crash (SIGFPE from an unguarded division) kills this
process, not pytest.

    python integer_fuzz_worker.py FRONTEND OUT.pkl EXAMPLES [REPLAY.pkl]

Hypothesis draws short chains of integer ops (every integer dtype the framework computes
with; operands rich in MIN, MAX, -1, 0 and shift counts past the width, some computed so that
their values are not known at the call) and float -> int conversions of NaN, +-inf and
out-of-range values. Each lazy result must match the eager framework where the framework
defines it, the documented lazy value where eager raises (docs/errors.md), and the float ->
int rule (truncate, saturate, NaN -> 0) exactly. Cases and results go to OUT.pkl; a second
run on the other backend replays those cases, and the test compares the two bit for bit.
"""
import math
import pickle
import sys
import warnings

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

warnings.simplefilter("ignore")

BINARY = ["add", "sub", "mul", "floordiv", "mod", "truncdiv", "fmod", "and", "or", "xor",
          "shl", "shr", "max", "min"]
# self_sub (x - x) is 0 that XLA folds at compile time: a later division by it is then folded
# too, which is where an unguarded division trapped (SIGFPE)
UNARY = ["neg", "abs", "abs_square", "square_negative", "self_sub"]
DIVISIONS = {"floordiv", "mod", "truncdiv", "fmod"}
# what a lazy integer division by zero gives where eager torch/TF raise (docs/errors.md)
BY_ZERO = {"floordiv": lambda a: 0, "mod": lambda a: 0, "truncdiv": lambda a: -1,
           "fmod": lambda a: a}


class NumPy:
    dtypes = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
    ops = BINARY + UNARY
    raises_by_zero = False

    def __init__(self):
        import lazyx.frontends.numpy as lnp
        self.lnp = lnp

    def lazy(self, a):
        return self.lnp.asarray(a)

    def eager(self, a):
        return a

    def host(self, x):
        return np.asarray(x)

    def apply(self, op, x, y, lazy):
        f = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "floordiv": np.floor_divide,
             "mod": np.remainder, "fmod": np.fmod, "and": np.bitwise_and, "or": np.bitwise_or,
             "xor": np.bitwise_xor, "shl": np.left_shift, "shr": np.right_shift,
             "max": np.maximum, "min": np.minimum}
        if op in f:
            return f[op](x, y)
        if op == "truncdiv":
            return None  # NumPy has no truncating integer division
        return {"neg": np.negative, "abs": np.abs, "abs_square": lambda v: np.abs(v * v),
                "self_sub": lambda v: v - v,
                "square_negative": lambda v: (v * v < 0).astype(v.dtype)}[op](x)

    def cast(self, x, dtype):
        return x.astype(dtype)


class Torch:
    dtypes = ["int8", "int16", "int32", "int64", "uint8"]
    ops = BINARY + UNARY
    raises_by_zero = True

    def __init__(self):
        import torch
        import lazyx.frontends.torch as lt
        self.torch, self.device = torch, lt.device

    def lazy(self, a):
        return self.torch.tensor(a, device=self.device)

    def eager(self, a):
        return self.torch.tensor(a)

    def host(self, x):
        return x.cpu().numpy()

    def apply(self, op, x, y, lazy):
        t = self.torch
        f = {"add": t.add, "sub": t.sub, "mul": t.mul,
             "floordiv": lambda a, b: t.div(a, b, rounding_mode="floor"),
             "truncdiv": lambda a, b: t.div(a, b, rounding_mode="trunc"),
             "mod": t.remainder, "fmod": t.fmod, "and": t.bitwise_and, "or": t.bitwise_or,
             "xor": t.bitwise_xor, "shl": t.bitwise_left_shift, "shr": t.bitwise_right_shift,
             "max": t.maximum, "min": t.minimum}
        if op in f:
            return f[op](x, y)
        return {"neg": t.neg, "abs": t.abs, "abs_square": lambda v: t.abs(v * v),
                "self_sub": lambda v: v - v,
                "square_negative": lambda v: (v * v < 0).to(v.dtype)}[op](x)

    def cast(self, x, dtype):
        return x.to(getattr(self.torch, dtype))


class TF:
    dtypes = ["int8", "int16", "int32", "int64", "uint8"]
    ops = [op for op in BINARY if op not in ("truncdiv", "fmod")] + UNARY
    raises_by_zero = True

    def __init__(self):
        import tensorflow as tf
        import lazyx.frontends.tf as ltf
        self.tf, self.ltf = tf, ltf

    def lazy(self, a):
        return self.ltf.constant(a)

    def eager(self, a):
        return self.tf.constant(a)

    def host(self, x):
        return np.asarray(x)

    def apply(self, op, x, y, lazy):
        tf = self.tf
        if op in ("shl", "shr") and x.dtype == tf.int8 or op == "neg" and x.dtype == tf.uint8:
            return None  # no eager TF kernel for these dtypes
        f = {"add": tf.add, "sub": tf.subtract, "mul": tf.multiply, "floordiv": tf.math.floordiv,
             "mod": tf.math.floormod, "and": tf.bitwise.bitwise_and,
             "or": tf.bitwise.bitwise_or, "xor": tf.bitwise.bitwise_xor,
             "shl": tf.bitwise.left_shift, "shr": tf.bitwise.right_shift,
             "max": tf.maximum, "min": tf.minimum}
        if op in f:
            return f[op](x, y)
        if op == "self_sub":
            return x - x
        if x.dtype == tf.uint8 and op != "square_negative":
            return None  # TF has no abs/neg kernels for uint8
        return {"neg": tf.negative, "abs": tf.abs, "abs_square": lambda v: tf.abs(v * v),
                "square_negative": lambda v: tf.cast(v * v < 0, v.dtype)}[op](x)

    def cast(self, x, dtype):
        return self.tf.cast(x, dtype)


FRONTENDS = {"numpy": NumPy, "torch": Torch, "tf": TF}


def special_values(dtype):
    info = np.iinfo(dtype)
    bits = info.bits
    return [info.min, info.min + 1, -1, 0, 1, 2, info.max, info.max - 1, bits - 1, bits,
            bits + 1, 3 * bits] if info.min < 0 else [0, 1, 2, info.max, bits - 1, bits, 7]


def int_vector(dtype, n=8):
    info = np.iinfo(dtype)
    element = st.one_of(st.sampled_from([v for v in special_values(dtype)
                                         if info.min <= v <= info.max]),
                        st.integers(int(info.min), int(info.max)))
    return st.lists(element, min_size=n, max_size=n).map(lambda v: np.array(v, dtype))


@st.composite
def programs(draw, frontend):
    # signed types twice as often: wrap-around, MIN and -1 are where backends go wrong
    dtype = draw(st.sampled_from(frontend.dtypes + [d for d in frontend.dtypes if d[0] == "i"]))
    inputs = [draw(int_vector(dtype)) for _ in range(3)]
    ops = frontend.ops + [op for op in frontend.ops if op in UNARY or op in DIVISIONS]
    # operand k: an input or an earlier result; -1 and -2 (the latest two) come up often, so
    # that results feed each other
    operand = st.one_of(st.sampled_from([-1, -1, -2]), st.integers(0, 99))
    steps = draw(st.lists(st.tuples(st.sampled_from(ops), operand, operand),
                          min_size=1, max_size=5))
    if draw(st.booleans()):  # start from a zero XLA folds (x - x)
        steps = [("self_sub", 0, 0)] + steps
    return dtype, inputs, steps


def unsafe_for_eager(op, a, b, dtype):
    """Operand pairs where an eager framework's own kernel may trap (MIN / -1) or raises."""
    if op not in DIVISIONS:
        return False
    info = np.iinfo(dtype)
    return bool(np.any(b == 0) or (info.min < 0 and np.any((a == info.min) & (b == -1))))


def run_program(frontend, dtype, inputs, steps):
    """Build every step lazily first (so computed divisors are not known at the call), then
    read all results and check each against eager on the same operand values."""
    lazy, built = [frontend.lazy(a) for a in inputs], []
    for op, i, j in steps:
        i, j = i % len(lazy), j % len(lazy)  # negative: counted from the latest
        try:
            out = frontend.apply(op, lazy[i], lazy[j], True)
        except Exception as err:  # noqa: BLE001 - checked below, once the values are read
            built.append((op, i, j, err))
            continue
        if out is not None:
            built.append((op, i, j, len(lazy)))
            lazy.append(out)
    hosts = list(inputs) + [frontend.host(x) for x in lazy[len(inputs):]]
    results = []
    for op, i, j, where in built:
        a, b = hosts[i], hosts[j]
        if isinstance(where, Exception):
            # torch and TF raise at the call for a zero divisor whose value is known
            assert frontend.raises_by_zero and op in DIVISIONS and np.any(b == 0) and \
                "division by zero" in str(where).lower().replace("zerodivisionerror",
                                                                 "division by zero"), where
            continue
        got = hosts[where]
        if unsafe_for_eager(op, a, b, dtype) and frontend.raises_by_zero:
            # eager raises (or may trap) here, and a lazy value cannot: the documented value
            # where the divisor is zero, the eager answer elsewhere
            safe = np.where(b == 0, 1, b)
            info = np.iinfo(dtype)
            if info.min < 0:
                safe = np.where((a == info.min) & (safe == -1), 1, safe)
            reference = frontend.host(frontend.apply(op, frontend.eager(a),
                                                     frontend.eager(safe), False))
            by_zero = np.array([BY_ZERO[op](v) for v in a.tolist()]).astype(dtype)
            expected = np.where(b == 0, by_zero, reference)
            if info.min < 0:  # MIN / -1 wraps to MIN (its remainder is 0), as in NumPy
                wrapped = {"floordiv": a, "truncdiv": a, "mod": 0 * a, "fmod": 0 * a}[op]
                expected = np.where((a == info.min) & (b == -1), wrapped, expected)
        else:
            with np.errstate(all="ignore"):
                expected = frontend.host(frontend.apply(op, frontend.eager(a),
                                                        frontend.eager(b), False))
        assert got.dtype == expected.dtype and np.array_equal(got, expected), \
            (op, dtype, a, b, got, expected)
        results.append(got)
    return results


FLOATS = [math.nan, math.inf, -math.inf, 0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 127.9, 128.0,
          -128.5, -129.0, 255.5, 256.0, 32767.5, 65535.9, 2.0**31, -2.0**31 - 1.0, 2.0**32,
          2.0**63, -2.0**63, 2.0**64, 1e30, -1e30]


def saturating(value, dtype):
    """The documented float -> int rule: NaN -> 0, else truncate and clamp to the range."""
    info = np.iinfo(dtype)
    if math.isnan(value):
        return 0
    if math.isinf(value):
        return info.max if value > 0 else info.min
    return min(max(math.trunc(value), info.min), info.max)


@st.composite
def conversions(draw, frontend):
    source = draw(st.sampled_from(["float16", "float32", "float64"]))
    target = draw(st.sampled_from(frontend.dtypes))
    values = draw(st.lists(st.one_of(st.sampled_from(FLOATS),
                                     st.floats(-1e20, 1e20, allow_nan=False)),
                           min_size=8, max_size=8))
    return source, target, values


def run_conversion(frontend, source, target, values):
    with np.errstate(all="ignore"):
        floats = np.array(values, np.float64).astype(source)
    got = frontend.host(frontend.cast(frontend.lazy(floats), target))
    expected = np.array([saturating(float(v), target) for v in floats], target)
    assert np.array_equal(got, expected), (source, target, floats, got, expected)
    return got


def main(name, out_path, examples, replay_path=None):
    """Draw `examples` programs of each kind with hypothesis, or (replay_path) rerun the
    programs another run recorded: then the two runs' results can be compared bit for bit."""
    frontend = FRONTENDS[name]()
    runners = {"program": run_program,
               "conversion": lambda frontend, *case: [run_conversion(frontend, *case)]}
    record = []
    if replay_path:
        with open(replay_path, "rb") as f:
            for kind, case, _ in pickle.load(f):
                record.append((kind, case, runners[kind](frontend, *case)))
    else:
        opts = settings(max_examples=examples, derandomize=True, database=None,
                        deadline=None, suppress_health_check=list(HealthCheck))

        @opts
        @given(programs(frontend))
        def integer_programs(case):
            results = run_program(frontend, *case)
            record.append(("program", case, results))

        @opts
        @given(conversions(frontend))
        def float_to_int(case):
            record.append(("conversion", case, [run_conversion(frontend, *case)]))

        integer_programs()
        float_to_int()
    with open(out_path, "wb") as f:
        pickle.dump(record, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else None)
