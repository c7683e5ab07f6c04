"""``dyngrad.distributions``: probability distributions with PyTorch's interface
(``torch.distributions``), built from dyngrad ops so gradients flow through ``log_prob``,
``rsample``, ``entropy`` and ``kl_divergence``; sampling uses dyngrad's generator."""
from __future__ import annotations

from . import constraints
from .bernoulli import Bernoulli
from .categorical import Categorical
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .independent import Independent
from .kl import kl_divergence, register_kl
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .uniform import Uniform

__all__ = ["Bernoulli", "Categorical", "Distribution", "ExponentialFamily", "Independent", "MultivariateNormal",
           "Normal", "Uniform", "constraints", "kl_divergence", "register_kl"]
