"""The NumPy frontend's tables refuse a second entry for a function, naming both places."""
import re

import numpy as np
import pytest

from lazyx.core.tables import DuplicateEntry
from lazyx.frontends.numpy import _entry, _functions, _ufuncs


@pytest.mark.parametrize("table,key", [(_ufuncs.UFUNCS, np.add), (_functions.FUNCTIONS, np.sum),
                                       (_entry.GUFUNCS, np.matmul), (_entry.REDUCE, np.add),
                                       (_entry.ACCUMULATE, np.add)])
def test_a_second_entry_is_refused(table, key):
    before = table[key]
    with pytest.raises(DuplicateEntry) as err:
        _entry.register(table, key, lambda *args, **kwargs: None)
    places = re.findall(r"\S+\.py:\d+", str(err.value))
    assert len(places) == 2 and places[0].endswith("test_tables.py:17")
    assert "frontends/numpy/" in places[1]
    assert table[key] is before
