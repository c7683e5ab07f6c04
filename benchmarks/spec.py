"""The workloads, their goals and the suite's tolerances; NumPy-free so the parent process can
read it without touching BLAS."""
from __future__ import annotations

# key, what one step does, goal: (baseline backend, max dyngrad/baseline ratio)
WORKLOADS = [
    ("tiny-chain", "3x3 leaves a, b: tanh(a*b).sum().backward()", ("torch", 0.35)),
    ("mininet-step", "Linear(2,3)-tanh-Linear(3,2)-tanh, batch 1, SSE, backward, SGD, zero_grad",
     ("torch", 0.25)),
    ("scalar-graph", "200 ops on 0-d tensors (40 steps of tanh(h*w + u*x + b)), backward",
     ("torch", 0.35)),
    ("digits-mlp-step", "MLP 64-128-64-10 relu, cross-entropy, batch 64 of digits, SGD",
     ("torch", 0.6)),
    ("wide-mlp-step", "MLP 784-1024-1024-10 relu, cross-entropy, batch 256, SGD",
     ("numpy", 1.05)),
    ("conv-step", "conv3x3(1,16)-relu-pool2-conv3x3(16,32)-relu-pool2-Linear(1568,10), CE, "
                  "batch 64, 28x28, SGD", ("torch", 1.5)),
    ("rnn-unroll", "h = tanh(Wx.mm(x) + Wh.mm(h)), hidden 64, input 32, 50 steps, backward",
     ("torch", 0.8)),
]
KEYS = [w[0] for w in WORKLOADS]
GOALS = {w[0]: w[2] for w in WORKLOADS}
DESCRIPTIONS = {w[0]: w[1] for w in WORKLOADS}

BACKENDS = ("dyngrad", "numpy", "torch")
REFERENCE = "numpy"          # every backend's loss and gradients are compared with this one
IMPORT_GOAL_S = 0.1
MEMORY_WORKLOAD = "wide-mlp-step"

# float32 agreement: |x - ref| <= ATOL + RTOL * max|ref| (per array)
RTOL = 2e-4
ATOL = 1e-6
SEED = 1234
