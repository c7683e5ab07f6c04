"""Train a 64-128-64-10 MLP on scikit-learn's bundled digits with dyngrad.

    python examples/digits_mlp.py [--epochs 20]
"""
import argparse

from dyngrad.apps.digits import train

if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--out", default="demo-output/mlp")
    a = p.parse_args()
    train("mlp", epochs=a.epochs, lr=2e-3, out=a.out)
