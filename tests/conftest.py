import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "src"))
sys.path.insert(0, ROOT)

import pytest  # noqa: E402

# PyTorch is the oracle of the differential tests.  `make test` (and so CI) sets
# DYNGRAD_ORACLE=required: a missing torch is then an error, never a silent skip.
if os.environ.get("DYNGRAD_ORACLE") == "required":
    import torch  # noqa: F401  (fails loudly when the oracle is not installed)


@pytest.fixture(autouse=True)
def _reset_global_state():
    import dyngrad
    yield
    dyngrad.set_grad_enabled(True)
    dyngrad.set_default_dtype(dyngrad.float32)
    dyngrad.set_printoptions(profile="default")


@pytest.fixture(autouse=True)
def _torch_distribution_validation_kept():
    """PyTorch's first torch.compile turns distributions' argument validation off for the whole
    process (torch._dynamo does when it starts); the tests that compare with PyTorch expect its
    default, so it is put back after each test."""
    td = sys.modules.get("torch.distributions")
    prev = td.Distribution._validate_args if td is not None else None
    yield
    td = sys.modules.get("torch.distributions")
    if td is not None:
        td.Distribution.set_default_validate_args(__debug__ if prev is None else prev)


@pytest.fixture
def check_replay():
    """dyngrad.compile's debug mode for a test: every first replay is also run eagerly from the
    same state and compared (values, gradients, parameters, generator state)."""
    from dyngrad import _dynamo
    old = _dynamo.config.check_replay
    _dynamo.config.check_replay = True
    yield
    _dynamo.config.check_replay = old
