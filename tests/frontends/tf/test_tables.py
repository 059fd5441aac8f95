"""The TF API table refuses a second lowering for an API, naming both places."""
import re

import pytest

tf = pytest.importorskip("tensorflow")
import lazyx.frontends.tf  # noqa: E402,F401  (fills the table)
from lazyx.core.tables import DuplicateEntry  # noqa: E402
from lazyx.frontends.tf import registry  # noqa: E402


def test_a_second_lowering_of_an_api_is_refused():
    before = registry.LOWERED["tf.math.add"]
    with pytest.raises(DuplicateEntry) as err:
        @registry.lower(tf.math.add, "x", "y")
        def _again(x, y, name=None):
            return None
    places = re.findall(r"\S+\.py:\d+", str(err.value))
    assert "'tf.math.add'" in str(err.value) and len(places) == 2
    assert places[0].endswith("test_tables.py:15") and "frontends/tf/api_math.py" in places[1]
    assert registry.LOWERED["tf.math.add"] is before
    x = lazyx.frontends.tf.constant([1.0, 2.0])
    assert tf.math.add(x, x).numpy().tolist() == [2.0, 4.0]  # TF's dispatcher still lowers it


def test_a_second_varargs_lowering_is_refused():
    with pytest.raises(DuplicateEntry, match="tf.einsum"):
        registry.lower_varargs(tf.einsum)(lambda *args: None)
