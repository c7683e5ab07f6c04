"""Rows for resize_ and resize_as_ (src/dyngrad/ops/storage.py).  PyTorch refuses to resize a
tensor that requires grad, so the rows resize a detached copy (not differentiable); resizing
to the same number of elements keeps the values in row-major order."""
import numpy as np

from tests.optable import OpInfo, S

ROWS = [
    OpInfo("resize_", lambda a: a.detach().clone().resize_(2, 6), lambda a: a.reshape(2, 6),
           [S((3, 4)), S((12,))], grad=False),
    OpInfo("resize_shrink", lambda a: a.detach().clone().resize_(5), lambda a: a.reshape(-1)[:5],
           [S((3, 4))], grad=False),
    OpInfo("resize_as_", lambda a, b: a.detach().clone().resize_as_(b),
           lambda a, b: a.reshape(-1)[:b.size].reshape(b.shape), [S((3, 4), (2, 3)),
                                                                 S((3, 4), (4, 3))],
           grad=False),
    OpInfo("resize_empty", lambda a: a.detach().clone().resize_(0, 3), lambda a: np.zeros((0, 3)),
           [S((3, 4))], grad=False),
]
