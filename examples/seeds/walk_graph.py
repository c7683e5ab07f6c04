"""grad_fn names, next_functions, walking the graph and detach (the GAN tutorial's demo)."""
import torch
import torch.nn.functional as F


def walk_graph(fn, depth=0):
    if fn is None:
        return
    print("  " * depth + type(fn).__name__)
    for u, _ in fn.next_functions:
        walk_graph(u, depth + 1)


a = torch.tensor(1.0, requires_grad=True)
b = torch.tensor(2.0, requires_grad=True)
c = torch.tensor(3.0, requires_grad=True)
d = a + b
e = F.relu(d.detach()) + c
f = F.relu(d) + c
print(d, e, f)
print(d.grad_fn.name(), [type(u).__name__ if u else None for u, _ in d.grad_fn.next_functions])
walk_graph(e.grad_fn)
walk_graph(f.grad_fn)
f.backward()
print(a.grad, b.grad, c.grad)
x = torch.tensor(2.0, requires_grad=True)
z = x ** 3
z.backward()
print(z.grad_fn.name(), x.grad)
try:
    z.backward()
except RuntimeError as err:
    print(str(err).splitlines()[0][:70])
