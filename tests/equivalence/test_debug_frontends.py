"""The debugging tools seen through every frontend: the line that made a value, the line
whose .item() synced, and a recompile explained by the changed input's shapes."""
import io
import os
import re

import numpy as np
import pytest

import lazyx
from harness import FRONTENDS, available
from lazyx.core import runtime
from lazyx.core.explain import Explainer

HERE = os.path.basename(__file__)


def _line():
    import inspect
    return inspect.currentframe().f_back.f_lineno


def _scaled_sum(frontend, rows):
    """(lazy sum of x * 2 + 1, the line that built it)."""
    x = np.arange(rows * 3, dtype=np.float32).reshape(rows, 3)
    if frontend == "numpy":
        import lazyx.frontends.numpy as lnp
        s = np.sum(lnp.asarray(x) * 2.0 + 1.0); line = _line()  # noqa: E702
        return s, line
    if frontend == "torch":
        import torch
        import lazyx.frontends.torch as lt
        s = (torch.from_numpy(x).to(lt.device) * 2.0 + 1.0).sum(); line = _line()  # noqa: E702
        return s, line
    import tensorflow as tf
    import lazyx.frontends.tf as ltf
    s = tf.reduce_sum(ltf.constant(x) * 2.0 + 1.0); line = _line()  # noqa: E702
    return s, line


@pytest.mark.parametrize("frontend", [f for f in FRONTENDS if available(f)])
def test_source_lines_syncs_and_recompiles_through_each_frontend(frontend):
    lazyx.reset_metrics()
    runtime.CACHE.clear()  # the graphs are the same in every frontend: start cold
    with Explainer(io.StringIO()) as explainer:
        s, made_at = _scaled_sum(frontend, 4)
        text = lazyx.ir_text(s)
        assert f"{HERE}:{made_at}" in text and "reduce_sum" in text, text
        value = float(s) if frontend == "tf" else s.item(); read_at = _line()  # noqa: E702
        assert value == pytest.approx(float((np.arange(12) * 2 + 1).sum()))
        s2, _ = _scaled_sum(frontend, 5)
        float(s2) if frontend == "tf" else s2.item()
    cause, source, _ = explainer.syncs[0]
    assert cause == "item" and os.path.basename(source[0]) == HERE and source[1] == read_at
    assert any(where.endswith(f"{HERE}:{read_at}") for where in lazyx.metrics()["sync_sources"])
    why = explainer.recompiles[-1][0]
    assert why is not None and re.search(r"changed shape: float32\[4,3\] -> float32\[5,3\]", why), why
