"""3-d convolution layers: ``Conv3d`` and ``ConvTranspose3d``."""
from __future__ import annotations

from .. import functional as F
from .conv import _Conv, _ConvTransposeNd


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
