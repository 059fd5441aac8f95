"""Bad calls through the TF frontend raise, at the call, what eager TF raises for them.

A corpus of >= 50 calls (issue 18): shapes, dtypes, axes, out-of-range host indices, integer
division by zero, huge allocations, bad conversions. Each line runs on eager TF
(C = tf.constant), where it must raise, and on lazy tensors (C = ltf.constant), where it must
raise an instance of TF's exception type. (tf.nn.max_pool2d with a window larger than its input
is left out: TF 2.21's own eager kernel dies of SIGFPE there. Two huge allocations only: eager
TF's allocator retries each for 10 s before it raises.)
`python tests/frontends/tf/test_bad_calls.py` prints the row of docs/errors.md's table.
"""
import os
import sys

import numpy as np
import pytest
import tensorflow as tf

import lazyx.frontends.tf as ltf
from lazyx.frontends.tf.tensor import LazyTensor

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
import bad_calls  # noqa: E402  (tests/bad_calls.py: the shared judge)

CALLS = [
    ("add shapes", "C([[1., 2, 3]]) + C([[1., 2]])"),
    ("add dtypes", "C([1., 2]) + C([1, 2])"),
    ("multiply shapes", "tf.multiply(C([1., 2, 3]), C([1., 2]))"),
    ("maximum dtypes", "tf.maximum(C([1., 2]), C([1, 2]))"),
    ("matmul inner", "tf.matmul(C([[1., 2, 3]]), C([[1., 2]]))"),
    ("matmul rank", "tf.matmul(C([1., 2]), C([[1., 2]]))"),
    ("matmul dtypes", "tf.matmul(C([[1., 2]]), C([[1], [2]]))"),
    ("tensordot axes", "tf.tensordot(C([[1., 2]]), C([[1., 2, 3]]), axes=[[1], [1]])"),
    ("einsum shapes", "tf.einsum('ij,jk->ik', C([[1., 2]]), C([[1., 2]]))"),
    ("concat ranks", "tf.concat([C([1., 2]), C([[1., 2]])], 0)"),
    ("concat shapes", "tf.concat([C([[1., 2]]), C([[1., 2, 3]])], 0)"),
    ("concat axis", "tf.concat([C([1., 2]), C([1., 2])], 3)"),
    ("concat dtypes", "tf.concat([C([1., 2]), C([1, 2])], 0)"),
    ("stack shapes", "tf.stack([C([1., 2]), C([1., 2, 3])])"),
    ("reshape count", "tf.reshape(C([1., 2, 3]), (2, 2))"),
    ("segment_sum unsorted ids", "tf.math.segment_sum(C([[1., 2], [3, 4], [5, 6]]), [1, 0, 0])"),
    ("segment_max negative id", "tf.math.segment_max(C([1., 2, 3]), [-1, 0, 0])"),
    ("unsorted_segment_sum id past num_segments",
     "tf.math.unsorted_segment_sum(C([1., 2, 3]), [0, 5, 1], 3)"),
    ("unsorted_segment_max id past num_segments",
     "tf.math.unsorted_segment_max(C([[1., 2], [3, 4]]), [0, 2], 2)"),
    ("reshape two -1", "tf.reshape(C([1., 2, 3, 4]), (-1, -1))"),
    ("broadcast_to", "tf.broadcast_to(C([1., 2, 3]), (2, 4))"),
    ("transpose perm", "tf.transpose(C([[1., 2]]), (0, 0))"),
    ("transpose rank", "tf.transpose(C([[1., 2]]), (0, 1, 2))"),
    ("squeeze size", "tf.squeeze(C([[1., 2]]), axis=1)"),
    ("squeeze axis", "tf.squeeze(C([[1., 2]]), axis=4)"),
    ("expand_dims", "tf.expand_dims(C([[1., 2]]), 5)"),
    ("split unequal", "tf.split(C([1., 2, 3]), 2)"),
    ("reverse axis", "tf.reverse(C([1., 2]), [3])"),
    ("roll axis", "tf.roll(C([1., 2]), 1, axis=5)"),
    ("tile rank", "tf.tile(C([1., 2]), [1, 2])"),
    ("pad rank", "tf.pad(C([1., 2]), [[1, 1], [1, 1]])"),
    ("slice bounds", "tf.slice(C([1., 2, 3]), [1], [5])"),
    ("reduce_sum axis", "tf.reduce_sum(C([[1., 2]]), axis=2)"),
    ("reduce_mean axis", "tf.reduce_mean(C([[1., 2]]), axis=-3)"),
    ("reduce_max axis", "tf.reduce_max(C([[1., 2]]), axis=3)"),
    ("argmax axis", "tf.argmax(C([1., 2]), axis=1)"),
    ("cumsum axis", "tf.cumsum(C([1., 2]), axis=1)"),
    ("softmax axis", "tf.nn.softmax(C([[1., 2]]), axis=2)"),
    ("log_softmax axis", "tf.nn.log_softmax(C([[1., 2]]), axis=-3)"),
    ("sort axis", "tf.sort(C([[1., 2]]), axis=2)"),
    ("argsort axis", "tf.argsort(C([[1., 2]]), axis=2)"),
    ("top_k k", "tf.math.top_k(C([1., 2, 3]), 5)"),
    ("gather", "tf.gather(C([1., 2, 3]), [0, 7])"),
    ("gather neg", "tf.gather(C([1., 2, 3]), [-1])"),
    ("gather axis", "tf.gather(C([[1., 2, 3]]), [4], axis=1)"),
    ("gather lazy idx", "tf.gather(C([1., 2, 3]), C([0, 7]))"),
    ("gather float idx", "tf.gather(C([1., 2, 3]), C([0., 1]))"),
    ("gather_nd", "tf.gather_nd(C([[1., 2], [3, 4]]), [[0, 5]])"),
    ("gather_nd lazy", "tf.gather_nd(C([[1., 2], [3, 4]]), C([[2, 0]]))"),
    ("getitem int", "C([1., 2, 3])[3]"),
    ("getitem neg", "C([1., 2, 3])[-4]"),
    ("getitem too many", "C([1., 2, 3])[0, 0]"),
    ("one_hot float", "tf.one_hot(C([0., 1]), 3)"),
    ("scatter_nd", "tf.tensor_scatter_nd_update(C([1., 2, 3]), [[5]], C([1.]))"),
    ("scatter_nd lazy", "tf.tensor_scatter_nd_add(C([1., 2, 3]), C([[5]]), C([1.]))"),
    ("embedding_lookup", "tf.nn.embedding_lookup(C([[1., 2], [3, 4]]), C([0, 2]))"),
    ("sparse xent labels", "tf.nn.sparse_softmax_cross_entropy_with_logits(labels=C([0, 5]), logits=C([[1., 2], [3, 4]]))"),
    ("sparse xent shapes", "tf.nn.sparse_softmax_cross_entropy_with_logits(labels=C([0, 1, 1]), logits=C([[1., 2], [3, 4]]))"),
    ("xent shapes", "tf.nn.softmax_cross_entropy_with_logits(labels=C([[0., 1, 0]]), logits=C([[1., 2]]))"),
    ("floordiv int zero", "tf.math.floordiv(C([3, 5]), C([0, 1]))"),
    ("truncatediv zero", "tf.truncatediv(C([3, 5]), C([0, 1]))"),
    ("floormod zero", "tf.math.floormod(C([3, 5]), C([0, 1]))"),
    ("// python zero", "C([3, 5]) // 0"),
    ("% python zero", "C([3, 5]) % 0"),
    ("bitwise float", "tf.bitwise.bitwise_and(C([1., 2]), C([1., 2]))"),
    ("shift float", "tf.bitwise.left_shift(C([1., 2]), C([1., 2]))"),
    ("sqrt int", "tf.sqrt(C([1, 2]))"),
    ("exp int", "tf.exp(C([1, 2]))"),
    ("cast bad", "tf.cast(C([1., 2]), 'float8')"),
    # huge: past a 47-bit address space, so eager TF fails even where the kernel overcommits
    ("zeros_like huge", "tf.broadcast_to(C(1.), (10**15,))"),
    ("tile huge", "tf.tile(C([1., 2]), [10**15])"),
    ("conv2d channels", "tf.nn.conv2d(tf.zeros((1, 5, 5, 3)) + C(0.), C(tf.zeros((3, 3, 2, 4))), 1, 'VALID')"),
    ("conv2d padding", "tf.nn.conv2d(C(tf.zeros((1, 5, 5, 3))), C(tf.zeros((3, 3, 3, 4))), 1, 'BAD')"),
    ("dense shapes", "tf.linalg.matvec(C([[1., 2, 3]]), C([1., 2]))"),
    ("where shapes", "tf.where(C([True, False]), C([1., 2, 3]), C([1., 2]))"),
    ("clip dtypes", "tf.clip_by_value(C([1., 2]), C(0), C(1))"),
    ("bool many", "bool(C([1., 2]))"),
    ("float many", "float(C([1., 2]))"),
    ("int many", "int(C([1, 2]))"),
]


def run(source, lazy):
    return eval(source, dict(tf=tf, np=np, C=ltf.constant if lazy else tf.constant))


def force(result):
    for r in result if isinstance(result, (tuple, list)) else [result]:
        if isinstance(r, (tf.Tensor, LazyTensor)):
            np.asarray(r)


def test_corpus_is_big_enough():
    assert len(CALLS) >= 50 and len({name for name, _ in CALLS}) == len(CALLS)


@pytest.mark.parametrize("source", [s for _, s in CALLS], ids=[n for n, _ in CALLS])
def test_raises_at_the_call_like_tf(source):
    kind, eager, lazy = bad_calls.judge(run, force, source)
    assert kind == bad_calls.OUTCOMES[0], (kind, repr(eager), repr(lazy))


if __name__ == "__main__":
    print(bad_calls.table("TF", CALLS, run, force))
