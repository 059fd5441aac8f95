"""Same program, same IR, same numbers: every corpus program through every frontend."""
import numpy as np
import pytest

from corpus import PROGRAMS, make_inputs
from harness import FRONTENDS, available, run_eager, run_lazy

PRESENT = [f for f in FRONTENDS if available(f)]
pytestmark = pytest.mark.skipif(len(PRESENT) < 2, reason="needs at least two frontends")


def _lazy_all(program):
    arrays = make_inputs(program)
    return arrays, {f: run_lazy(program, f, arrays) for f in PRESENT if f in program.frontends}


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_same_graph_same_numbers(program):
    arrays, lazy = _lazy_all(program)
    hashes = {f: digest for f, (digest, _) in lazy.items()}
    assert len(set(hashes.values())) == 1, f"{program.name}: graph hashes differ: {hashes}"
    first = next(iter(lazy.values()))[1]
    for f, (_, result) in lazy.items():
        assert result.shape == first.shape and result.dtype == first.dtype, f
        np.testing.assert_allclose(result, first, rtol=program.rtol, atol=program.atol,
                                   err_msg=f"{program.name}: {f} differs from the others")
    if program.eager_comparable:
        for f, (_, result) in lazy.items():
            eager = run_eager(program, f, arrays)
            assert result.dtype == eager.dtype, f"{program.name}/{f}: {result.dtype} vs {eager.dtype}"
            np.testing.assert_allclose(result, eager, rtol=program.rtol, atol=program.atol,
                                       err_msg=f"{program.name}: lazy {f} differs from eager {f}")
    else:
        assert np.all((first >= 0) & (first < 1)), "uniform draws must lie in [0, 1)"


def test_a_changed_program_changes_the_hash():
    """The check can fail: one frontend's program altered by one op gives another hash."""
    program = next(p for p in PROGRAMS if p.name == "elementwise_chain")
    arrays = make_inputs(program)
    base, _ = run_lazy(program, PRESENT[0], arrays)
    altered = type(program)(program.name, program.inputs)
    original = getattr(program, PRESENT[1])
    setattr(altered, PRESENT[1], lambda mod, x: original(mod, x) * 1.0 + x)
    changed, _ = run_lazy(altered, PRESENT[1], arrays)
    assert changed != base
    same, _ = run_lazy(program, PRESENT[1], arrays)
    assert same == base


def test_new_data_same_hash_other_shape_other_hash():
    program = next(p for p in PROGRAMS if p.name == "softmax")
    arrays = make_inputs(program)
    for f in PRESENT:
        h1, _ = run_lazy(program, f, arrays)
        h2, _ = run_lazy(program, f, [a * 3 for a in arrays])
        h3, _ = run_lazy(program, f, [np.ones((2, 5), np.float32)])
        assert h1 == h2 and h1 != h3, f
