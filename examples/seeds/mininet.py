"""MiniNet from the tutorial: parameters as leaves, updates through .data, the in-place error."""
import torch
from torch import nn


class MiniNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.L = 2
        self.fc = nn.ModuleDict({str(i): None for i in range(1, self.L + 1)})
        self.fc['1'] = nn.Linear(in_features=2, out_features=3)
        self.fc['2'] = nn.Linear(in_features=3, out_features=2)

    def forward(self, x):
        out = torch.flatten(x, 1)
        a1 = torch.tanh(self.fc['1'](out))
        return torch.tanh(self.fc['2'](a1))


def check_computational_graph(model):
    res = True
    for i_layer in range(1, model.L + 1):
        for param_name in ['weight', 'bias']:
            param = getattr(model.fc[str(i_layer)], param_name)
            msg = "model.fc[" + str(i_layer) + "]." + param_name
            if not param.requires_grad:
                print(msg + " does not require grad!")
                res = False
            if not param.is_leaf:
                print(msg + " is not a leaf!")
                res = False
    if res:
        print("All parameters seem correctly attached to the computational graph!")


model = MiniNet()
with torch.no_grad():
    for k, p in enumerate(model.parameters()):
        p.data = torch.arange(p.numel(), dtype=torch.float).reshape(p.shape) / 10 - 0.2 * k
check_computational_graph(model)
model.fc['1'].weight.data[0, 0] = 1.5
model.fc['2'].bias.data[:] = torch.ones(2)
print(model.fc['1'].weight)
print(model.fc['2'].bias)
x = torch.tensor([[1., 1.]])
y = model(x)
loss = torch.sum((y - torch.tensor([[0., 1.]])) ** 2)
loss.backward()
print(y)
print(loss)
print(model.fc['1'].weight.grad)
print(model.fc['2'].weight.grad)
model.zero_grad()
print(model.fc['1'].weight.grad)
print(y.requires_grad, loss.requires_grad, x.requires_grad)
with torch.no_grad():
    a = 10 + y
print(a.requires_grad)
try:
    model.fc['1'].weight[:, :] = torch.zeros_like(model.fc['1'].weight)
except RuntimeError as err:
    print(str(err).splitlines()[0])
