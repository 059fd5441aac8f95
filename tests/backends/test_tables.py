"""Every primitive has exactly one entry in each backend's table (DESIGN: a table per consumer)."""
import pytest

from lazyx.backends import reference
from lazyx.core import ops


def test_reference_table_covers_exactly_the_op_set():
    assert set(ops.OPS) == set(reference.TABLE)


def test_xla_table_covers_exactly_the_op_set():
    pytest.importorskip("jax")
    from lazyx.backends import xla
    assert set(ops.OPS) == set(reference.TABLE) == set(xla.TABLE)


def test_reference_tests_exercise_every_op():
    """Each op name appears in a cross-backend test here, so a new op without a test fails."""
    import pathlib
    source = "".join(p.read_text() for p in pathlib.Path(__file__).parent.glob("test_*.py")
                     if p.name != "test_tables.py")
    groups = {"FLOAT_UNARY_NUMPY": ops.FLOAT_UNARY, "ops.COMPARISONS": ops.COMPARISONS}
    covered = {name for key, names in groups.items() if key in source for name in names}
    missing = [name for name in ops.OPS if name not in covered
               and f'"{name}"' not in source and f"ops.{name}(" not in source
               and f"ops.{name}_(" not in source]
    assert not missing, f"ops without a cross-backend test: {missing}"
