"""Rows for the random ops of src/dyngrad/ops/sampling.py (uniform_, normal_, bernoulli,
exponential_, geometric_, log_normal_, cauchy_, random_, multinomial).

The random stream is dyngrad's own, so values are not compared with PyTorch (``ref=None``)
nor between float32 and float64 (``float32_ok=False``); what the generic checks see is the
dtype and shape, the node recorded (``grad_fn``), the graph and the version counter against
PyTorch's, and the gradient: every call reseeds the generator (``_seeded``), so gradcheck's
repeated evaluations draw the same values, and the derivative PyTorch gives these ops (zero
for the input whose values are overwritten, ``bernoulli``'s zero for the probabilities) is
checked.  ``multinomial`` returns indices: not differentiable."""
import dyngrad as torch
from tests.optable import OpInfo, S

_SEED = 1234


def _seeded(a):
    """A non-leaf copy of ``a`` with the generator reseeded (the same draws on every call)."""
    torch.manual_seed(_SEED)
    return a * 1


R = dict(ref=None, float32_ok=False,
         notes="random: values not compared (dyngrad's own stream); dtype, shape, node, graph, "
               "version counter and PyTorch's (zero) gradient are")

ROWS = [
    OpInfo("uniform_", lambda a: _seeded(a).uniform_(-1.0, 2.0), samples=[S((3, 4)), S(())],
           grad_fn="UniformBackward0", **R),
    OpInfo("normal_", lambda a: _seeded(a).normal_(0.5, 2.0), samples=[S((3, 4)), S((0, 2))],
           grad_fn="NormalBackward0", **R),
    OpInfo("normal_plus_input", lambda a, b: _seeded(a).normal_() + b, samples=[S((3, 4), (4,))],
           grad_fn="AddBackward0", **R),
    OpInfo("bernoulli", lambda p: _seeded(p).bernoulli(), samples=[S((3, 4), domain=(0.1, 0.9))],
           grad_fn="BernoulliBackward0", **R),
    OpInfo("bernoulli_p", lambda p: _seeded(p).bernoulli(0.3), samples=[S((3, 4))],
           grad=False, ref=None, float32_ok=False,
           notes="random; PyTorch records a NotImplemented node (no derivative of bernoulli.p)"),
    OpInfo("bernoulli_", lambda a: _seeded(a).bernoulli_(0.25), samples=[S((3, 4))],
           grad_fn="BernoulliBackward2", **R),
    OpInfo("bernoulli_tensor_", lambda a, p: _seeded(a).bernoulli_(p),
           samples=[S((3, 4), (4,), domain=(0.1, 0.9))], grad_fn="BernoulliBackward1", **R),
    OpInfo("exponential_", lambda a: _seeded(a).exponential_(2.0), samples=[S((3, 4))],
           grad_fn="ExponentialBackward0", **R),
    OpInfo("geometric_", lambda a: _seeded(a).geometric_(0.3), samples=[S((3, 4))],
           grad_fn="GeometricBackward0", **R),
    OpInfo("log_normal_", lambda a: _seeded(a).log_normal_(0.0, 0.5), samples=[S((3, 4))],
           grad_fn="LogNormalBackward0", **R),
    OpInfo("cauchy_", lambda a: _seeded(a).cauchy_(0.0, 1.0), samples=[S((3, 4))],
           grad_fn="CauchyBackward0", **R),
    OpInfo("random_", lambda a: _seeded(a).random_(0, 5), samples=[S((3, 4))],
           grad_fn="RandomBackward0", **R),
    OpInfo("random_to", lambda a: _seeded(a).random_(7), samples=[S((3,))],
           grad_fn="RandomBackward1", **R),
    OpInfo("multinomial", lambda p: _seeded(p).multinomial(2), samples=[S((3, 4), domain=(0.1, 1.0)),
                                                                        S((5,), domain=(0.1, 1.0))],
           grad=False, **R),
    OpInfo("multinomial_replacement", lambda p: _seeded(p).multinomial(6, replacement=True),
           samples=[S((2, 3), domain=(0.1, 1.0))], grad=False, **R),
]
