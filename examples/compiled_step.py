"""A training step compiled with torch.compile (dyngrad.compile): the first call captures the
op program of forward, backward, SGD update and zero_grad; later calls replay it as NumPy.
A batch of another size recaptures (the guard on the input's shape fails). Prints the time
per step eager and compiled, and writes the page that shows the captured programs, their
guards and why the recapture happened.

    python examples/compiled_step.py [--out demo-output/compiled.html]
"""
import argparse
import time

import dyngrad as torch
import dyngrad.viz
from dyngrad import nn
from dyngrad.nn import functional as F


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="demo-output/compiled.html")
    args = ap.parse_args()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    compiled = torch.compile(step)
    x, y = torch.randn(16, 4), torch.randint(0, 3, (16,))
    for name, fn in (("eager", step), ("compiled", compiled)):
        fn(x, y)
        t0 = time.perf_counter()
        for _ in range(200):
            loss = fn(x, y)
        print(f"{name:9s} {(time.perf_counter() - t0) / 200 * 1e6:7.1f} us per step, "
              f"loss {loss.item():.4f}")
    compiled(torch.randn(5, 4), torch.randint(0, 3, (5,)))  # another batch size: recaptures
    print("recaptures:", compiled.recompile_reasons)
    print("page:", dyngrad.viz.save_compiled_html(compiled, args.out))


if __name__ == "__main__":
    main()
