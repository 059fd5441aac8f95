"""Smoke tests of `lazyx bench` and `lazyx demo` (timings are never asserted)."""
import json

import numpy as np
import pytest

from lazyx.bench import harness, report
from lazyx.bench import workloads as wl
from lazyx.cli import run


def test_bench_quick_writes_json_table_and_agreeing_values(tmp_path, capsys):
    pytest.importorskip("jax")
    path = tmp_path / "bench.json"
    assert run(["bench", "--quick", "--threads", "1", "--systems", "numpy-eager,jax.jit",
                "--workloads", "W4", "--json", str(path)]) == 0
    data = json.loads(path.read_text())
    assert data["machine"]["cpus"] >= 1
    rows = {r["system"]: r for r in data["results"]}
    assert set(rows) == {"numpy-eager", "jax.jit"}
    for r in rows.values():
        assert r["workload"] == "W4" and r["median_ms"] > 0 and r["first_ms"] > 0
    # The same math: both systems' results equal the chain computed here with NumPy.
    x = wl.chain_input("W4")
    expected = float(np.sum(wl.run_chain(x, wl.W4_CHAIN, {"tanh": np.tanh})))
    for r in rows.values():
        np.testing.assert_allclose(r["values"], expected, rtol=1e-5)
    out = capsys.readouterr().out
    assert "| W4 | numpy-eager |" in out and "Targets (this run):" in out


def test_bench_first_step_runs_cold_warm_and_tiered_processes(capsys):
    pytest.importorskip("jax")
    from lazyx.bench.first_step import run_first_step
    runs = run_first_step(systems=["lazyx-numpy"], workloads=["W1"], threads=1)
    cold, warm, tiered = (runs["lazyx-numpy", mode]["W1"]["lazyx"]
                          for mode in ("cold", "warm", "tiered"))
    assert cold["disk_misses"] >= 1 and cold["disk_hits"] == 0
    assert warm["disk_hits"] >= 1 and warm["disk_misses"] == 0  # the second process found it
    assert warm["xla_compile_seconds_total"] == 0 and warm["lower_seconds_total"] == 0
    assert tiered["interpreted_steps"] >= 1 and tiered["disk_hits"] == tiered["disk_misses"] == 0
    values = [runs["lazyx-numpy", m]["W1"]["values"] for m in ("cold", "warm", "tiered")]
    np.testing.assert_allclose(values[1], values[0], rtol=1e-6)
    np.testing.assert_allclose(values[2], values[0], rtol=1e-4)  # reference, then XLA
    out = capsys.readouterr().out
    assert "| W1 | lazyx-numpy |" in out and "warm " in out and "cold " in out


def test_each_first_step_is_a_workload_alone_in_a_fresh_process(monkeypatch, capsys):
    """A workload run after another in one process finds the runtime started, its entries
    preloaded or the other's compile still running: its first step is not a first step."""
    from lazyx.bench import first_step
    calls = []

    def fake(system, workloads, quick, timeout, log, threads=None, env=None):
        calls.append((system, tuple(workloads), (env or {}).get("LAZYX_CACHE_DIR")))
        r = {"workload": workloads[0], "system": system, "first_ms": 1.0, "median_ms": 1.0}
        log(r)
        return [r]
    monkeypatch.setattr(harness, "run_system_subprocess", fake)
    first_step.run_first_step(systems=["lazyx-numpy"], workloads=["W1", "W2"], threads=1)
    assert all(len(workloads) == 1 for _, workloads, _ in calls)
    assert len(calls) == 2 * 2 + 2 * 3  # jax.jit and NumPy eager; cold, warm, tiered
    folders = {(w, folder) for system, (w,), folder in calls if system == "lazyx-numpy" and folder}
    assert len({folder for _, folder in folders}) == 2  # each workload its own disk cache
    assert "| W2 | lazyx-numpy |" in capsys.readouterr().out


def test_a_system_that_cannot_run_is_reported_not_dropped(monkeypatch):
    monkeypatch.setitem(harness.SYSTEMS, "broken", "numpy")
    import lazyx.bench.systems_numpy as sn

    def broken(workload):
        if workload == "W3":
            raise harness.NotAvailable("no such backend here")
        raise ZeroDivisionError("boom")
    monkeypatch.setitem(sn.SYSTEMS, "broken", broken)
    results = list(harness.run_system_here("broken", ["W3", "W4"], harness.PLANS["quick"]))
    assert [r["na"] for r in results] == ["no such backend here",
                                          "failed: ZeroDivisionError: boom"]
    table = report.markdown(results, harness.machine_info())
    assert "n/a (no such backend here)" in table and "n/a (failed: ZeroDivisionError" in table


