"""runtime.bake: the literals of a replayed step (lazyx.compile) and of a torch.compile graph
become constants of the executed program, so XLA folds them as jax.jit does. The numbers are
the unbaked program's; the call's own numbers stay run-time parameters. Runs on the backend
tox selects."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import lazyx
import lazyx.frontends.numpy as lnp
from lazyx.core import ir, ops, runtime


def _run(program, values):
    exe, _ = runtime.compile_program(program)
    backend = runtime.get_backend()
    return [np.asarray(backend.to_host(b)) for b in exe(values)]


def _on_cpu():
    """Whether programs run on XLA:CPU (or the reference interpreter), where a baked program
    computes the unbaked one's numbers bit for bit; a GPU may fuse (and so sum) otherwise."""
    if runtime.backend() != "xla":
        return True
    import jax
    return jax.local_devices()[0].platform == "cpu"


def _chain_program():
    """A program with splat params (x * 0.5), a rank-0 param (the scalar 3.0 times a
    reduction) and an output that is one of its data leaves."""
    host = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    x = lnp.asarray(host)
    y = (x * 0.5 + 1.25) - x.sum(axis=0) * 3.0
    program, leaves = runtime.linearize([y.__lazyx_handle__.node, x.__lazyx_handle__.node])
    return program, leaves, host


def test_a_baked_program_computes_what_the_unbaked_one_computes():
    program, leaves, host = _chain_program()
    literals = runtime.literal_leaves(program, leaves)
    assert len(literals) == 3 and all(leaves[i].op == "param" for i in literals)
    baked = runtime.bake(program, literals)
    assert [kind for kind, _, _ in baked.leaves] == ["data"]
    assert sum(1 for ins in baked.instructions if ins[0] == "constant") == 3
    want = _run(program, [leaf.value for leaf in leaves])
    got = _run(baked, [leaf.value for i, leaf in enumerate(leaves) if i not in literals])
    for g, w in zip(got, want):
        if _on_cpu():
            np.testing.assert_array_equal(g, w)
        else:  # an H100 summed x.sum(axis=0) in another order once the literals were baked
            np.testing.assert_allclose(g, w, rtol=1e-6)
    np.testing.assert_array_equal(got[1], host)
    np.testing.assert_allclose(got[0], host * 0.5 + 1.25 - host.sum(axis=0) * 3.0, rtol=1e-6)


def test_values_are_part_of_the_baked_key():
    program, leaves, host = _chain_program()
    literals = runtime.literal_leaves(program, leaves)
    other = {i: v * 2 for i, v in literals.items()}
    a, b = runtime.bake(program, literals), runtime.bake(program, other)
    assert len({program.key, a.key, b.key}) == 3
    assert a.graph_hash != b.graph_hash
    data = [leaf.value for i, leaf in enumerate(leaves) if i not in literals]
    np.testing.assert_allclose(_run(b, data)[0], host * 1.0 + 2.5 - host.sum(axis=0) * 6.0,
                               rtol=1e-6)


def test_only_scalars_are_baked():
    program, leaves, _ = _chain_program()
    with pytest.raises(ValueError, match="not a scalar"):
        runtime.bake(program, {0: np.zeros(3, np.float32)})
    assert runtime.literal_leaves(program, leaves, run_time={id(leaf) for leaf in leaves}) == {}


def _executed_program(compiled):
    """The program a lazyx.compile'd function's (only) entry runs."""
    (entry,) = [e for bucket in compiled.entries.values() for e in bucket]
    return getattr(entry.exe, "program", None) or entry.program


def test_a_replayed_step_bakes_its_literals_and_computes_the_uncompiled_runs_numbers():
    """A replay's numbers of the code never change: on XLA:CPU they are constants of the
    program it runs (as jax.jit's Python numbers are), and it still computes the uncompiled
    run's numbers bit for bit. Until divisions were made IEEE divisions (docs/runtime.md),
    a baked 0.5 here let XLA rewrite `x / sqrt(c)` as `x * rsqrt(c)`: 35 of 128 float64
    results moved by an ulp. The argument `lr` (and `abs(lr) + 0.6`, computed in Python from
    it) stay run-time parameters."""
    rng = np.random.default_rng(0)

    def step(x, lr):
        y = x * 0.9 + 0.1
        return y * y - lr * x / lnp.sqrt(abs(lr) + 0.6) + 0.5

    for dtype in (np.float32, np.float64):
        xs = [rng.standard_normal((16, 8)).astype(dtype) for _ in range(4)]
        compiled = lazyx.compile(step)
        lazyx.reset_metrics()
        for k, x in enumerate(xs):
            lr = 0.5 / (k + 1)
            got = np.asarray(compiled(lnp.asarray(x), lr))
            np.testing.assert_array_equal(got, np.asarray(step(lnp.asarray(x), lr)))
        # the second call traces once more to confirm that lr only feeds the graph
        assert lazyx.metrics()["replays"] == 2
        constants = sorted(float(ins[5]) for ins in _executed_program(compiled).instructions
                           if ins[0] == "constant")
        bakes = getattr(runtime.get_backend(), "bakes_bitwise", lambda: False)()
        assert constants == (sorted(float(dtype(c)) for c in (0.1, 0.5, 0.9))
                             if bakes else [])


