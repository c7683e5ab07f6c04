"""A deliberate misuse for the graph explorer: the GAN mistake of reusing a freed graph.

The discriminator's loss is backpropagated through the generator's output ``fake`` (not
detached), which frees the generator's part of the graph; the generator's loss then needs that
part again and backward fails.  The page shows the error on the node that raised, with the fix,
and what the first backward had already done (gradients accumulated, buffers freed)."""
from __future__ import annotations

import dyngrad as torch
from dyngrad import nn


class Generator(nn.Sequential):
    """noise (2) -> Linear -> Tanh -> a fake sample (4)."""

    def __init__(self):
        super().__init__(nn.Linear(2, 4), nn.Tanh())


class Discriminator(nn.Sequential):
    """a sample (4) -> Linear -> Sigmoid -> the probability that it is real."""

    def __init__(self):
        super().__init__(nn.Linear(4, 1), nn.Sigmoid())


def gan_mistake(seed: int = 0):
    """Run one GAN step with the mistake under the recorder; returns (recorder, error)."""
    from ..viz import record
    torch.manual_seed(seed)
    G, D = Generator(), Discriminator()
    bce = nn.BCELoss()
    real = torch.randn(3, 4)
    z = torch.randn(3, 2)
    error = None
    with record(title="misuse: reusing a freed graph (the GAN mistake)", iterations="all") as rec:
        # the mistake: D's loss uses fake, not fake.detach()
        fake = G(z)
        d_loss = bce(D(real), torch.ones(3, 1)) + bce(D(fake), torch.zeros(3, 1))
        # this backward also frees the generator's part of the graph, behind fake
        d_loss.backward()
        g_loss = bce(D(fake), torch.ones(3, 1))
        try:
            # the generator's loss needs those freed buffers again
            g_loss.backward()
        except RuntimeError as e:
            error = e
    return rec, error


def write_page(path: str) -> tuple[str, Exception | None]:
    """Write the misuse page to ``path``; returns (path, the error the misuse raised)."""
    rec, error = gan_mistake()
    return rec.save_html(path), error