def test_numpy_backprop_matches_torch_autograd():
    """numpy-eager's hand-written W2 backward (also lazyx-numpy's) against torch autograd."""
    torch = pytest.importorskip("torch")
    from lazyx.bench.systems_numpy import block_grads
    from lazyx.bench.systems_torch import EncoderBlock, _mse
    params = wl.block_params()
    x, target = wl.block_data()
    loss, numpy_grads = block_grads(np, params, x, target)
    model = EncoderBlock(params)
    torch_loss = _mse(model(torch.from_numpy(x)), torch.from_numpy(target))
    torch_loss.backward()
    np.testing.assert_allclose(float(loss), torch_loss.item(), rtol=1e-5)
    grads = {"ln1_g": model.ln1.weight, "ln1_b": model.ln1.bias, "ln2_g": model.ln2.weight,
             "ln2_b": model.ln2.bias, "w1": model.ff1.weight, "b1": model.ff1.bias,
             "w2": model.ff2.weight, "b2": model.ff2.bias}
    for c in "qkvo":
        grads["w" + c], grads["b" + c] = getattr(model, c).weight, getattr(model, c).bias
    for name, p in grads.items():
        g = p.grad.numpy()
        g = g.T if g.ndim == 2 else g  # torch keeps Linear weights as (out, in)
        np.testing.assert_allclose(numpy_grads[name], g, rtol=1e-3, atol=1e-6, err_msg=name)


def test_unknown_system_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as err:
        run(["bench", "--systems", "numpy-eager,pytorch"])
    assert err.value.code == 2
    assert "unknown systems: pytorch" in capsys.readouterr().err


def test_demo_numpy_lazy_matches_eager(capsys):
    pytest.importorskip("sklearn")
    pytest.importorskip("lazyx.frontends.numpy")
    from lazyx.demo import run_demo
    assert run_demo(frontends=["numpy"], epochs=1) == 0
    out = capsys.readouterr().out
    row = next(line.split() for line in out.splitlines() if line.strip().startswith("numpy"))
    lazy_acc, compiled_acc, eager_acc, compiles = float(row[1]), float(row[2]), float(row[3]), \
        int(row[4])
    assert abs(lazy_acc - eager_acc) <= 0.01 and eager_acc > 0.5
    assert compiled_acc == lazy_acc  # lazyx.compile replays the same program
    assert compiles <= 3  # the step compiles once, the prediction once: no per-step compile


def test_the_replay_targets_are_reported_per_compiled_system():
    """Issue 13's targets for lazyx.compile: W1-W3 within 1.05x of jax.jit, W4 within 3x."""
    def result(workload, system, ms):
        return {"workload": workload, "system": system, "median_ms": ms, "first_ms": 1.0}
    results = [result("W1", "jax.jit", 2.0), result("W1", "lazyx-numpy+compile", 2.1),
               result("W3", "jax.jit", 3.0), result("W3", "lazyx-numpy+compile", 3.2),
               result("W4", "jax.jit", 0.02), result("W4", "lazyx-numpy+compile", 0.05)]
    lines = report.targets(results).splitlines()
    assert "  [met ] lazyx-numpy+compile W1 within 1.05x of jax.jit: 1.05x" in lines
    assert "  [MISS] lazyx-numpy+compile W3 within 1.05x of jax.jit: 1.07x" in lines
    assert "  [met ] lazyx-numpy+compile W4 within 3.0x of jax.jit: 2.50x" in lines
    assert "  [n/a ] lazyx-numpy+compile W2 within 1.05x of jax.jit: -" in lines
    assert "  [n/a ] lazyx-torch+compile W1 within 1.05x of jax.jit: -" in lines


def test_measure_warms_up_again_when_lazyx_was_compiling_in_the_background():
    """A lazy step's warm-up repeats once if a background compile was still running at its
    end (harness._settle): the timed steps then run what the steady state runs."""
    plan = (3, 2, 10.0, 0.0, 0.0)  # 3 timed steps, 2 warm-up steps, no time floors
    for answers, expected in (([False], 1 + 2 + 3), ([True, False], 1 + 2 + 2 + 3)):
        calls, settles = [], iter(answers)

        def step():
            calls.append(1)
            return 1.0
        step.settle = lambda: next(settles)
        harness.measure(step, plan)
        assert len(calls) == expected
