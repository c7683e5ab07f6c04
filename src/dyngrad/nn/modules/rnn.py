"""Recurrent layers ``RNN``, ``LSTM``, ``GRU`` and their cells, built from tensor ops so autograd
differentiates them; parameter names, shapes, gate order and initialisation are PyTorch's."""
from __future__ import annotations

import math
import numbers

from ..._factories import empty, zeros
from .. import init
from ..parameter import Parameter
from ...ops.shape import cat as _cat, stack as _stack
from ..functional import dropout as _dropout, linear as _linear
from .module import Module
from ... import _warn

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _padded_from_packed(psq):
    """(T, B, *) padded input in the packed (length-sorted) order, and per step either None
    (every sequence still running) or float masks (running, finished) of shape (B, 1)."""
    from ..utils.rnn import pad_packed_sequence, PackedSequence
    sorted_only = PackedSequence(psq.data, psq.batch_sizes, None, None)
    padded, lengths = pad_packed_sequence(sorted_only)
    lens = lengths._data
    B = lens.size
    masks = []
    dt = padded._data.dtype
    from ..._tensor import Tensor
    for t in range(padded.shape[0]):
        run = (lens > t)
        if run.all():
            masks.append(None)
        else:
            m = run.astype(dt).reshape(B, 1)
            masks.append((Tensor._make(m), Tensor._make(1 - m)))
    return padded, masks


def _repack(out, psq, lstm):
    """Pack the padded output again and put h_n (and c_n) back in the original order."""
    from ..utils.rnn import PackedSequence
    output, hidden = out
    bs = psq.batch_sizes._data
    data = _cat([output[t, :int(b)] for t, b in enumerate(bs)], 0)
    un = psq.unsorted_indices
    if un is not None:
        hidden = (tuple(h.index_select(1, un) for h in hidden) if lstm
                  else hidden.index_select(1, un))
    return PackedSequence(data, psq.batch_sizes, psq.sorted_indices, psq.unsorted_indices), hidden


def _rnn_step(x, h, w_hh, b_hh, relu):
    """One Elman step given ``x`` = W_ih x + b_ih (precomputed)."""
    pre = x + h.matmul(w_hh.t())
    if b_hh is not None:
        pre = pre + b_hh
    return pre.relu() if relu else pre.tanh()


def _lstm_step(x, h, c, w_hh, b_hh, w_hr=None):
    """One LSTM step (gates i, f, g, o); returns (h', c')."""
    gates = x + h.matmul(w_hh.t())
    if b_hh is not None:
        gates = gates + b_hh
    hs = gates.shape[-1] // 4
    i = gates[..., 0:hs].sigmoid()
    f = gates[..., hs:2 * hs].sigmoid()
    g = gates[..., 2 * hs:3 * hs].tanh()
    o = gates[..., 3 * hs:4 * hs].sigmoid()
    c = f * c + i * g
    h = o * c.tanh()
    if w_hr is not None:
        h = h.matmul(w_hr.t())
    return h, c


def _gru_step(x, h, w_hh, b_hh):
    """One GRU step (gates r, z, n): h' = (1 - z) * n + z * h."""
    gh = h.matmul(w_hh.t())
    if b_hh is not None:
        gh = gh + b_hh
    hs = gh.shape[-1] // 3
    r = (x[..., 0:hs] + gh[..., 0:hs]).sigmoid()
    z = (x[..., hs:2 * hs] + gh[..., hs:2 * hs]).sigmoid()
    n = (x[..., 2 * hs:] + r * gh[..., 2 * hs:]).tanh()
    return (1 - z) * n + z * h


# --- PyTorch's CPU recurrence (aten/src/ATen/native/RNN.cpp), op for op -----------------
def _simple_cell(x, h, w_hh, b_hh, relu):
    """SimpleCell with the input's linear precomputed: act(linear_hh(h).add_(x))."""
    pre = _linear(h, w_hh, b_hh).add_(x)
    return pre.relu() if relu else pre.tanh()


def _lstm_cell(x, h, c, w_hh, b_hh, w_hr):
    gates = _linear(h, w_hh, b_hh).add_(x)
    i, f, g, o = gates.unsafe_chunk(4, 1)
    i, f, g, o = i.sigmoid_(), f.sigmoid_(), g.tanh_(), o.sigmoid_()
    cy = (f * c).add_(i * g)
    hy = o * cy.tanh()
    if w_hr is not None:
        hy = hy.matmul(w_hr.t())
    return hy, cy


