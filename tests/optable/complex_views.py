"""Rows for the complex <-> real views, polar and complex (the table's samples are real: a complex
tensor is made with view_as_complex, a complex result is seen through view_as_real)."""
import numpy as np

import dyngrad as torch
from tests.optable import OpInfo, S


def _polar_np(a, b):
    return np.stack(np.broadcast_arrays(a * np.cos(b), a * np.sin(b)), -1)


ROWS = [
    OpInfo("view_as_real", lambda a: torch.view_as_real(torch.view_as_complex(a)),
           lambda a: a, [S((3, 2)), S((2, 3, 2))], "ViewAsRealBackward0"),
    OpInfo("view_as_complex_slice", lambda a: torch.view_as_real(torch.view_as_complex(a)[1:]),
           lambda a: a[1:], [S((4, 2))], "ViewAsRealBackward0"),
    OpInfo("polar", lambda a, b: torch.view_as_real(torch.polar(a, b)), _polar_np,
           [S((3,), (3,), domain=(0.5, 2.0)), S((2, 1), (3,), domain=(0.5, 2.0)),
            S((), (), domain=(0.5, 2.0))], "ViewAsRealBackward0"),
    OpInfo("complex", lambda a, b: torch.view_as_real(torch.complex(a, b)),
           lambda a, b: np.stack(np.broadcast_arrays(a, b), -1),
           [S((3,), (3,)), S((2, 1), (3,)), S((), ())], "ViewAsRealBackward0"),
    OpInfo("real", lambda a: torch.real(torch.view_as_complex(a)) + torch.view_as_complex(a).real,
           lambda a: 2 * a[..., 0], [S((3, 2)), S((2, 3, 2))], "AddBackward0"),
    OpInfo("imag", lambda a: torch.imag(torch.view_as_complex(a)) * torch.view_as_complex(a).imag,
           lambda a: a[..., 1] ** 2, [S((3, 2))], "MulBackward0"),
]
