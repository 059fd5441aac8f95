"""`python -m lazyx demo`: train a small classifier through every frontend, lazily and eagerly.

The model is an MLP (64-128-10, ReLU, cross-entropy, SGD) on scikit-learn's bundled digits
(8x8 images; no download). Each frontend trains twice from the same initial weights on the
same batches: once on its real framework (eager) and once through lazyx; the table shows
that the accuracies agree, what lazyx compiled, and what a step costs each way.
"""
import importlib
import os
import sys
import time

import numpy as np

SIZES = (64, 128, 10)
BATCH, LR, SEED = 64, 0.3, 0


def load_digits_split():
    """(x_train, y_train, x_test, y_test): 80/20 split, pixels scaled to [0, 1]."""
    from sklearn.datasets import load_digits
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(SEED).permutation(len(x))
    cut = int(0.8 * len(x))
    return x[order[:cut]], y[order[:cut]], x[order[cut:]], y[order[cut:]]


def initial_params():
    """[W1, b1, W2, b2], W as (in, out); the same start for every run."""
    rng = np.random.default_rng(SEED + 1)
    params = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        limit = np.sqrt(6.0 / (fan_in + fan_out))
        params += [rng.uniform(-limit, limit, (fan_in, fan_out)).astype(np.float32),
                   np.zeros(fan_out, np.float32)]
    return params


def batches(n_train, epochs):
    """Index arrays of full batches (a fixed shape: one compiled step), reshuffled per epoch."""
    rng = np.random.default_rng(SEED + 2)
    for _ in range(epochs):
        order = rng.permutation(n_train)
        for i in range(0, n_train - BATCH + 1, BATCH):
            yield order[i:i + BATCH]


class Progress:
    """A one-line progress bar (redrawn in place on a terminal, every 25% otherwise)."""

    def __init__(self, label, total, out=None, width=30):
        out = out or sys.stderr
        self.label, self.total, self.out, self.width = label, total, out, width
        self.tty = hasattr(out, "isatty") and out.isatty()
        self.last_quarter = -1

    def update(self, done, loss=None):
        quarter = 4 * done // self.total
        if not self.tty and quarter == self.last_quarter:
            return
        self.last_quarter = quarter
        filled = self.width * done // self.total
        bar = "#" * filled + "-" * (self.width - filled)
        text = f"  {self.label:<14} [{bar}] {done:>4}/{self.total}"
        if loss is not None:
            text += f"  loss {loss:.4f}"
        self.out.write(("\r" + text) if self.tty else (text + "\n"))
        if self.tty and done == self.total:
            self.out.write("\n")
        self.out.flush()


# ------------------------------------------------------------------ one trainer per frontend
# Each returns (step, predict, state_tensors): step(x_idx) runs one SGD step and returns the
# loss tensor; predict() returns test-set logits; state_tensors() lists what a step updates.

def _torch_trainer(data, lazy, compile_step):
    import torch
    import torch.nn.functional as F
    if lazy:
        import lazyx.frontends.torch as lt
        device, barrier = lt.device, lt.mark_step
    else:
        device, barrier = "cpu", (lambda: None)
    x_train, y_train, x_test, _ = data
    # The usual torch idiom: build on the CPU, then move the module to the device.
    module = torch.nn.ParameterList([torch.from_numpy(p) for p in initial_params()]).to(device)
    params = list(module)
    opt = torch.optim.SGD(params, lr=LR, foreach=False)
    x_test_t = torch.from_numpy(x_test).to(device)

    def forward(x):
        h = torch.relu(x @ params[0] + params[1])
        return h @ params[2] + params[3]

    @compile_step
    def train_step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(forward(x), y)
        loss.backward()
        opt.step()
        return loss

    def step(idx):
        return train_step(torch.from_numpy(x_train[idx]).to(device),
                          torch.from_numpy(y_train[idx]).to(device))

    def predict():
        with torch.no_grad():
            return forward(x_test_t)
    return step, predict, lambda: list(params), barrier, lambda t: float(t.item()), \
        lambda t: t.detach().cpu().numpy()


