"""``dyngrad demo``: the seeds' MiniNet walkthrough, then CNN training on digits; writes the
explorer pages of the first training step and of a deliberate misuse (the GAN mistake)."""
from __future__ import annotations

import os

HELP = "walk through a small network's graph, then train a CNN on digits (the main job)"


def add_arguments(p):
    p.add_argument("--out", default="demo-output", help="folder for the outputs")
    from .train import _positive_int
    p.add_argument("--epochs", type=_positive_int, default=30, help="CNN training epochs")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def walkthrough(print=print):
    """The seeds' MiniNet: values, grad_fns, gradients, and the graph freed by backward."""
    import dyngrad as torch
    from dyngrad import nn

    class MiniNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.ModuleDict({"1": nn.Linear(2, 3), "2": nn.Linear(3, 2)})

        def forward(self, x):
            return torch.tanh(self.fc["2"](torch.tanh(self.fc["1"](x))))

    torch.manual_seed(123)
    model = MiniNet()
    x = torch.tensor([[1.0, 1.0]])
    y = model(x)
    loss = torch.sum((y - torch.tensor([[0.0, 1.0]])) ** 2)
    print("== MiniNet: Linear(2,3) - tanh - Linear(3,2) - tanh ==")
    print("output:", y)
    print("loss:  ", loss)
    print("graph of the loss (grad_fn chain):")
    from dyngrad.viz import walk_lines
    for line in walk_lines(loss.grad_fn, 1):
        print(line)
    loss.backward()
    print("fc.1.weight.grad:", model.fc["1"].weight.grad)
    try:
        loss.backward()
    except RuntimeError as e:
        print("second backward:", str(e).split(".")[0] + ". (the graph was freed)")
    print()


def run(args) -> int:
    from ..cli import UsageError, check_out_dir
    check_out_dir(args.out)
    walkthrough()
    from ..apps.digits import train
    try:
        _, hist, paths = train("cnn", epochs=args.epochs, out=args.out,
                               progress=not args.no_progress)
    except OSError as e:
        from ..cli import oserror_line
        raise UsageError(oserror_line(e)) from None
    except (RuntimeError, ValueError) as e:
        raise UsageError(str(e).split("\n")[0]) from None
    from ..apps.misuse import write_page
    page = os.path.join(args.out, "misuse.html")
    try:
        paths["misuse"], _ = write_page(page)
    except OSError as e:
        from ..cli import cannot_write
        raise cannot_write(page, e) from None
    print("outputs:")
    for k, v in paths.items():
        print(f"{k:>12}: {v}")
    return 0