def _gru_cell(x, h, w_hh, b_hh):
    ir, iz, in_ = x.unsafe_chunk(3, 1)
    hr, hz, hn = _linear(h, w_hh, b_hh).unsafe_chunk(3, 1)
    reset = hr.add_(ir).sigmoid_()
    inp = hz.add_(iz).sigmoid_()
    new = in_.add(hn.mul_(reset)).tanh_()
    return (h - new).mul_(inp).add_(new)


class RNNBase(Module):
    """Shared machinery of RNN/LSTM/GRU: parameters per layer and direction, shape checks,
    the time loop, dropout between layers."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) \
                or not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            _warn.warn(f"dropout option adds dropout after all but last recurrent layer, so "
                       f"non-zero dropout expects num_layers greater than 1, but got "
                       f"dropout={dropout} and num_layers={num_layers}", UserWarning)
        if not isinstance(hidden_size, int) or isinstance(hidden_size, bool):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        dirs = 2 if bidirectional else 1
        gate = _GATES[mode] * hidden_size
        real_h = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names = []
        for layer in range(num_layers):
            for d in range(dirs):
                in_sz = input_size if layer == 0 else real_h * dirs
                sfx = "_reverse" if d == 1 else ""
                shapes = [(f"weight_ih_l{layer}{sfx}", (gate, in_sz)),
                          (f"weight_hh_l{layer}{sfx}", (gate, real_h))]
                if bias:
                    shapes += [(f"bias_ih_l{layer}{sfx}", (gate,)),
                               (f"bias_hh_l{layer}{sfx}", (gate,))]
                if proj_size > 0:
                    shapes.append((f"weight_hr_l{layer}{sfx}", (proj_size, hidden_size)))
                for name, shape in shapes:
                    setattr(self, name, Parameter(empty(shape, device=device, dtype=dtype)))
                    self._flat_weights_names.append(name)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every weight and bias ~ U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    @property
    def all_weights(self):
        dirs = 2 if self.bidirectional else 1
        per = len(self._flat_weights_names) // (self.num_layers * dirs)
        names = self._flat_weights_names
        return [[getattr(self, n) for n in names[i:i + per]] for i in range(0, len(names), per)]

    def _weights(self, layer, d):
        sfx = "_reverse" if d == 1 else ""
        get = lambda n: self._parameters.get(f"{n}_l{layer}{sfx}")  # noqa: E731
        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh"), get("weight_hr")

    def _check_input(self, input, batch_sizes=None):
        expected = 2 if batch_sizes is not None else 3
        if input.dim() not in (2, 3):
            raise ValueError(f"{self.mode if self.mode in ('LSTM', 'GRU') else 'RNN'}: Expected "
                             f"input to be 2D or 3D, got {input.dim()}D instead")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.size(-1)}")
        return expected

    def _check_hidden(self, hx, expected, msg="Expected hidden size {}, got {}"):
        if tuple(hx.shape) != tuple(expected):
            raise RuntimeError(msg.format(tuple(expected), list(hx.shape)))

    def forward(self, input, hx=None):
        """``input`` (L, N, H_in) (or (N, L, H_in) with batch_first, or unbatched (L, H_in))
        -> (output, h_n) (LSTM: (output, (h_n, c_n)))."""
        from ..utils.rnn import PackedSequence
        packed = isinstance(input, PackedSequence)
        masks = None
        if packed:
            # run the padded, length-sorted batch; a sequence's state stops changing after its
            # last step (and, in reverse, starts at it), so h_n is each sequence's own last state
            psq = input
            input, masks = _padded_from_packed(psq)
            if hx is not None:
                perm = psq.sorted_indices
                if perm is not None:
                    hx = (tuple(h.index_select(1, perm) for h in hx)
                          if isinstance(hx, (tuple, list)) else hx.index_select(1, perm))
            saved_batch_first = self.__dict__.get("batch_first")
            self.__dict__["batch_first"] = False
            try:
                out = self._forward_padded(input, hx, masks)
            finally:
                self.__dict__["batch_first"] = saved_batch_first
            return _repack(out, psq, self.mode == "LSTM")
        return self._forward_padded(input, hx, None)

    def _forward_padded(self, input, hx, masks):
        if masks is None:
            return self._forward_aten(input, hx)
        self._check_input(input)
        batched = input.dim() == 3
        if not batched:
            input = input.unsqueeze(1)
        elif self.batch_first:
            input = input.transpose(0, 1)
        dirs = 2 if self.bidirectional else 1
        n = input.shape[1]
        real_h = self.proj_size if self.proj_size > 0 else self.hidden_size
        lstm = self.mode == "LSTM"
        h0, c0 = self._initial_state(hx, n, batched, input.dtype)
        layer_in = input
        h_n, c_n = [], []
        steps = input.shape[0]
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                w_ih, w_hh, b_ih, b_hh, w_hr = self._weights(layer, d)
                xw = layer_in.matmul(w_ih.t())
                if b_ih is not None:
                    xw = xw + b_ih
                h = h0[layer * dirs + d]
                c = c0[layer * dirs + d] if lstm else None
                seq = [None] * steps
                order = range(steps - 1, -1, -1) if d == 1 else range(steps)
                for t in order:
                    h_prev, c_prev = h, c
                    if lstm:
                        h, c = _lstm_step(xw[t], h, c, w_hh, b_hh, w_hr)
                    elif self.mode == "GRU":
                        h = _gru_step(xw[t], h, w_hh, b_hh)
                    else:
                        h = _rnn_step(xw[t], h, w_hh, b_hh, self.mode == "RNN_RELU")
                    if masks is not None and masks[t] is not None:
                        m, keep = masks[t]
                        h = h * m + h_prev * keep
                        if lstm:
                            c = c * m + c_prev * keep
                    seq[t] = h
                outs.append(_stack(seq, 0) if steps else
                            zeros((0, n, real_h), dtype=input.dtype))
                h_n.append(h)
                if lstm:
                    c_n.append(c)
            layer_in = outs[0] if dirs == 1 else _cat(outs, 2)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_in = _dropout(layer_in, self.dropout, True)
        output = layer_in
        h_n = _stack(h_n, 0)
        c_n = _stack(c_n, 0) if lstm else None
        if not batched:
            output = output.squeeze(1)
            h_n = h_n.squeeze(1)
            c_n = c_n.squeeze(1) if lstm else None
        elif self.batch_first:
            output = output.transpose(0, 1)
        return (output, (h_n, c_n)) if lstm else (output, h_n)

    def _initial_state(self, hx, n, batched, dtype):
        """(h_0, c_0) for a batch of ``n`` (zeros when ``hx`` is None; c_0 None unless LSTM),
        batched, with PyTorch's checks of ``hx``."""
        lstm = self.mode == "LSTM"
        dirs = 2 if self.bidirectional else 1
        real_h = self.proj_size if self.proj_size > 0 else self.hidden_size
        if hx is None:
            h0 = zeros((self.num_layers * dirs, n, real_h), dtype=dtype)
            c0 = zeros((self.num_layers * dirs, n, self.hidden_size), dtype=dtype) \
                if lstm else None
        else:
            if lstm:
                if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                    raise RuntimeError("LSTM expects hx to be a tuple (h_0, c_0)")
                h0, c0 = hx
            else:
                h0, c0 = hx, None
            if not batched:
                if h0.dim() != 2:
                    raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got "
                                       f"{h0.dim()}-D tensor")
                h0 = h0.unsqueeze(1)
                c0 = c0.unsqueeze(1) if c0 is not None else None
            elif h0.dim() != 3:
                raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got "
                                   f"{h0.dim()}-D tensor")
            self._check_hidden(h0, (self.num_layers * dirs, n, real_h),
                               "Expected hidden[0] size {}, got {}" if lstm else
                               "Expected hidden size {}, got {}")
            if c0 is not None:
                self._check_hidden(c0, (self.num_layers * dirs, n, self.hidden_size),
                                   "Expected hidden[1] size {}, got {}")
        return h0, c0

    def _forward_aten(self, input, hx):
        """PyTorch's module forward and its CPU kernel (_VF.rnn_tanh / rnn_relu / gru / lstm):
        per layer and direction the input's linear map over the whole sequence, unbound into
        steps, one cell per step (with PyTorch's in-place ops), the outputs stacked (and the
        directions concatenated), dropout between layers in training."""
        self._check_input(input)
        lstm = self.mode == "LSTM"
        batched = input.dim() == 3
        bdim = 0 if self.batch_first else 1
        dirs = 2 if self.bidirectional else 1
        if not batched:
            input = input.unsqueeze(bdim)
        n = input.shape[bdim]
        h0, c0 = self._initial_state(hx, n, batched, input.dtype)
        x = input.transpose(0, 1) if self.batch_first else input
        hs = h0.unbind(0)
        cs = c0.unbind(0) if lstm else None
        layer_in = x
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                w_ih, w_hh, b_ih, b_hh, w_hr = self._weights(layer, d)
                steps = list(_linear(layer_in, w_ih, b_ih).unbind(0))
                if not steps:
                    raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
                if d == 1:
                    steps.reverse()
                h = hs[layer * dirs + d]
                c = cs[layer * dirs + d] if lstm else None
                seq = []
                for xt in steps:
                    if lstm:
                        h, c = _lstm_cell(xt, h, c, w_hh, b_hh, w_hr)
                    elif self.mode == "GRU":
                        h = _gru_cell(xt, h, w_hh, b_hh)
                    else:
                        h = _simple_cell(xt, h, w_hh, b_hh, self.mode == "RNN_RELU")
                    seq.append(h)
                if d == 1:
                    seq.reverse()
                outs.append(_stack(seq, 0))
                h_n.append(h)
                if lstm:
                    c_n.append(c)
            layer_in = outs[0] if dirs == 1 else _cat(outs, outs[0].dim() - 1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_in = _dropout(layer_in, self.dropout, True)
        output = layer_in
        if lstm:
            h_n, c_n = _stack(h_n, 0), _stack(c_n, 0)
            if self.batch_first:
                output = output.transpose(0, 1)
        else:
            h_n = _stack(h_n, 0)
            if self.batch_first:
                output.transpose_(0, 1)
        if not batched:
            output = output.squeeze(bdim)
            h_n = h_n.squeeze(1)
            c_n = c_n.squeeze(1) if lstm else None
        return (output, (h_n, c_n)) if lstm else (output, h_n)

    def flatten_parameters(self) -> None:
        return None

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


def _split_args(args, kwargs, names):
    out = dict(zip(names, args))
    out.update(kwargs)
    return out


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh) (or relu).

    >>> import dyngrad as torch
    >>> torch.nn.RNN(4, 8, num_layers=2)
    RNN(4, 8, num_layers=2)
    """

    def __init__(self, *args, **kwargs):
        names = ["input_size", "hidden_size", "num_layers", "nonlinearity", "bias",
                 "batch_first", "dropout", "bidirectional"]
        kw = _split_args(args, kwargs, names)
        nl = kw.pop("nonlinearity", "tanh")
        if nl == "tanh":
            mode = "RNN_TANH"
        elif nl == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{nl}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, **kw)
        self.nonlinearity = nl


class LSTM(RNNBase):
    """Long short-term memory: gates i, f, g, o; returns (output, (h_n, c_n))."""

    def __init__(self, *args, **kwargs):
        names = ["input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout",
                 "bidirectional", "proj_size"]
        super().__init__("LSTM", **_split_args(args, kwargs, names))


class GRU(RNNBase):
    """Gated recurrent unit: gates r, z, n; returns (output, h_n)."""

    def __init__(self, *args, **kwargs):
        names = ["input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout",
                 "bidirectional"]
        super().__init__("GRU", **_split_args(args, kwargs, names))


class RNNCellBase(Module):
    """Parameters weight_ih, weight_hh, bias_ih, bias_hh of one recurrent step."""

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size), device=device, dtype=dtype))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size), device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, device=device, dtype=dtype))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        nl = self.__dict__.get("nonlinearity", "tanh")
        if nl != "tanh":
            s += f", nonlinearity={nl}"
        return s

    def _prepare(self, input, hx, name, n_states=1):
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if input.size(-1) != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.size(-1)} "
                               f"expected {self.input_size}")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
        n = input.shape[0]
        if hx is None:
            hx = tuple(zeros((n, self.hidden_size), dtype=input.dtype) for _ in range(n_states))
        else:
            hx = tuple(hx) if n_states > 1 else (hx,)
            if not batched:
                hx = tuple(h.unsqueeze(0) for h in hx)
            for h in hx:
                if tuple(h.shape) != (n, self.hidden_size):
                    raise RuntimeError(f"hidden has inconsistent shape: got {list(h.shape)} "
                                       f"expected {[n, self.hidden_size]}")
        return input, hx, batched


class RNNCell(RNNCellBase):
    """One Elman step: h' = tanh(W_ih x + b_ih + W_hh h + b_hh) (or relu)."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        x, (h,), batched = self._prepare(input, hx, "RNNCell")
        # PyTorch's cell: linear_hh(h).add_(linear_ih(x)), then the nonlinearity
        pre = _linear(h, self.weight_hh, self.bias_hh)
        pre.add_(_linear(x, self.weight_ih, self.bias_ih))
        h = pre.relu() if self.nonlinearity == "relu" else pre.tanh()
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step; returns (h', c')."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        x, (h, c), batched = self._prepare(input, hx, "LSTMCell", 2)
        h, c = _lstm_cell(_linear(x, self.weight_ih, self.bias_ih), h, c, self.weight_hh,
                          self.bias_hh, None)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        x, (h,), batched = self._prepare(input, hx, "GRUCell")
        h = _gru_cell(_linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh, self.bias_hh)
        return h if batched else h.squeeze(0)
