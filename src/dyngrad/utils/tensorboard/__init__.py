"""``dyngrad.utils.tensorboard``: ``SummaryWriter`` as in ``torch.utils.tensorboard``, writing
event files with the ``tensorboard`` package (``pip install tensorboard``, or the
``dyngrad[tensorboard]`` extra).  ``import dyngrad`` does not import this module.
"""


def _version_tuple(v):
    out = []
    for part in str(v).split(".")[:3]:
        digits = ""
        for ch in part:
            if not ch.isdigit():
                break
            digits += ch
        out.append(int(digits or 0))
    return tuple(out)


try:
    import tensorboard
except ImportError as e:
    raise ImportError("TensorBoard logging requires TensorBoard version 1.15 or above; it is "
                      "not installed: pip install tensorboard (or pip install "
                      "'dyngrad[tensorboard]')") from e

if not hasattr(tensorboard, "__version__") or _version_tuple(tensorboard.__version__) < (1, 15):
    raise ImportError("TensorBoard logging requires TensorBoard version 1.15 or above: "
                      "pip install -U tensorboard")

del tensorboard

from tensorboard.summary.writer.record_writer import RecordWriter  # noqa: E402

from .writer import FileWriter, SummaryWriter  # noqa: E402

__all__ = ["FileWriter", "RecordWriter", "SummaryWriter"]
