"""Pooling and padding layers."""
from __future__ import annotations

from .. import functional as F
from .module import Module


class _MaxPoolNd(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """Max over sliding windows of (N, C, L) input."""

    def forward(self, input):
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class MaxPool2d(_MaxPoolNd):
    """Max over sliding windows of (N, C, H, W) input."""

    def forward(self, input):
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class AvgPool1d(Module):
    """Mean over sliding windows of (N, C, L) input."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True):
        super().__init__()
        self.kernel_size = F._pair(kernel_size, 1)
        self.stride = F._pair(stride if stride is not None else kernel_size, 1)
        self.padding = F._pair(padding, 1)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input):
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(Module):
    """Mean over sliding windows of (N, C, H, W) input."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input):
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AdaptivePool(Module):
    _fn = None

    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size = output_size
        if return_indices or type(self).__name__.startswith("AdaptiveMax"):
            self.return_indices = return_indices

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptivePool):
    """Mean over adaptive windows of (N, C, L) input to a fixed length."""

    def forward(self, input):
        return F.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_AdaptivePool):
    """Mean over adaptive windows of (N, C, H, W) input to a fixed size."""

    def forward(self, input):
        return F.adaptive_avg_pool2d(input, self.output_size)


class AdaptiveMaxPool1d(_AdaptivePool):
    """Max over adaptive windows of (N, C, L) input to a fixed length."""

    def forward(self, input):
        return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool2d(_AdaptivePool):
    """Max over adaptive windows of (N, C, H, W) input to a fixed size."""

    def forward(self, input):
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)


class LPPool2d(Module):
    """(sum of x^p over each window)^(1/p)."""

    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def forward(self, input):
        return F.lp_pool2d(input, float(self.norm_type), self.kernel_size, self.stride,
                           self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")


# --- padding --------------------------------------------------------------------------
class _PadNd(Module):
    _n = 2
    _mode = "constant"

    def __init__(self, padding, value=None):
        super().__init__()
        n = self._n
        if isinstance(padding, int):
            padding = (padding,) * (2 * n)
        self.padding = tuple(padding)
        if self._mode == "constant":
            self.value = 0.0 if value is None else value

    def forward(self, input):
        if self._mode == "constant":
            return F.pad(input, self.padding, "constant", self.value)
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        if self._mode == "constant" and type(self).__name__.startswith("Constant"):
            return f"padding={self.padding}, value={self.value}"
        return f"{self.padding}"


def _pad_cls(name, n, mode, doc):
    def __init__(self, padding, value=None):
        _PadNd.__init__(self, padding, value)

    if name.startswith("Constant"):
        def __init__(self, padding, value):  # noqa: F811 - ConstantPadNd requires the value
            _PadNd.__init__(self, padding, value)
    elif name.startswith("Zero"):
        def __init__(self, padding):  # noqa: F811
            _PadNd.__init__(self, padding, 0.0)
    else:
        def __init__(self, padding):  # noqa: F811
            _PadNd.__init__(self, padding)
    return type(name, (_PadNd,), {"_n": n, "_mode": mode, "__init__": __init__, "__doc__": doc,
                                  "__module__": __name__})


ZeroPad1d = _pad_cls("ZeroPad1d", 1, "constant", "Pad the last dimension with zeros.")
ZeroPad2d = _pad_cls("ZeroPad2d", 2, "constant", "Pad the last two dimensions with zeros.")
ConstantPad1d = _pad_cls("ConstantPad1d", 1, "constant", "Pad the last dimension with a value.")
ConstantPad2d = _pad_cls("ConstantPad2d", 2, "constant", "Pad the last two dims with a value.")
ConstantPad3d = _pad_cls("ConstantPad3d", 3, "constant", "Pad the last three dims with a value.")
ReflectionPad1d = _pad_cls("ReflectionPad1d", 1, "reflect", "Reflect-pad the last dimension.")
ReflectionPad2d = _pad_cls("ReflectionPad2d", 2, "reflect", "Reflect-pad the last two dims.")
ReplicationPad1d = _pad_cls("ReplicationPad1d", 1, "replicate", "Edge-pad the last dimension.")
ReplicationPad2d = _pad_cls("ReplicationPad2d", 2, "replicate", "Edge-pad the last two dims.")
CircularPad1d = _pad_cls("CircularPad1d", 1, "circular", "Wrap-pad the last dimension.")
CircularPad2d = _pad_cls("CircularPad2d", 2, "circular", "Wrap-pad the last two dims.")
