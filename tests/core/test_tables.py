"""Registries refuse a second entry for a key, naming both places (DESIGN.md principle 12)."""
import ast
import pathlib
import re

import pytest

import lazyx
from lazyx.backends import reference
from lazyx.core import autodiff, ops
from lazyx.core.tables import DuplicateEntry, Table

_PLACE = r"\S+\.py:\d+"


def _places(err):
    """The file:line places an error names (the second registration first, then the first)."""
    return re.findall(_PLACE, str(err.value))


def test_table_refuses_a_second_entry_naming_both_lines():
    table = Table("demo")
    table["a"] = 1
    first = f"test_tables.py:{_line() - 1}"
    with pytest.raises(DuplicateEntry) as err:
        table["a"] = 2
    second = f"test_tables.py:{_line() - 1}"
    assert "demo" in str(err.value) and "'a'" in str(err.value)
    again, then = _places(err)
    assert again.endswith(second) and then.endswith(first)
    assert table["a"] == 1  # the first entry stands


def _line():
    import sys
    return sys._getframe(1).f_lineno


@pytest.mark.parametrize("how", ["update", "setdefault-new", "ior", "add"])
def test_every_way_in_refuses(how):
    table = Table("demo", {"a": 1})
    with pytest.raises(DuplicateEntry, match="second entry for 'a'"):
        if how == "update":
            table.update({"b": 2, "a": 3})
        elif how == "ior":
            table |= {"a": 3}
        elif how == "add":
            table.add("a", 3)
        else:
            table.update(Table("other", {"a": 3}))
    assert table.setdefault("a", 5) == 1  # an existing key: read, never replaced


def test_merging_keeps_the_other_tables_places():
    inner = Table("inner", {"x": 1})
    outer = Table("outer", inner)
    assert outer.where["x"] == inner.where["x"]


def test_a_second_primitive_of_the_same_name_is_refused():
    def exp(x):
        return x.shape, x.dtype
    with pytest.raises(DuplicateEntry) as err:
        ops.primitive(exp)
    assert "'exp'" in str(err.value)
    assert len(_places(err)) == 2 and "core/ops.py" in _places(err)[1]
    assert ops.OPS["exp"] is ops.exp  # the real op is untouched


def test_a_second_gradient_rule_is_refused():
    with pytest.raises(DuplicateEntry) as err:
        autodiff.rule("add")(lambda n, g: (g, g))
    again, first = _places(err)
    assert again.endswith(f"test_tables.py:{_line() - 2}") and "core/autodiff.py" in first
    assert autodiff.VJP["add"] is not None


def test_the_reference_backend_table_refuses_a_second_lowering():
    with pytest.raises(DuplicateEntry) as err:
        reference.TABLE["exp"] = lambda x: x
    assert "reference" in str(err.value) and len(_places(err)) == 2


def test_primitives_are_names_a_reader_can_find():
    """Every op in the op set is spelled in core/ops.py as `def name` or `name = ...`."""
    source = (pathlib.Path(ops.__file__)).read_text()
    defined = set(re.findall(r"^def (\w+)\(", source, re.M)) | \
        set(re.findall(r"^(\w+) = ", source, re.M))
    missing = [name for name in ops.OPS
               if not {name, name + "_"} & defined or getattr(ops, name, None) is None
               and getattr(ops, name + "_", None) is None]
    assert not missing, missing
    assert "globals()" not in source


def _repeated_literal_keys(path):
    """Keys written twice in one dict literal: Python keeps the last silently."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Dict):
            seen = {}
            for key in node.keys:
                if key is None:  # a ** unpacking
                    continue
                text = ast.unparse(key)
                if text in seen:
                    found.append(f"{path.name}:{key.lineno} repeats {text} "
                                 f"(first at line {seen[text]})")
                seen.setdefault(text, key.lineno)
    return found


def test_no_dict_literal_in_the_package_repeats_a_key():
    root = pathlib.Path(lazyx.__file__).parent
    files = [p for p in root.rglob("*.py") if "tests" not in p.relative_to(root).parts]
    assert len(files) > 50
    repeated = [line for p in files for line in _repeated_literal_keys(p)]
    assert not repeated, repeated


def test_the_literal_check_can_fail(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text('TABLE = {\n    "exp": 1,\n    "log": 2,\n    "exp": 3,\n}\n')
    assert _repeated_literal_keys(bad) == ['bad.py:4 repeats \'exp\' (first at line 2)']