def _numpy_trainer(data, lazy, compile_step):
    from .bench.systems_numpy import mlp_forward, mlp_step
    if lazy:
        import lazyx
        import lazyx.frontends.numpy as xp
        barrier = lazyx.sync
    else:
        xp, barrier = np, (lambda: None)
    x_train, y_train, x_test, _ = data
    eye = np.eye(SIZES[-1], dtype=np.float32)
    state = {"params": [xp.asarray(p) for p in initial_params()]}
    x_test_a = xp.asarray(x_test)

    @compile_step
    def train_step(x, onehot):
        state["params"], loss = mlp_step(xp, state["params"], x, onehot, lr=LR)
        return loss

    def step(idx):
        return train_step(xp.asarray(x_train[idx]), xp.asarray(eye[y_train[idx]]))

    def predict():
        return mlp_forward(xp, state["params"], x_test_a)
    return step, predict, lambda: list(state["params"]), barrier, float, np.asarray


def _tf_trainer(data, lazy, compile_step):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TF's start-up chatter is not ours
    import tensorflow as tf
    from .bench.systems_tf import mlp_forward, mlp_loss
    tape_cls = tf.GradientTape
    if lazy:
        import lazyx
        import lazyx.frontends.tf as ltf
        to_tensor, barrier = ltf.constant, ltf.sync
        if compile_step is not _as_is:
            # a compiled step keeps the variables on the device (lazyx.sync leaves them
            # there); ltf.GradientTape makes their updates part of the step's program
            barrier, tape_cls = lazyx.sync, ltf.GradientTape
    else:
        to_tensor, barrier = tf.constant, (lambda: None)
    x_train, y_train, x_test, _ = data
    eye = np.eye(SIZES[-1], dtype=np.float32)
    variables = [tf.Variable(p) for p in initial_params()]
    x_test_t = to_tensor(x_test)

    @compile_step
    def train_step(x, onehot):
        with tape_cls() as tape:
            loss = mlp_loss(variables, x, onehot)
        for var, grad in zip(variables, tape.gradient(loss, variables)):
            var.assign_sub(LR * grad)
        return loss

    def step(idx):
        return train_step(to_tensor(x_train[idx]), to_tensor(eye[y_train[idx]]))

    def predict():
        return mlp_forward(variables, x_test_t)

    def state():
        return [ltf.convert(v) for v in variables] if lazy else variables
    return step, predict, state, barrier, lambda t: float(t.numpy()), lambda t: t.numpy()


def _as_is(fn):
    return fn


TRAINERS = {"torch": _torch_trainer, "numpy": _numpy_trainer, "tf": _tf_trainer}


def _graph_hash(*tensors):
    """lazyx.graph_hash of whichever of `tensors` are lazy (None when none are)."""
    import lazyx
    lazy = [t for t in tensors if hasattr(t, "__lazyx_handle__")]
    return lazyx.graph_hash(*lazy) if lazy else None


def train(frontend, data, epochs, lazy, compiled=False):
    """Train once; returns accuracy, timings, and (lazy) metrics and graph hashes.
    `compiled`: the step runs under lazyx.compile (traced once, then replayed)."""
    import lazyx
    step, predict, state, barrier, to_float, to_numpy = TRAINERS[frontend](
        data, lazy, lazyx.compile if compiled else _as_is)
    if lazy:
        lazyx.reset_metrics()
    plan = list(batches(len(data[0]), epochs))
    steps_per_epoch = len(plan) // epochs
    progress = Progress(f"{frontend} {'lazyx' if lazy else 'eager'}", len(plan))
    result, loss_value = {}, None
    start = time.perf_counter()
    for i, idx in enumerate(plan):
        loss = step(idx)
        if lazy and not compiled and i in (0, len(plan) - 1):
            result.setdefault("step_hashes", []).append(_graph_hash(loss, *state()))
        barrier()
        if i == 0:
            loss_value = to_float(loss)  # wait: the first step (compile) is timed apart
            first_done = time.perf_counter()
        elif (i + 1) % steps_per_epoch == 0:
            loss_value = to_float(loss)  # observe once per epoch; steps in between stay async
        progress.update(i + 1, loss_value)
    end = time.perf_counter()
    compiles_before = lazyx.metrics()["compiles"]
    logits = predict()
    if lazy:
        result["predict_hash"] = _graph_hash(logits)
    predicted = np.argmax(to_numpy(logits), axis=1)
    if lazy:
        result["predict_compiled"] = lazyx.metrics()["compiles"] > compiles_before
    result.update(accuracy=float(np.mean(predicted == data[3])), final_loss=loss_value,
                  first_ms=(first_done - start) * 1e3,
                  step_ms=(end - first_done) * 1e3 / max(1, len(plan) - 1))
    if lazy:
        m = lazyx.metrics()
        result.update({k: m[k] for k in ("compiles", "cache_hits", "syncs", "fallbacks",
                                         "replays")}, fallback_ops=m["fallback_ops"])
    return result


