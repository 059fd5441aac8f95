"""index_add / index_add_ with a negative index: eager CPU torch refuses it (unlike
index_fill, which counts from the end); lazyx used to wrap it and add into the last rows. A
known index (made from a list, uploaded) now gets eager's error, type and text."""
import pytest
import torch

import lazyx.frontends.torch as lt


def _run(device, shape, dim, index, source_shape, in_place):
    x = torch.arange(float(torch.Size(shape).numel())).reshape(shape).to(device)
    idx, src = torch.tensor(index).to(device), torch.ones(source_shape).to(device)
    try:
        if in_place:
            x.index_add_(dim, idx, src, alpha=2)
            return x.cpu()
        return x.index_add(dim, idx, src, alpha=2).cpu()
    except (IndexError, RuntimeError) as err:
        return type(err), str(err)


@pytest.mark.parametrize("in_place", [False, True])
@pytest.mark.parametrize("shape,dim,index,source_shape", [
    ((4, 2), 0, [1, -1], (2, 2)),
    ((4, 2), 0, [-4], (1, 2)),
    ((4, 2), 1, [-2, 0], (4, 2)),
    ((4, 2), -1, [-1], (4, 1)),
    ((4,), 0, [-1, 2], (2,)),
    ((), 0, -1, ()),
    ((4, 2), 0, [3, 0, 3], (3, 2)),  # in range: repeats accumulate
    ((4, 2), 0, [4], (1, 2)),
])
def test_index_add_negative_index_matches_eager(shape, dim, index, source_shape, in_place):
    want = _run("cpu", shape, dim, index, source_shape, in_place)
    got = _run(lt.device, shape, dim, index, source_shape, in_place)
    if isinstance(want, torch.Tensor):
        torch.testing.assert_close(got, want)
    else:
        assert got == want


def test_index_fill_still_counts_from_the_end():
    x = torch.zeros(4, 2)
    want = x.index_fill(0, torch.tensor([-1]), 1.0)
    got = x.to(lt.device).index_fill(0, torch.tensor([-1]).to(lt.device), 1.0).cpu()
    torch.testing.assert_close(got, want)
