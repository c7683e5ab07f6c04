"""Convolution layers: ``Conv1d``, ``Conv2d``, ``ConvTranspose1d``, ``ConvTranspose2d``."""
from __future__ import annotations


from ..._factories import empty
from .. import functional as F
from .. import init
from ..parameter import Parameter, UninitializedParameter
from .lazy import _PADDING_MODE, LazyModuleMixin, _annotate, _size_t
from .module import Module


def _ntuple(v, n):
    if isinstance(v, (tuple, list)):
        return tuple(v) if len(v) == n else tuple(v) * n if len(v) == 1 else tuple(v)
    return (v,) * n


class _ConvNd(Module):
    """Shared state of the convolution layers, with PyTorch's initialisation and repr."""

    _nd = 2
    _transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None,
                 output_padding=0):
        super().__init__()
        n = self._nd
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise ValueError(f"padding_mode must be one of ['zeros', 'reflect', 'replicate', "
                             f"'circular'], but got padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _ntuple(kernel_size, n)
        self.stride = _ntuple(stride, n)
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 f"{{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
            self.padding = padding
        else:
            self.padding = _ntuple(padding, n)
        self.dilation = _ntuple(dilation, n)
        self.transposed = self._transposed
        self.output_padding = _ntuple(output_padding, n)
        self.groups = groups
        self.padding_mode = padding_mode
        if self._transposed:
            shape = (in_channels, out_channels // groups) + self.kernel_size
        else:
            shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = Parameter(empty(shape, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init._layer_default_(self.weight, self.bias)

    def extra_repr(self) -> str:
        n = self._nd
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * n:
            s += ", padding={padding}"
        if self.dilation != (1,) * n:
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * n:
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__, **{"bias": self.bias})

    def _pad_input(self, input):
        """Explicit padding for the non-zero padding modes (then the convolution pads by 0)."""
        if isinstance(self.padding, str):
            if self.padding == "valid":
                return input, 0
            pads = []
            for k, d in zip(reversed(self.kernel_size), reversed(self.dilation)):
                tot = d * (k - 1)
                pads += [tot // 2, tot - tot // 2]
        else:
            pads = []
            for p in reversed(self.padding):
                pads += [p, p]
        return F.pad(input, pads, mode=self.padding_mode), 0


class _Conv(_ConvNd):
    """Forward of the (non-transposed) convolutions: padding modes other than zeros pad
    first, then ``_conv`` runs with no padding."""

    _conv = None

    def forward(self, input):
        if self.padding_mode != "zeros":
            x, p = self._pad_input(input)
            return self._conv(x, self.weight, self.bias, self.stride, p, self.dilation,
                              self.groups)
        return self._conv(input, self.weight, self.bias, self.stride, self.padding,
                          self.dilation, self.groups)


class Conv1d(_Conv):
    """1-d convolution over (N, C, L) input."""

    _nd = 1
    _conv = staticmethod(F.conv1d)


class Conv2d(_Conv):
    """2-d convolution over (N, C, H, W) input.

    >>> import dyngrad as torch
    >>> torch.nn.Conv2d(1, 16, 3, padding=1)
    Conv2d(1, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
    """

    _nd = 2
    _conv = staticmethod(F.conv2d)


class _ConvTransposeNd(_ConvNd):
    _transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                         bias, padding_mode, device, dtype, output_padding)

    def _output_padding(self, input, output_size):
        if output_size is None:
            return self.output_padding
        n = self._nd
        output_size = list(output_size)[-n:]
        op = []
        for d in range(n):
            size = input.shape[input.dim() - n + d]
            mn = ((size - 1) * self.stride[d] - 2 * self.padding[d]
                  + self.dilation[d] * (self.kernel_size[d] - 1) + 1)
            if not mn <= output_size[d] < mn + self.stride[d]:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes "
                                 f"range from {mn} to {mn + self.stride[d] - 1} (for an input of "
                                 f"{list(input.shape[-n:])})")
            op.append(output_size[d] - mn)
        return tuple(op)


class ConvTranspose1d(_ConvTransposeNd):
    """1-d transposed convolution over (N, C, L) input."""

    _nd = 1

    def forward(self, input, output_size=None):
        op = self._output_padding(input, output_size)
        return F.conv_transpose1d(input, self.weight, self.bias, self.stride, self.padding, op,
                                  self.groups, self.dilation)


class ConvTranspose2d(_ConvTransposeNd):
    """2-d transposed convolution over (N, C, H, W) input."""

    _nd = 2

    def forward(self, input, output_size=None):
        op = self._output_padding(input, output_size)
        return F.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding, op,
                                  self.groups, self.dilation)


class _LazyConvXdMixin(LazyModuleMixin):
    """Lazy convolutions: ``in_channels`` is read from the first input's channel dimension."""

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs) -> None:
        """Read ``in_channels`` from the input and create the weight and bias."""
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            if self.transposed:
                self.weight.materialize((self.in_channels, self.out_channels // self.groups,
                                         *self.kernel_size))
            else:
                self.weight.materialize((self.out_channels, self.in_channels // self.groups,
                                         *self.kernel_size))
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()

    def _get_in_channels(self, input) -> int:
        n = self._nd + 1
        if input.dim() not in (n, n + 1):
            raise RuntimeError(f"Expected {n}D (unbatched) or {n + 1}D (batched) input to "
                               f"{self.__class__.__name__}, but got input of size: "
                               f"{input.shape}")
        return input.shape[1] if input.dim() == n + 1 else input.shape[0]

    def _lazy_init(self, out_channels, bias, device, dtype) -> None:
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)


