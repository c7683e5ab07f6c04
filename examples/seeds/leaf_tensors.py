"""Leaf tensors, requires_grad contagion, grad_fn, a custom autograd.Function, backward on
non-scalars (the error and the gradient= argument), retain_graph, no_grad, retain_grad."""
import torch


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad


x = torch.ones(3, 3)
y = torch.full((3, 3), 2.0)
z = torch.ones((3, 3), requires_grad=True)
a = x + y
b = a + z
print(a.requires_grad, b.requires_grad, x.grad_fn, b.grad_fn.name())

w = torch.tensor([[0.5, -1.0], [2.0, 0.25]], requires_grad=True)
L = 10 - w * 3
try:
    L.backward()
except RuntimeError as e:
    print("RuntimeError:", str(e).splitlines()[0])
L.backward(torch.ones(L.shape))
print(w.grad)

s = Square.apply(torch.tensor([1.5, -2.0], requires_grad=True))
print(s, s.grad_fn.name())

a = torch.tensor([2.0], requires_grad=True)
b = torch.tensor([3.0], requires_grad=True)
c = torch.tensor([5.0], requires_grad=True)
d = torch.tensor([10.0], requires_grad=True)
u = a * b
t = torch.log(d)
v = t * c
t.retain_grad()
e = u + v
e.backward(retain_graph=True)
print(a.is_leaf, e.is_leaf, t.is_leaf, a.grad, b.grad, c.grad, d.grad, t.grad)
e.backward()
print(a.grad)
with torch.no_grad():
    n = a * 2
print(n.requires_grad, n.is_leaf)
