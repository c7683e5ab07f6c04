"""``DataParallel`` and ``data_parallel`` as PyTorch's on a machine without GPUs: the wrapper
keeps the module as ``.module`` (state-dict keys ``module.*``), ``device_ids`` is ``[]`` whatever
was asked, and the forward runs the wrapped module unchanged."""
from __future__ import annotations

from ..modules.module import Module


class DataParallel(Module):
    """Runs ``module`` as it is (no GPUs to scatter over): ``DataParallel(m)(x) == m(x)``."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        # PyTorch without an accelerator keeps only these two attributes and checks nothing
        self.module = module
        self.device_ids = []

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        raise RuntimeError("no available devices were found")  # pragma: no cover


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0,
                  module_kwargs=None):
    """The functional form; without an accelerator PyTorch cannot pick a device type."""
    raise RuntimeError("device type could not be determined")