class LazyConv1d(_LazyConvXdMixin, Conv1d):
    """A ``Conv1d`` whose ``in_channels`` is read from the first input."""

    cls_to_become = Conv1d

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode="zeros", device=None,
                 dtype=None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False,
                         padding_mode)
        self._lazy_init(out_channels, bias, device, dtype)


class LazyConv2d(_LazyConvXdMixin, Conv2d):
    """A ``Conv2d`` whose ``in_channels`` is read from the first input."""

    cls_to_become = Conv2d

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode="zeros", device=None,
                 dtype=None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False,
                         padding_mode)
        self._lazy_init(out_channels, bias, device, dtype)


class LazyConvTranspose1d(_LazyConvXdMixin, ConvTranspose1d):
    """A ``ConvTranspose1d`` whose ``in_channels`` is read from the first input."""

    cls_to_become = ConvTranspose1d

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False,
                         dilation, padding_mode)
        self._lazy_init(out_channels, bias, device, dtype)


class LazyConvTranspose2d(_LazyConvXdMixin, ConvTranspose2d):
    """A ``ConvTranspose2d`` whose ``in_channels`` is read from the first input."""

    cls_to_become = ConvTranspose2d

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation: int = 1, padding_mode="zeros",
                 device=None, dtype=None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False,
                         dilation, padding_mode)
        self._lazy_init(out_channels, bias, device, dtype)


_annotate(LazyConv1d, out_channels=int, kernel_size=_size_t(1), stride=_size_t(1), padding=_size_t(1), dilation=_size_t(1), groups=int, bias=bool, padding_mode=_PADDING_MODE)
_annotate(LazyConv2d, out_channels=int, kernel_size=_size_t(2), stride=_size_t(2), padding=_size_t(2), dilation=_size_t(2), groups=int, bias=bool, padding_mode=_PADDING_MODE)
_annotate(LazyConvTranspose1d, out_channels=int, kernel_size=_size_t(1), stride=_size_t(1), padding=_size_t(1), output_padding=_size_t(1), groups=int, bias=bool, dilation=_size_t(1), padding_mode=_PADDING_MODE)
_annotate(LazyConvTranspose2d, out_channels=int, kernel_size=_size_t(2), stride=_size_t(2), padding=_size_t(2), output_padding=_size_t(2), groups=int, bias=bool, dilation=int, padding_mode=_PADDING_MODE)
