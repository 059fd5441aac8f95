"""A representative slice of PyTorch's OpInfo database on lazy tensors (the full run is
scripts/opinfo_report.py; its figures are kept in docs/torch_opinfo.md)."""
import importlib.util
import os

import pytest
import torch

import lazyx.frontends.torch as lt

pytest.importorskip("expecttest")  # torch.testing._internal needs it

_SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "..", "scripts", "opinfo_report.py")
_spec = importlib.util.spec_from_file_location("opinfo_report", _SCRIPT)
report = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(report)

SUBSET = ["add", "sub", "mul", "div", "true_divide", "pow", "exp", "log", "tanh", "sigmoid",
          "abs", "clamp", "where", "maximum", "remainder", "sum", "mean", "amax", "argmax",
          "var", "cumsum", "softmax", "log_softmax", "matmul", "mm", "bmm", "addmm",
          "nn.functional.linear", "nn.functional.conv1d", "nn.functional.conv2d",
          "nn.functional.layer_norm", "nn.functional.gelu", "nn.functional.silu",
          "nn.functional.embedding", "nn.functional.cross_entropy", "nn.functional.mse_loss",
          "cat", "stack", "reshape", "permute", "transpose", "index_select", "gather",
          "scatter_add", "masked_fill", "flip", "nn.functional.pad", "tril", "diagonal",
          "slice_scatter", "select_scatter", "expand", "squeeze", "unsqueeze", "split",
          "nn.functional.scaled_dot_product_attention"]
OPS = report.float32_ops(set(SUBSET))


@pytest.mark.parametrize("name,op", OPS, ids=[name for name, _ in OPS])
def test_opinfo_samples_match_eager_without_fallback(name, op):
    results = report.run_op(op, lt, max_samples=4)
    bad = [r for r in results if r not in ("pass", "skip")]
    assert not bad, bad
