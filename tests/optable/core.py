"""Rows for the ops the seeds use (arithmetic, tanh & co, sum/mean, mm, views)."""
import numpy as np

import dyngrad as torch
from tests.optable import OpInfo, S

BCAST = [S((3, 4), (3, 4)), S((3, 4), (4,)), S((2, 1, 3), (4, 1)), S((), (3,)), S((3,), ())]

ROWS = [
    OpInfo("add", lambda a, b: a + b, np.add, BCAST, "AddBackward0"),
    OpInfo("sub", lambda a, b: a - b, np.subtract, BCAST, "SubBackward0"),
    OpInfo("mul", lambda a, b: a * b, np.multiply, BCAST, "MulBackward0"),
    OpInfo("div", lambda a, b: a / b, np.divide,
           [S((3, 4), (3, 4), domain=(0.5, 2.0)), S((3, 4), (4,), domain=(0.5, 2.0))], "DivBackward0"),
    OpInfo("add_scalar", lambda a: 2.5 + a, lambda a: 2.5 + a, [S((3,)), S(())], "AddBackward0"),
    OpInfo("rsub_scalar", lambda a: 10 - a, lambda a: 10 - a, [S((3,))], "RsubBackward1"),
    OpInfo("neg", lambda a: -a, np.negative, [S((2, 3))], "NegBackward0"),
    OpInfo("pow_scalar", lambda a: a ** 3, lambda a: a ** 3, [S((4,)), S(())], "PowBackward0"),
    OpInfo("pow_tensor", lambda a, b: a ** b, np.power, [S((3,), (3,), domain=(0.5, 2.0))],
           "PowBackward1"),
    OpInfo("rpow", lambda a: 2.0 ** a, lambda a: 2.0 ** a, [S((3,))], "PowBackward2"),
    OpInfo("exp", torch.exp, np.exp, [S((3, 2)), S(())], "ExpBackward0"),
    OpInfo("log", torch.log, np.log, [S((3,), domain=(0.5, 3.0))], "LogBackward0"),
    OpInfo("sin", torch.sin, np.sin, [S((4,))], "SinBackward0"),
    OpInfo("cos", torch.cos, np.cos, [S((4,))], "CosBackward0"),
    OpInfo("tanh", torch.tanh, np.tanh, [S((2, 3)), S(())], "TanhBackward0"),
    OpInfo("sigmoid", torch.sigmoid, lambda a: 1 / (1 + np.exp(-a)), [S((5,))], "SigmoidBackward0"),
    OpInfo("sqrt", torch.sqrt, np.sqrt, [S((4,), domain=(0.5, 3.0))], "SqrtBackward0"),
    OpInfo("abs", torch.abs, np.abs, [S((4,), domain=(0.2, 1.0))], "AbsBackward0"),
    OpInfo("relu", torch.relu, lambda a: np.maximum(a, 0), [S((6,))], "ReluBackward0", gradgrad=False),
    OpInfo("sum", lambda a: a.sum(), np.sum, [S((3, 4)), S(())], "SumBackward0"),
    OpInfo("sum_dim", lambda a: a.sum(1), lambda a: a.sum(1), [S((3, 4))], "SumBackward1"),
    OpInfo("sum_keepdim", lambda a: a.sum((0, 2), keepdim=True),
           lambda a: a.sum((0, 2), keepdims=True), [S((2, 3, 4))], "SumBackward1"),
    OpInfo("mean", lambda a: a.mean(), np.mean, [S((3, 4))], "MeanBackward0"),
    OpInfo("mean_dim", lambda a: a.mean(-1), lambda a: a.mean(-1), [S((3, 4))], "MeanBackward1"),
    OpInfo("mm", torch.mm, np.matmul, [S((2, 3), (3, 4))], "MmBackward0"),
    OpInfo("matmul_batched", torch.matmul, np.matmul, [S((2, 2, 3), (3, 4)), S((3,), (3, 2)),
                                                      S((4, 3), (3,)), S((3,), (3,))]),
    OpInfo("addmm", lambda b, x, w: torch.addmm(b, x, w), lambda b, x, w: b + x @ w,
           [S((4,), (2, 3), (3, 4))], "AddmmBackward0"),
    OpInfo("t", lambda a: a.t(), lambda a: a.T, [S((2, 3))], "TBackward0"),
    OpInfo("view", lambda a: a.view(6, 2), lambda a: a.reshape(6, 2), [S((3, 4))], "ViewBackward0"),
    OpInfo("flatten", lambda a: torch.flatten(a, 1), lambda a: a.reshape(a.shape[0], -1),
           [S((2, 3, 4))], "ViewBackward0"),
    OpInfo("unsqueeze", lambda a: a.unsqueeze(1), lambda a: np.expand_dims(a, 1), [S((3, 4))],
           "UnsqueezeBackward0"),
    OpInfo("select", lambda a: a[1], lambda a: a[1], [S((3, 4))], "SelectBackward0"),
    OpInfo("slice", lambda a: a[:, 1:3], lambda a: a[:, 1:3], [S((3, 4))], "SliceBackward0"),
    OpInfo("index_repeat", lambda a: a[torch.tensor([0, 2, 0])], lambda a: a[[0, 2, 0]],
           [S((3, 2))], "IndexBackward0"),
]
