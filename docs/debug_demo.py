"""The program behind docs/debugging.md (core API; a frontend tensor works the same way)."""
import numpy as np

import lazyx
from lazyx.core import ops, runtime


def batch_loss(x, w):
    h = ops.dot_general(x, w, contracting_dimensions=((1,), (0,)))
    return ops.reduce_sum(ops.mul(h, h), axes=(0, 1))


w = runtime.from_host(np.ones((4, 2), np.float32))
with lazyx.profile("trace.json"):
    for rows in (8, 8, 8, 5):                       # the last batch is short
        x = runtime.from_host(np.ones((rows, 4), np.float32))
        loss = runtime.LazyHandle(batch_loss(x, w))
        if rows == 5:
            print(lazyx.ir_text(loss))
        print(runtime.to_host(loss, cause="item"))  # what loss.item() does in a frontend
