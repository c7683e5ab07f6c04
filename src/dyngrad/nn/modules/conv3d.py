"""3-d convolution layers: ``Conv3d`` and ``ConvTranspose3d``."""
from __future__ import annotations

from .. import functional as F
from .conv import _Conv, _ConvTransposeNd, _LazyConvXdMixin
from .lazy import _PADDING_MODE, _annotate, _size_t


class Conv3d(_Conv):
    """3-d convolution over (N, C, D, H, W) input."""

    _nd = 3
    _conv = staticmethod(F.conv3d)


class ConvTranspose3d(_ConvTransposeNd):
    """3-d transposed convolution over (N, C, D, H, W) input."""

    _nd = 3

    def forward(self, input, output_size=None):
        op = self._output_padding(input, output_size)
        return F.conv_transpose3d(input, self.weight, self.bias, self.stride, self.padding, op,
                                  self.groups, self.dilation)


class LazyConv3d(_LazyConvXdMixin, Conv3d):
    """A ``Conv3d`` whose ``in_channels`` is read from the first input."""

    cls_to_become = Conv3d

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode="zeros", device=None,
                 dtype=None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False,
                         padding_mode)
        self._lazy_init(out_channels, bias, device, dtype)


class LazyConvTranspose3d(_LazyConvXdMixin, ConvTranspose3d):
    """A ``ConvTranspose3d`` whose ``in_channels`` is read from the first input."""

    cls_to_become = ConvTranspose3d

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False,
                         dilation, padding_mode)
        self._lazy_init(out_channels, bias, device, dtype)


_annotate(LazyConv3d, out_channels=int, kernel_size=_size_t(3), stride=_size_t(3), padding=_size_t(3), dilation=_size_t(3), groups=int, bias=bool, padding_mode=_PADDING_MODE)
_annotate(LazyConvTranspose3d, out_channels=int, kernel_size=_size_t(3), stride=_size_t(3), padding=_size_t(3), output_padding=_size_t(3), groups=int, bias=bool, dilation=_size_t(3), padding_mode=_PADDING_MODE)
