"""Train a small CNN (two 3x3 conv blocks) on scikit-learn's bundled digits with dyngrad.

    python examples/digits_cnn.py [--epochs 30]
"""
import argparse

from dyngrad.apps.digits import train

if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--out", default="demo-output/cnn")
    a = p.parse_args()
    train("cnn", epochs=a.epochs, lr=2e-3, out=a.out)
