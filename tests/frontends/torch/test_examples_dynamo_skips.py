"""pytorch/examples' mnist_rnn under torch.compile(backend="lazyx"): Dynamo cannot trace its
LSTM and skips the whole forward, which then runs eagerly at every call. lazyx reported
nothing (0 compiles, 0 graph breaks, "no problems found"); the skip is now a graph break."""
import io

import pytest
import torch
import torch.nn as nn

import lazyx
import lazyx.frontends.torch as lt


pytestmark = pytest.mark.usefixtures("fresh_dynamo")  # (conftest.py)


class _RNNFirst(nn.Module):  # mnist_rnn's Net, trimmed: the LSTM comes first
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(7, 8, batch_first=True)
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.fc(out[:, -1, :])


def test_function_dynamo_skips_is_a_counted_graph_break():
    torch.manual_seed(0)
    model = _RNNFirst()
    x = torch.randn(2, 5, 7)
    said = io.StringIO()
    with lazyx.explain(said):
        got = torch.compile(model, backend=lt.dynamo_backend)(x)
        got2 = torch.compile(model, backend=lt.dynamo_backend)(x)  # skipped again: not recounted
    torch.testing.assert_close(got, model(x))
    torch.testing.assert_close(got2, got)
    m = lazyx.metrics()
    assert m["graph_breaks"] == 1, m
    (reason,) = m["graph_break_reasons"]
    assert "skipped the whole function" in reason and "test_examples_dynamo_skips.py:" in reason
    assert "lazyx: graph break at" in said.getvalue()
    assert "graph breaks: torch.compile split the code 1 time" in lazyx.analysis()


def test_other_backends_skips_are_not_lazyxs():
    model = _RNNFirst()
    torch.compile(model, backend="eager")(torch.randn(2, 5, 7))
    assert lazyx.metrics()["graph_breaks"] == 0