_REPLAYED_OPS = {
    "add": lambda x, c: x + c, "rsub": lambda x, c: c - x, "mul": lambda x, c: x * c,
    "div": lambda x, c: x / c, "rdiv": lambda x, c: c / (abs(x) + 1.5),
    "sqrt": lambda x, c: lnp.sqrt(abs(x) + c), "tanh": lambda x, c: lnp.tanh(x * c),
    "pow": lambda x, c: (abs(x) + 0.5) ** c, "max": lambda x, c: lnp.maximum(x, c),
    "where": lambda x, c: lnp.where(x > c, x, c * x), "exp": lambda x, c: lnp.exp(x * c) - c,
}


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(sorted(_REPLAYED_OPS)),
                          st.sampled_from([0.5, 2.0, -1.0, 3.0, 0.1, 0.9, 1e-3, 1.0, 0.0, 7.0])),
                min_size=2, max_size=8),
       st.sampled_from([np.float32, np.float64]))
def test_replays_of_random_chains_compute_the_uncompiled_runs_numbers(chain, dtype):
    """Whatever the replay bakes (only literals that meet sums, products, min/max, comparisons
    and selects), its numbers are the uncompiled run's, bit for bit, next to divisions,
    square roots, powers and exponentials of other literals (a CPU; elsewhere nothing is
    baked, see runtime.compile_fixed)."""
    def step(x, s):
        t = x * s
        for op, c in chain:
            t = _REPLAYED_OPS[op](t, c)
        return t

    rng = np.random.default_rng(len(chain))
    compiled = lazyx.compile(step)
    for k in range(3):
        x = rng.standard_normal((16, 8)).astype(dtype)
        got = np.asarray(compiled(lnp.asarray(x), 0.75 + k))
        want = np.asarray(step(lnp.asarray(x), 0.75 + k))
        np.testing.assert_array_equal(got, want)


_OPS = {
    "add": lambda x, c: x + c, "sub": lambda x, c: c - x, "mul": lambda x, c: x * c,
    "max": lambda x, c: lnp.maximum(x, c), "min": lambda x, c: lnp.minimum(x, c),
    "tanh": lambda x, c: lnp.tanh(x * c), "gt": lambda x, c: lnp.where(x > c, x, c * x),
}


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(sorted(_OPS)),
                          st.sampled_from([0.5, 2.0, -1.0, 3.0, 0.1, 24.0, 0.9, 1e-3, 1.0, 0.0])),
                min_size=2, max_size=8))
def test_baked_literals_of_sums_and_products_round_as_parameters_do(chain):
    """XLA's simplifier folds constants into each other ((x * 0.9) * 2 -> x * 1.8, which
    rounds otherwise): behind the barrier, literals that only meet additions, products,
    comparisons and selects give exactly what parameters give."""
    x = lnp.asarray(np.random.default_rng(len(chain)).standard_normal((16, 8)).astype(np.float32))
    t = x
    for op, c in chain:
        t = _OPS[op](t, c)
    program, leaves = runtime.linearize([t.__lazyx_handle__.node])
    literals = runtime.literal_leaves(program, leaves)
    # 0, 1 and -1 stay parameters (LLVM would drop or fold them and fuse what is left)
    assert len(literals) == sum(1 for leaf in leaves if leaf.op == "param" and
                                float(leaf.value) not in (0.0, 1.0, -1.0))
    baked = runtime.bake(program, literals)
    want = _run(program, [leaf.value for leaf in leaves])
    got = _run(baked, [leaf.value for i, leaf in enumerate(leaves) if i not in literals])
    np.testing.assert_array_equal(got[0], want[0])


def test_identity_values_stay_parameters():
    """Baked, `(x * 3) * -1 + 0.5` became one fused multiply-add (LLVM saw the -1 after XLA
    fused the program): an ulp off what the parameters give, on 6 of these 128 values."""
    host = np.random.default_rng(3).standard_normal((16, 8)).astype(np.float32)
    t = (lnp.asarray(host) * 3.0) * -1.0 + 0.5
    program, leaves = runtime.linearize([t.__lazyx_handle__.node])
    literals = runtime.literal_leaves(program, leaves)
    assert sorted(float(v) for v in literals.values()) == [0.5, 3.0]
    got = _run(runtime.bake(program, literals),
               [leaf.value for i, leaf in enumerate(leaves) if i not in literals])
    np.testing.assert_array_equal(got[0], _run(program, [leaf.value for leaf in leaves])[0])


@pytest.mark.parametrize("exponent", [0.5, 2.0, -1.0, 3.0])
def test_an_exponent_stays_a_parameter(exponent):
    """LLVM turns pow with a known exponent into sqrt, x * x or 1 / x, which round otherwise
    than XLA's pow with a run-time exponent."""
    host = np.abs(np.random.default_rng(0).standard_normal(4096)).astype(np.float32) + 0.01
    x = runtime.from_host(host)
    e = ops.broadcast_in_dim(ir.param(exponent, "float32"), shape=host.shape,
                             broadcast_dimensions=())
    y = ops.pow_(ops.mul(x, ir.param(0.75, "float32", host.shape)), e)
    program, leaves = runtime.linearize([y])
    literals = runtime.literal_leaves(program, leaves)
    assert [leaves[i].value for i in literals] == [0.75]
    baked = runtime.bake(program, literals)
    want = _run(program, [leaf.value for leaf in leaves])
    got = _run(baked, [leaf.value for i, leaf in enumerate(leaves) if i not in literals])
    np.testing.assert_array_equal(got[0], want[0])
