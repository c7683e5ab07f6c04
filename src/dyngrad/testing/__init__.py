"""``torch.testing``: ``assert_close`` (and the deprecated ``assert_allclose``) to compare
results with PyTorch's tolerances and messages, and ``make_tensor`` to make random inputs."""
from ._comparison import assert_allclose, assert_close
from ._creation import make_tensor

__all__ = ["assert_close", "assert_allclose", "make_tensor"]
