import pytest

torch = pytest.importorskip("torch")
