"""Settings of ``dyngrad.compile`` (PyTorch keeps its own at ``torch._dynamo.config``).

Assign to them at any time; they are read when a compiled function is called.
"""
from __future__ import annotations

import os


def _logs_has(name: str) -> bool:
    return name in [s.strip().lstrip("+") for s in os.environ.get("TORCH_LOGS", "").split(",")]


#: recaptures allowed per compiled function before it runs eagerly (PyTorch's name and default)
recompile_limit: int = 8

#: print each recapture and its failed guards (``TORCH_LOGS=recompiles`` sets it, as PyTorch)
log_recompiles: bool = _logs_has("recompiles")

#: print each graph break with its source line (``TORCH_LOGS=graph_breaks``)
log_graph_breaks: bool = _logs_has("graph_breaks")

#: run the first replay of every capture against eager on the same state and raise
#: ``ReplayMismatch`` when a value, gradient, parameter or optimizer state differs
#: (``DYNGRAD_COMPILE_CHECK=1`` sets it)
check_replay: bool = os.environ.get("DYNGRAD_COMPILE_CHECK", "0") == "1"

