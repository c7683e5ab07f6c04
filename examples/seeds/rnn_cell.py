"""The RNN cell of the dynamic-graph tutorial: forward builds the graph, backward frees it."""
import torch
from torchviz import make_dot

Wh = torch.tensor([[0.1, -0.2, 0.3], [0.4, 0.5, -0.6], [-0.7, 0.8, 0.9]], requires_grad=True)
Wx = torch.tensor([[0.5, -1.0], [1.5, 0.25], [-0.5, 0.75]], requires_grad=True)
x = torch.tensor([[-0.8], [1.6]])
h = torch.tensor([[0.2], [-0.4], [1.0]])

i2h = Wx.mm(x)
h2h = Wh.mm(h)
next_h = i2h + h2h
next_h = next_h.tanh()
out = next_h.sum()
print('i2h:\n', i2h)
print('h2h:\n', h2h)
print('next_h:\n', next_h)
print('out:\n', out)

dot = make_dot(out, params={"Wh": Wh, "Wx": Wx})
print([line.strip() for line in dot.body if "label" in line and "->" not in line].__len__())

out.backward()
print('gradient of Wx:\n', Wx.grad)
print('\ngradient of Wh:\n', Wh.grad)
print('gradient of x:', x.grad)
print('gradient of h:', h.grad)
try:
    out.backward()
except RuntimeError as e:
    print(str(e).splitlines()[0][:60])