def _print_table(rows, out):
    head = ("frontend", "test acc lazyx", "+compile", "eager", "compiles", "cache hits",
            "syncs", "ms/step lazyx", "lazyx+compile", "eager", "first step ms lazyx",
            "step graph hash")
    table = [head]
    for frontend, lazy, eager, comp in rows:
        hashes = lazy.get("step_hashes") or [None]
        stable = "" if len(set(hashes)) == 1 else " (changed!)"
        table.append((frontend, f"{lazy['accuracy']:.4f}", f"{comp['accuracy']:.4f}",
                      f"{eager['accuracy']:.4f}", str(lazy["compiles"]),
                      str(lazy["cache_hits"]), str(lazy["syncs"]), f"{lazy['step_ms']:.2f}",
                      f"{comp['step_ms']:.2f}", f"{eager['step_ms']:.2f}",
                      f"{lazy['first_ms']:.0f}", f"{hashes[-1]}{stable}"))
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    for n, r in enumerate(table):
        print("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)), file=out)
        if n == 0:
            print("  " + "  ".join("-" * w for w in widths), file=out)


def _print_equal_graphs(rows, out):
    for title, key in (("step", lambda r: (r.get("step_hashes") or [None])[-1]),
                       ("predict", lambda r: r.get("predict_hash"))):
        groups = {}
        for frontend, lazy, *_ in rows:
            groups.setdefault(key(lazy), []).append((frontend, lazy))
        text = "; ".join(f"{h}: {', '.join(f for f, _ in fs)}" for h, fs in groups.items())
        print(f"  {title} graphs by hash: {text}", file=out)
        if title != "predict":
            continue
        for fs in groups.values():
            reused = [f for f, lazy in fs[1:] if not lazy.get("predict_compiled")]
            if reused:  # the compile cache is keyed by the program's structure, not by frontend
                print(f"    {', '.join(reused)} found the predict program compiled for "
                      f"{fs[0][0]} in the cache: same IR, one executable", file=out)


def run_demo(frontends=("torch", "numpy", "tf"), epochs=10, out=None):
    """Train through each frontend (eager, then lazyx) and print the comparison; returns 0
    when every frontend ran, 1 when one could not (its reason is printed)."""
    import lazyx
    out = out or sys.stdout
    data = load_digits_split()
    n_steps = len(data[0]) // BATCH * epochs
    print(f"lazyx demo: MLP {'-'.join(map(str, SIZES))} on scikit-learn digits "
          f"({len(data[0])} train / {len(data[2])} test), {epochs} epochs = {n_steps} steps of "
          f"batch {BATCH}, SGD lr {LR}; lazyx backend: {lazyx.backend()}", file=out)
    rows, failures = [], []
    for frontend in frontends:
        try:
            # Import the frontend first, as a user's script would: torch's autograd engine
            # sizes its per-device queues at the first backward, so a device registered after
            # an eager backward has no queue (an INTERNAL ASSERT in engine.cpp).
            importlib.import_module(f"lazyx.frontends.{frontend}")
            eager = train(frontend, data, epochs, lazy=False)
            lazy = train(frontend, data, epochs, lazy=True)
            comp = train(frontend, data, epochs, lazy=True, compiled=True)
        except ImportError as err:
            failures.append(f"{frontend}: not available ({err})")
            continue
        except Exception as err:  # report and go on with the other frontends
            failures.append(f"{frontend}: failed: {type(err).__name__}: {err}")
            continue
        rows.append((frontend, lazy, eager, comp))
    print(file=out)
    if rows:
        _print_table(rows, out)
        _print_equal_graphs(rows, out)
        for frontend, lazy, *_ in rows:
            if lazy["fallbacks"]:
                print(f"  {frontend}: {lazy['fallbacks']} eager fallbacks: "
                      f"{lazy['fallback_ops']}", file=out)
    print("  ms/step: wall time of steps 2..N (the first includes the compile); eager runs "
          "use the same code on the real framework; lazyx+compile runs the step under "
          "lazyx.compile (traced once, then replayed without Python).", file=out)
    for line in failures:
        print(f"  {line}", file=out)
    return 1 if failures else 0
