"""The sharding_constraint primitive on one device: the identity on both backends (with its
gradient), its sharding part of the graph's hash, and nested constraints folding to one."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

from backend_harness import check, leaf
from lazyx.core import autodiff, ops
from lazyx.core.sharding import MeshSpec, Sharding, make_sharding



def _mesh(shape=(1, 1)):
    return MeshSpec(shape, ("data", "model"), range(int(np.prod(shape))))


@given(st.sampled_from([(), ("data",), (None, "model"), ("data", "model"),
                        (("data", "model"),)]),
       st.sampled_from(["float32", "int32", "bool"]))
def test_constraint_is_the_identity(spec, dtype):
    x = np.arange(12).reshape(3, 4).astype(dtype)
    node = leaf(x)
    out = ops.sharding_constraint(node, sharding=make_sharding(_mesh(), spec, node.shape))
    assert (out.shape, out.dtype) == (node.shape, node.dtype)
    check([ops.mul(out, out) if dtype != "bool" else ops.and_(out, out)], [x * x if dtype != "bool"
                                                                           else x & x])


def test_constraint_gradient_passes_the_cotangent_on_with_the_same_layout():
    x = leaf(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3))
    layout = make_sharding(_mesh(), ("data",), x.shape)
    y = ops.sharding_constraint(ops.exp(x), sharding=layout)
    (g,) = autodiff.vjp([y], [leaf(np.ones((2, 3), np.float32))], [x])
    assert any(n.op == "sharding_constraint" for n in _ancestors(g))
    check([g], [np.exp(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3))])


def _ancestors(node):
    seen, stack = [], [node]
    while stack:
        n = stack.pop()
        seen.append(n)
        stack.extend(n.inputs)
    return seen


def test_layout_is_part_of_the_structure_and_nested_constraints_fold():
    x = leaf(np.ones((4, 2), np.float32))
    mesh = _mesh((2, 1))
    rows, cols = make_sharding(mesh, ("data",), x.shape), make_sharding(mesh, (None, "data"),
                                                                       x.shape)
    a = ops.sharding_constraint(x, sharding=rows)
    b = ops.sharding_constraint(x, sharding=cols)
    assert a.hash != b.hash and a.hash == ops.sharding_constraint(x, sharding=rows).hash
    nested = ops.sharding_constraint(a, sharding=cols)
    assert nested.inputs[0] is x and nested.attrs["sharding"] == cols
    # trailing Nones do not make another sharding
    assert make_sharding(mesh, ("data", None), x.shape) == rows
    assert Sharding(mesh, ["data"]).spec == ("data",)


def test_a_bad_layout_is_an_error_at_construction():
    x = leaf(np.ones((3, 2), np.float32))
    with pytest.raises(ValueError, match=r"tensor of shape \(3, 2\).*not divisible"):
        ops.sharding_constraint(x, sharding=Sharding(_mesh((2, 1)), ("data",)))
    with pytest.raises(TypeError, match="must be a lazyx Sharding"):
        ops.sharding_constraint(x, sharding=("data",))
