"""A DCGAN on the 8x8 digits, trained with the detach() pattern of the seeds: the
discriminator step sees fake.detach() (so its backward leaves the generator's graph alone),
the generator step reuses the same fake batch through the discriminator.  Writes a grid of
generated samples as a PNG.

    python examples/dcgan_digits.py [--epochs 40] [--out demo-output/dcgan.png] [--compile]
"""
import argparse

import numpy as np

import dyngrad as torch
from dyngrad import nn

Z = 16


def generator():
    return nn.Sequential(
        nn.ConvTranspose2d(Z, 64, 2, 1, 0, bias=False), nn.BatchNorm2d(64), nn.ReLU(),   # 2x2
        nn.ConvTranspose2d(64, 32, 4, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU(),  # 4x4
        nn.ConvTranspose2d(32, 1, 4, 2, 1, bias=False), nn.Tanh())                       # 8x8


def discriminator():
    return nn.Sequential(
        nn.Conv2d(1, 32, 4, 2, 1, bias=False), nn.LeakyReLU(0.2),                       # 4x4
        nn.Conv2d(32, 64, 4, 2, 1, bias=False), nn.BatchNorm2d(64), nn.LeakyReLU(0.2),  # 2x2
        nn.Conv2d(64, 1, 2, 1, 0, bias=False), nn.Sigmoid(), nn.Flatten())


def init_weights(m):
    if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d)):
        nn.init.normal_(m.weight, 0.0, 0.02)
    elif isinstance(m, nn.BatchNorm2d):
        nn.init.normal_(m.weight, 1.0, 0.02)
        nn.init.zeros_(m.bias)


def train_step_of(netG, netD, optG, optD, crit, batch):
    """One training step of both networks on a batch of real images: D on the real batch and
    on ``fake.detach()`` (its backward leaves G's graph alone), then G through D on the same
    fake batch, the noise drawn inside the step; returns both losses and the fake batch."""
    ones, zeros = torch.ones(batch, 1), torch.zeros(batch, 1)

    def train_step(real):
        # discriminator: real vs fake.detach()
        netD.zero_grad()
        fake = netG(torch.randn(batch, Z, 1, 1))
        d_loss = crit(netD(real), ones) + crit(netD(fake.detach()), zeros)
        d_loss.backward()
        optD.step()
        # generator: the same fake batch, through D, back into G
        netG.zero_grad()
        g_loss = crit(netD(fake), ones)
        g_loss.backward()
        optG.step()
        return d_loss, g_loss, fake.detach()
    return train_step


def train(epochs=40, batch=64, seed=0, log=print, compile=False):
    """Train for ``epochs``; ``compile=True`` runs each training step (both networks' updates)
    through torch.compile (captured once, replayed after: the same numbers as eager)."""
    from sklearn.datasets import load_digits
    torch.manual_seed(seed)
    x = load_digits().images.astype(np.float32) / 8.0 - 1.0     # [-1, 1]
    data = torch.from_numpy(x[:, None])
    netG, netD = generator(), discriminator()
    netG.apply(init_weights)
    netD.apply(init_weights)
    crit = nn.BCELoss()
    optG = torch.optim.Adam(netG.parameters(), lr=2e-3, betas=(0.5, 0.999))
    optD = torch.optim.Adam(netD.parameters(), lr=2e-3, betas=(0.5, 0.999))
    fixed = torch.randn(64, Z, 1, 1)
    train_step = train_step_of(netG, netD, optG, optD, crit, batch)
    run = torch.compile(train_step) if compile else train_step
    for epoch in range(epochs):
        perm = torch.randperm(len(data))
        for i in range(0, len(data) - batch + 1, batch):
            d_loss, g_loss, _ = run(data[perm[i:i + batch]])
        log(f"epoch {epoch + 1:3d}  d_loss {d_loss.item():.3f}  g_loss {g_loss.item():.3f}")
    netG.eval()
    with torch.no_grad():
        samples = netG(fixed)
    return netG, netD, samples


def save_grid(samples, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    imgs = (samples.numpy()[:, 0] + 1) / 2
    fig, axes = plt.subplots(8, 8, figsize=(4, 4))
    for ax, im in zip(axes.ravel(), imgs):
        ax.imshow(im, cmap="gray_r", vmin=0, vmax=1)
        ax.axis("off")
    fig.tight_layout(pad=0.1)
    fig.savefig(path, dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--epochs", type=int, default=40)
    p.add_argument("--out", default="demo-output/dcgan.png")
    p.add_argument("--compile", action="store_true", help="run the training step compiled")
    a = p.parse_args()
    import os
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    *_, s = train(a.epochs, compile=a.compile)
    save_grid(s, a.out)
    print("samples:", a.out)
