"""Tensors from NumPy, float-only gradients, backward(gradient), freezing a layer while Adam
trains the rest, and saving/loading a state_dict (the autograd tutorial's second half)."""
import os
import tempfile

import numpy as np
import torch
from torch import nn, optim

x = torch.from_numpy(np.array([1.0, 2.0, 3.0]))
x.requires_grad_(True)
print(x)
try:
    torch.tensor([1, 2, 3], requires_grad=True)
except RuntimeError as e:
    print("RuntimeError:", e)

a = torch.tensor([0.0, 2.0, 8.0], requires_grad=True)
b = torch.tensor([5.0, 1.0, 7.0], requires_grad=True)
(a * b).backward(torch.FloatTensor([1.0, 1.0, 1.0]))
print(a.grad, b.grad)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 3)
        self.fc2 = nn.Linear(3, 3)
        self.fc3 = nn.Linear(3, 1)

    def forward(self, x):
        return self.fc3(self.fc2(self.fc1(x)))


def set_weights(net):
    with torch.no_grad():
        for i, p in enumerate(net.parameters()):
            n = p.numel()
            p.copy_(torch.tensor([0.1 * ((k * 7 + i * 3) % 11 - 5) for k in range(n)]).view(p.shape))


net = Net()
set_weights(net)
inp = torch.tensor([0.5, -1.0, 2.0, 0.25])
target = torch.tensor([1.5])
net.fc2.weight.requires_grad = False
net.fc2.bias.requires_grad = False
opt = optim.Adam(net.parameters(), lr=0.05)
crit = nn.MSELoss()
before = net.fc2.weight.detach().clone()
for _ in range(50):
    net.zero_grad()
    loss = crit(net(inp), target)
    loss.backward()
    opt.step()
print(f"loss {loss.item():.5f}", torch.equal(before, net.fc2.weight), net.fc2.weight.grad)
print(net.fc3.weight)

folder = tempfile.mkdtemp()
path = os.path.join(folder, "model")
torch.save(net.state_dict(), path)
net2 = Net()
print(net2.load_state_dict(torch.load(path)))
print(torch.equal(net2.fc1.weight, net.fc1.weight), list(net2.state_dict().keys()))
