"""Rows for the conjugate/negative-bit views and the predicates of src/dyngrad/ops/
tensor_basics.py on real tensors: ``conj``/``resolve_conj``/``resolve_neg`` give the input
itself (so the rows apply them to ``a * 2`` and the graph shows MulBackward0, as PyTorch's),
``conj_physical`` records its node; the predicates return Python bools, wrapped here in a 0-d
tensor so the value is compared."""
import numpy as np

import dyngrad as torch
from tests.optable import OpInfo, S

ROWS = [
    OpInfo("conj", lambda a: torch.conj(a * 2), lambda a: a * 2, [S((3, 4)), S(())],
           "MulBackward0"),
    OpInfo("conj_method", lambda a: (a * 2).conj().exp(), lambda a: np.exp(a * 2), [S((3,))],
           "ExpBackward0"),
    OpInfo("conj_physical", lambda a: torch.conj_physical(a * 2), lambda a: a * 2,
           [S((3, 4)), S(())], "MulBackward0"),
    OpInfo("conj_physical_method", lambda a: a.conj_physical() * 2, lambda a: a * 2, [S((3,))],
           "MulBackward0"),
    OpInfo("resolve_conj", lambda a: torch.resolve_conj(a.exp()).sin().resolve_conj(),
           lambda a: np.sin(np.exp(a)), [S((3, 4))], "SinBackward0"),
    OpInfo("resolve_neg", lambda a: torch.resolve_neg(a.exp()).sin().resolve_neg(),
           lambda a: np.sin(np.exp(a)), [S((3, 4)), S(())], "SinBackward0"),
    OpInfo("is_conj_is_neg", lambda a: torch.tensor([torch.is_conj(a), a.is_conj(),
                                                     torch.is_neg(a), a.is_neg()]),
           lambda a: np.zeros(4, bool), [S((3,))], grad=False),
    OpInfo("is_nonzero", lambda a: torch.tensor([torch.is_nonzero(a),
                                                 torch.zeros_like(a).is_nonzero()]),
           lambda a: np.array([a.item() != 0, False]), [S(()), S((1,)), S((1, 1))], grad=False),
    OpInfo("is_signed", lambda a: torch.tensor([torch.is_signed(a), torch.is_signed(a > 0)]),
           lambda a: np.array([True, False]), [S((3,))], grad=False),
    OpInfo("is_same_size", lambda a, b: torch.tensor([torch.is_same_size(a, b),
                                                      torch.is_same_size(a, a)]),
           lambda a, b: np.array([a.shape == b.shape, True]), [S((3, 4), (3, 4)), S((3, 4), (4,))],
           grad=False),
]
