"""TensorFlow systems: eager, tf.function(jit_compile=True) (XLA), and lazyx through its tf
frontend. One set of functions over tf.Variables serves all three."""
import math
import os
import tensorflow as tf

from . import workloads as wl
from .harness import NotAvailable, make_step

if os.environ.get("LAZYX_BENCH_THREADS"):  # `lazyx bench --threads N`
    tf.config.threading.set_intra_op_parallelism_threads(int(os.environ["LAZYX_BENCH_THREADS"]))
    tf.config.threading.set_inter_op_parallelism_threads(int(os.environ["LAZYX_BENCH_THREADS"]))


def mlp_forward(params, x):
    h = x
    for i in range(0, len(params) - 2, 2):
        h = tf.nn.relu(tf.matmul(h, params[i]) + params[i + 1])
    return tf.matmul(h, params[-2]) + params[-1]


def mlp_loss(params, x, onehot):
    logits = mlp_forward(params, x)
    return tf.reduce_mean(tf.reduce_logsumexp(logits, axis=1)
                          - tf.reduce_sum(logits * onehot, axis=1))


def _layer_norm(x, g, b):
    mean = tf.reduce_mean(x, axis=-1, keepdims=True)
    xc = x - mean
    var = tf.reduce_mean(xc * xc, axis=-1, keepdims=True)
    return xc / tf.sqrt(var + wl.LN_EPS) * g + b


def block_loss(params, x, target):
    p = dict(zip(wl.BLOCK_PARAMS, params))
    b, s, d = x.shape
    dh = d // wl.HEADS

    def heads(t):
        return tf.transpose(tf.reshape(t, (b, s, wl.HEADS, dh)), (0, 2, 1, 3))

    a = _layer_norm(x, p["ln1_g"], p["ln1_b"])
    q, k, v = (heads(tf.matmul(a, p["w" + c]) + p["b" + c]) for c in "qkv")
    scores = tf.matmul(q, k, transpose_b=True) * (1.0 / math.sqrt(dh))
    ctx = tf.reshape(tf.transpose(tf.matmul(tf.nn.softmax(scores, axis=-1), v), (0, 2, 1, 3)),
                     (b, s, d))
    h = x + tf.matmul(ctx, p["wo"]) + p["bo"]
    f = tf.nn.relu(tf.matmul(_layer_norm(h, p["ln2_g"], p["ln2_b"]), p["w1"]) + p["b1"])
    diff = h + tf.matmul(f, p["w2"]) + p["b2"] - target
    return tf.reduce_mean(diff * diff)


def _build(workload, to_tensor, barrier, compile_fn=None, lazy=False, tape=tf.GradientTape,
           replay=False):
    if workload in ("W1", "W2"):
        if workload == "W1":
            x, _, onehot = wl.mlp_data()
            params, batch, loss_fn = wl.mlp_params(), (x, onehot), mlp_loss
        else:
            params, batch, loss_fn = list(wl.block_params().values()), wl.block_data(), \
                block_loss
        variables = [tf.Variable(a) for a in params]
        batch = tuple(to_tensor(a) for a in batch)

        def train(x, y):
            with tape() as recorder:
                loss = loss_fn(variables, x, y)
            for var, grad in zip(variables, recorder.gradient(loss, variables)):
                var.assign_sub(wl.LR * grad)
            return loss

        if compile_fn is not None:
            train = compile_fn(train)
        return make_step(lambda: train(*batch), barrier, _read, lazy, replay=replay)
    chain = wl.chain_of(workload)
    unary = {"tanh": tf.tanh}

    def fn(t):
        return tf.reduce_sum(wl.run_chain(t, chain, unary))

    if compile_fn is not None:
        fn = compile_fn(fn)
    x = to_tensor(wl.chain_input(workload))
    return make_step(lambda: fn(x), barrier, _read, lazy, wl.OPS_PER_STEP[workload],
                     replay=replay)


def _read(t):
    return float(t.numpy())


def tf_eager(workload):
    return _build(workload, tf.constant, lambda: None)


def tf_function(workload):
    return _build(workload, tf.constant, lambda: None,
                  compile_fn=lambda f: tf.function(f, jit_compile=True))


def lazyx_tf(workload):
    try:
        import lazyx.frontends.tf as ltf
    except ImportError as err:
        raise NotAvailable(f"lazyx tf frontend not importable: {err}")
    # ltf.GradientTape keeps gradients lazy, so the update joins the step's one program
    return _build(workload, ltf.constant, ltf.sync, lazy=True, tape=ltf.GradientTape)


def lazyx_tf_compile(workload):
    try:
        import lazyx
        import lazyx.frontends.tf as ltf
    except ImportError as err:
        raise NotAvailable(f"lazyx tf frontend not importable: {err}")
    # barrier: lazyx.sync, not ltf.sync, which would also copy every variable back into TF
    # (a compiled step keeps them on the device between calls)
    return _build(workload, ltf.constant, lazyx.sync, compile_fn=lazyx.compile, lazy=True,
                  tape=ltf.GradientTape, replay=True)


SYSTEMS = {"tf-eager": tf_eager, "tf.function": tf_function, "lazyx-tf": lazyx_tf,
           "lazyx-tf+compile": lazyx_tf_compile}
