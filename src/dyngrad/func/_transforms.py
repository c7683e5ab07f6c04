"""grad, grad_and_value, vjp, jvp, linearize, jacrev, jacfwd and hessian on dyngrad's tape.

Each transform is a level: its inputs become fresh differentiable tensors (a leaf when the
input does not require grad outside, an alias otherwise, so outer levels still see through
it), the function runs, and the result is computed with ``autograd.grad`` (reverse mode) or
``forward_ad`` (forward mode).  Inside ``vmap`` the fresh inputs are batched over every
active vmap level, so gradients with respect to unbatched inputs come out per sample.  At
the level's exit a result whose graph reaches nothing outside the level is detached, which
is what torch.func returns; a gradient is built with ``create_graph`` only when its graph
reaches outside (an outer transform, or a tensor requiring grad), so plain uses cost one
ordinary backward.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from .._tensor import Tensor
from ..autograd import forward_ad as fwAD
from ..autograd.grad_mode import enable_grad, is_grad_enabled
from . import _batched as B
from ._pytree import tree_flatten, tree_map, tree_unflatten, treespec_pprint
from ._vmap import vmap

argnums_t = "int | tuple[int, ...]"


# --- levels --------------------------------------------------------------------------------
def _vmap_levels():
    return tuple(lv for lv, _, _ in B.LEVELS)


def _make_diff(x):
    """A fresh differentiable stand-in for ``x`` at a new level: ``(logical, physical)``."""
    if not isinstance(x, Tensor):
        raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
    levels = _vmap_levels()
    phys = B.materialize(x, levels) if levels else B.unwrap(x)[0]
    if phys.requires_grad:
        leaf = phys.view_as(phys)
        own = None
    elif phys._requires_grad and fwAD._LEVEL:
        # carries only a tangent (grad inside jvp): a leaf that keeps the tangent, and whose
        # backward is recorded so the tangent flows through it
        tan = fwAD.unpack_dual(phys).tangent
        leaf = fwAD.make_dual(phys.detach(), tan).requires_grad_()
        own = None
    else:
        leaf = phys.detach().requires_grad_()
        own = leaf
    if _IN_JVP[0]:   # only a jvp's exit asks which leaves were made inside it
        _INTERNAL[id(leaf)] = leaf
    return B.wrap(leaf, levels), leaf, own


# every fresh leaf a transform made inside a forward-mode jvp (by id), held until the jvp
# exits: a leaf that died before would look like a tensor of an outer level to the exit walk
_INTERNAL: dict = {}
_IN_JVP = [0]


def _reaches_outside(tensors, own_ids) -> bool:
    """Whether the graph of ``tensors`` reaches a tensor requiring grad other than this
    level's own fresh leaves (so results must stay differentiable for an outer level)."""
    stack = []
    for t in tensors:
        if not isinstance(t, Tensor):
            continue
        p = B.unwrap(t)[0]
        if p._requires_grad:
            fn = p._grad_fn
            if fn is None:
                if id(p) not in own_ids:
                    return True
            else:
                stack.append(fn)
    seen = set()
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if type(n).__name__ == "AccumulateGrad":
            v = n.variable
            if v is None or id(v) not in own_ids:
                return True
            continue
        for nx, _ in n.next_functions:
            if nx is not None:
                stack.append(nx)
    return False


def _exit(tree, own_ids):
    """A result leaving its level: detached unless its graph reaches outside the level."""
    def f(t):
        if not isinstance(t, Tensor):
            return t
        p, lv = B.unwrap(t)
        if p._requires_grad and not _reaches_outside([p], own_ids):
            return B.wrap(p.detach(), lv)
        return t
    return tree_map(f, tree)


def _exit_aux(tree, own_ids):
    """``aux`` leaving its level: tensors only, as torch.func's unwrapping requires."""
    for t in tree_flatten(tree)[0]:
        if not isinstance(t, Tensor):
            raise RuntimeError(f"Expected tensors, got unsupported type {type(t)}")
    return _exit(tree, own_ids)


def _autograd_grad(outputs, inputs, grad_outputs, retain_graph=False, create_graph=False):
    """autograd.grad that gives zeros for inputs the outputs do not depend on."""
    from .. import autograd, zeros_like
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if not pairs:
        return tuple(zeros_like(i) for i in inputs)
    outs, gos = zip(*pairs)
    res = autograd.grad(outs, inputs, gos, retain_graph=retain_graph, create_graph=create_graph,
                        allow_unused=True)
    return tuple(zeros_like(i) if r is None else r for r, i in zip(res, inputs))


def _run(func, args, kwargs):
    """``func(*args, **kwargs)`` counted as running inside a transform."""
    B.KINDS.append("grad")
    try:
        return func(*args, **kwargs)
    finally:
        B.KINDS.pop()


# --- argnums -----------------------------------------------------------------------------
def _validate_argnum(argnum, num_args):
    if not isinstance(argnum, int):
        raise RuntimeError(f"argnum must be int, got: {type(argnum)}")
    if 0 <= argnum < num_args:
        return argnum
    if -num_args <= argnum < 0:
        return argnum + num_args
    raise RuntimeError(f"Got argnum={argnum}, but only {num_args} positional inputs")


def _slice_argnums(args, argnums, as_tuple=True):
    if not isinstance(argnums, (int, tuple)):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    if isinstance(argnums, int):
        argnums = _validate_argnum(argnums, len(args))
        return (args[argnums],) if as_tuple else args[argnums]
    argnums = tuple(_validate_argnum(a, len(args)) for a in argnums)
    if len(argnums) == 0:
        raise RuntimeError("argnums must be non-empty")
    if len(set(argnums)) != len(argnums):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return tuple(args[i] for i in argnums)


def _replace_args(old, new, argnums):
    if isinstance(argnums, int):
        argnums = _validate_argnum(argnums, len(old))
        return tuple(new if i == argnums else a for i, a in enumerate(old))
    argnums = tuple(_validate_argnum(a, len(old)) for a in argnums)
    return tuple(new[argnums.index(i)] if i in argnums else a for i, a in enumerate(old))


def _prepare(args, argnums):
    """Fresh differentiable stand-ins for the arguments at ``argnums`` (None: all)."""
    diff = args if argnums is None else _slice_argnums(args, argnums, as_tuple=False)
    flat, spec = tree_flatten(diff)
    made = [_make_diff(x) for x in flat]
    logical = tree_unflatten([m[0] for m in made], spec)
    new_args = logical if argnums is None else _replace_args(args, logical, argnums)
    leaves = [m[1] for m in made]
    own = {id(m[2]) for m in made if m[2] is not None}
    return new_args, leaves, own, spec


def _wrap_like(grads, leaves):
    levels = _vmap_levels()
    return [B.wrap(g, levels) for g in grads]


# --- grad --------------------------------------------------------------------------------
def grad_and_value(func: Callable, argnums: int | tuple[int, ...] = 0,
                   has_aux: bool = False) -> Callable:
    """``func`` returning ``(gradient w.r.t. argnums, value)`` (with ``aux`` when has_aux):
    one reverse pass, as torch.func.grad_and_value."""
    func = B.dispatching(func)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with enable_grad():
            args, leaves, own, spec = _prepare(args, argnums)
            output = _run(func, args, kwargs)
            aux = None
            if has_aux:
                if not (isinstance(output, tuple) and len(output) == 2):
                    raise RuntimeError("grad_and_value(f)(*args): output of function f should be "
                                       "a tuple: (output, aux) if has_aux is True")
                output, aux = output
            if not isinstance(output, Tensor):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"Tensor, got {type(output)}")
            if output.dim() != 0:
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"scalar Tensor, got tensor with {output.dim()} dims. Maybe "
                                   f"you wanted to use the vjp or jacrev APIs instead?")
            out_phys = B.unwrap(output)[0]
            outside = _reaches_outside([out_phys], own)
            from .. import ones_like
            g = _autograd_grad([out_phys], leaves, [ones_like(out_phys)],
                               retain_graph=outside, create_graph=outside)
            grads = tree_unflatten(_wrap_like(g, leaves), spec)
            output = _exit(output, own)
            if has_aux:
                aux = _exit_aux(aux, own)
                return grads, (output, aux)
            return grads, output
    return wrapper


def grad(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable:
    """``func``'s gradient with respect to the arguments at ``argnums`` (``func`` returns a
    scalar), as torch.func.grad; composes with every other transform."""
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        if has_aux:
            return g, value[1]
        return g
    return wrapper


# --- vjp ---------------------------------------------------------------------------------
def _check_outputs(flat, api):
    if len(flat) == 0:
        raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output (got "
                           f"output = {flat})")
    for o in flat:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got "
                               f"unsupported type {type(o)}")


def _vjp_with_argnums(func, *primals, argnums=None, has_aux=False):
    func = B.dispatching(func)
    created = _vmap_levels()
    with enable_grad():
        args, leaves, own, pspec = _prepare(primals, argnums)
        out = _run(func, args, {})
        aux = None
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError("vjp(f, *primals): output of function f should be a tuple: "
                                   "(output, aux) if has_aux is True")
            out, aux = out
            aux = _exit_aux(aux, own)
        flat_out, ospec = tree_flatten(out)
        _check_outputs(flat_out, "vjp(f, *primals)")
        for o in flat_out:
            if not (o.is_floating_point() or o.is_complex()):
                raise RuntimeError(f"vjp(f, ...): All outputs of f must be floating-point or "
                                   f"complex Tensors, got Tensor with dtype {o.dtype}")
        outs = [B.unwrap(o) for o in flat_out]
        results = _exit(out, own)

    def vjp_fn(cotangents, retain_graph: bool = True, create_graph: bool | None = None):
        flat_ct, cspec = tree_flatten(cotangents)
        if cspec != ospec:
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as "
                               f"pytree structure of outputs to the function. cotangents: "
                               f"{treespec_pprint(cspec)}, primal output: "
                               f"{treespec_pprint(ospec)}")
        extra = set(B._union(*flat_ct)) - set(created)
        if extra:
            # cotangents batched by a vmap entered after the forward: run the forward again
            # inside it, so the whole pullback is batched
            r = _vjp_with_argnums(func, *primals, argnums=argnums, has_aux=has_aux)
            return r[1](cotangents, retain_graph=retain_graph, create_graph=create_graph)
        phys_o, gos = [], []
        for (p, lv), ct in zip(outs, flat_ct):
            if not set(B._union(ct)) <= set(lv):
                continue   # the output does not vary with this batch: it cannot depend on it
            phys_o.append(p)
            g = B.expand_batch(B.align(ct, lv), lv) if lv else B.unwrap(ct)[0]
            gos.append(g)
        with enable_grad():
            outside = (create_graph is not False and is_grad_enabled()) and (
                _reaches_outside(phys_o, own) or any(g.requires_grad for g in gos))
            res = _autograd_grad(phys_o, leaves, gos, retain_graph=retain_graph,
                                 create_graph=outside)
        return tree_unflatten(_wrap_like(res, leaves), pspec)

    if has_aux:
        return results, vjp_fn, aux
    return results, vjp_fn


def vjp(func: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """``(func(*primals), vjp_fn)``: ``vjp_fn(cotangents)`` is the vector-Jacobian product
    (one reverse pass each call), as torch.func.vjp."""
    return _vjp_with_argnums(func, *primals, has_aux=has_aux)


# --- jvp ---------------------------------------------------------------------------------
_JVP = "jvp(f, primals, tangents)"


def _check_tensors(flat, api, argname):
    if len(flat) == 0:
        raise RuntimeError(f"{api}: Expected {argname} to contain at least one Tensor.")
    for o in flat:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"{api}: Expected {argname} to only contain Tensors, got "
                               f"{type(o)}")


def _jvp_with_argnums(func, primals, tangents, argnums, *, strict=False, has_aux=False):
    func = B.dispatching(func)
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{_JVP}: Expected primals to be a tuple. E.g. it should be valid to "
                           f"call f(*primals).")
    diff = primals if argnums is None else _slice_argnums(primals, argnums)
    flat_p, pspec = tree_flatten(diff)
    flat_t, tspec = tree_flatten(tangents)
    if pspec != tspec:
        raise RuntimeError(f"{_JVP}: Expected primals and tangents to have the same python "
                           f"structure. For example, if primals is a tuple of 3 tensors, "
                           f"tangents also must be. Got primals with structure {pspec} and "
                           f"tangents with structure {tspec}")
    _check_tensors(flat_p, _JVP, "primals")
    _check_tensors(flat_t, _JVP, "tangents")
    levels = _vmap_levels()

    def phys(x):
        return B.materialize(x, levels) if levels else B.unwrap(x)[0]

    def finish(out, aux, tangent_of):
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError(f"{_JVP}: output of function f should be a tuple: (output, "
                                   f"aux) if has_aux is True")
            out, aux = out
        flat_out, ospec = tree_flatten(out)
        _check_outputs(flat_out, _JVP)
        prim, tan = [], []
        for o in flat_out:
            p, lv = B.unwrap(o)
            a, b = tangent_of(p)
            prim.append(B.wrap(a, lv))
            tan.append(B.wrap(b, lv))
        return tree_unflatten(prim, ospec), tree_unflatten(tan, ospec), aux

    def with_args(new):
        if argnums is None:
            return new
        return _replace_args(primals, new, argnums if isinstance(argnums, tuple) else argnums)

    # forward mode on dual tensors; the double vjp (reverse mode twice, which nests and
    # gives tangents an outer reverse level can differentiate) when a forward level is
    # already active or the tangents must stay differentiable
    if not fwAD._LEVEL and not any(B.unwrap(a)[0].requires_grad for a in flat_p + flat_t):
        before = set(_INTERNAL)
        _IN_JVP[0] += 1
        try:
            with enable_grad(), fwAD.dual_level():
                for p, t in zip(flat_p, flat_t):
                    if tuple(p.shape) != tuple(t.shape):
                        fwAD.make_dual(B.unwrap(p)[0], B.unwrap(t)[0])  # PyTorch's size error
                duals = [B.wrap(fwAD.make_dual(phys(p), phys(t)), levels)
                         for p, t in zip(flat_p, flat_t)]
                mine = {id(B.unwrap(d)[0]) for d in duals}
                new = tree_unflatten(duals, pspec)
                out = _run(func, with_args(new if argnums is None or not isinstance(argnums, int)
                                           else new[0]), {})

                def tangent_of(p):
                    from .. import zeros_like
                    prim, tan = fwAD.unpack_dual(p)
                    if tan is None:
                        if strict:
                            raise RuntimeError("jvp(f, primals, tangents, strict=True): The output "
                                               "of f is independent of the inputs. This is not "
                                               "allowed with strict=True.")
                        tan = zeros_like(prim)
                    return prim, tan
                res = finish(out, None, tangent_of)
            prim_out, tan_out, aux = res
            ids = (set(_INTERNAL) - before) | mine
            prim_out = _exit(prim_out, ids)
            tan_out = _exit(tan_out, ids)
            aux = _exit_aux(aux, ids) if has_aux else None
        finally:
            _IN_JVP[0] -= 1
            if not _IN_JVP[0]:
                _INTERNAL.clear()
        if not any(isinstance(t, Tensor) and B.unwrap(t)[0].requires_grad
                   for t in tree_flatten((prim_out, tan_out, aux))[0]):
            return (prim_out, tan_out, aux) if has_aux else (prim_out, tan_out)
        # the function closes over tensors an outer level differentiates: run it again
    with enable_grad():
        made = [_make_diff(p) for p in flat_p]
        new = tree_unflatten([m[0] for m in made], pspec)
        leaves = [m[1] for m in made]
        own = {id(m[2]) for m in made if m[2] is not None}
        out = _run(func, with_args(new if argnums is None or not isinstance(argnums, int)
                                   else new[0]), {})
        from .. import zeros_like
        cache = {}

        def tangent_of(p):
            cache[id(p)] = p
            return p, None
        prim_out, _, aux = finish(out, None, tangent_of)
        flat_o = [B.unwrap(o)[0] for o in tree_flatten(prim_out)[0]]
        us = [zeros_like(o).requires_grad_() for o in flat_o]
        g = _autograd_grad(flat_o, leaves, us, retain_graph=True, create_graph=True)
        ts = [phys(t) for t in flat_t]
        outside = _reaches_outside(flat_o, own) or any(t.requires_grad for t in ts)
        jv = _autograd_grad(list(g), us, ts, retain_graph=True, create_graph=outside)
        ospec = tree_flatten(prim_out)[1]
        olv = [B.unwrap(o)[1] for o in tree_flatten(prim_out)[0]]
        tan_out = tree_unflatten([B.wrap(t, lv) for t, lv in zip(jv, olv)], ospec)
        prim_out = _exit(prim_out, own)
        if has_aux:
            return prim_out, tan_out, _exit_aux(aux, own)
        return prim_out, tan_out


def jvp(func: Callable, primals: Any, tangents: Any, *, strict: bool = False,
        has_aux: bool = False) -> tuple:
    """``(func(*primals), J @ tangents)``: the Jacobian-vector product in one forward pass
    (forward-mode AD), as torch.func.jvp."""
    return _jvp_with_argnums(func, primals, tangents, argnums=None, strict=strict,
                             has_aux=has_aux)


def linearize(func: Callable, *primals: Any) -> tuple[Any, Callable]:
    """``(func(*primals), jvp_fn)``: ``jvp_fn(*tangents)`` gives the Jacobian-vector product
    at ``primals``, as torch.func.linearize."""
    output = func(*primals)
    output = tree_map(lambda t: t.detach() if isinstance(t, Tensor) and
                      not _reaches_outside([t], set()) else t, output)
    flat_p, pspec = tree_flatten(primals)
    shapes = [tuple(p.shape) for p in flat_p]
    dtypes = [p.dtype for p in flat_p]
    from .._tensor import Size

    def jvp_fn(*tangents):
        flat_t, tspec = tree_flatten(tangents)
        if tspec != pspec:
            raise RuntimeError(f"Expected the tangents {tspec} to have the same argspec as the "
                               f"primals {pspec}")
        for i, t in enumerate(flat_t):
            if tuple(t.shape) != shapes[i]:
                raise RuntimeError(f"tangent:{i} with shape {t.shape} in flattened pytree "
                                   f"doesn't match the shape {Size(shapes[i])} of the "
                                   f"corresponding primal.")
            if t.dtype != dtypes[i]:
                raise RuntimeError(f"tangent:{i} with dtype {t.dtype} in flattened pytree "
                                   f"doesn't match the dtype {dtypes[i]} of the corresponding "
                                   f"primal.")
        return jvp(func, primals, tangents)[1]

    return output, jvp_fn


# --- Jacobians -----------------------------------------------------------------------------
def _error_if_complex(name, args, is_input):
    for i, a in enumerate(tree_flatten(args)[0]):
        if isinstance(a, Tensor) and a.dtype.is_complex:
            kind = "inputs" if is_input else "outputs"
            raise RuntimeError(f"{name}: Expected all {kind} to be real but received complex "
                               f"tensor at flattened input idx: {i}")


def _chunk_sizes(total, chunk):
    sizes = [chunk] * (total // chunk)
    if total % chunk:
        sizes.append(total % chunk)
    return sizes


def _basis_chunks(tensors, numels, chunk_size=None):
    total = sum(numels)
    if chunk_size and chunk_size < total:
        sizes = _chunk_sizes(total, chunk_size)
    else:
        chunk_size = total
        sizes = [total]
    starts = []
    s = 0
    for n in numels:
        starts.append(s)
        s -= n
    for ci, n_rows in enumerate(sizes):
        chunks = []
        for t, n, st in zip(tensors, numels, starts):
            c = B.unwrap(t)[0].new_zeros(n_rows, n) if not B.is_batched(t) else \
                t.new_zeros(n_rows, n)
            c.diagonal(int(st) + ci * chunk_size).fill_(1)
            chunks.append(c.view(n_rows, *t.shape))
        yield tuple(chunks)


def jacrev(func: Callable, argnums: int | tuple[int, ...] = 0, *, has_aux: bool = False,
           chunk_size: int | None = None, _preallocate_and_copy: bool = False) -> Callable:
    """The Jacobian of ``func`` with respect to ``argnums`` by reverse mode: the pullback of
    every basis cotangent, run as one batched pass under vmap (torch.func.jacrev)."""
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args):
        _error_if_complex("jacrev", args, is_input=True)
        r = _vjp_with_argnums(func, *args, argnums=argnums, has_aux=has_aux)
        if has_aux:
            output, vjp_fn, aux = r
        else:
            output, vjp_fn = r
        flat_out, ospec = tree_flatten(output)
        _error_if_complex("jacrev", flat_out, is_input=False)
        numels = tuple(o.numel() for o in flat_out)
        primals = _slice_argnums(args, argnums)
        flat_p, pspec = tree_flatten(primals)
        from .. import cat, split
        results = []
        for basis_chunk in _basis_chunks(flat_out, numels, chunk_size):
            if chunk_size == 1:
                basis_chunk = tuple(t.squeeze(0) for t in basis_chunk)
            basis = tree_unflatten(list(basis_chunk), ospec)
            if chunk_size == 1:
                cr = vjp_fn(basis)
            else:
                cr = vmap(vjp_fn)(basis)
            fr = tree_flatten(cr)[0]
            if chunk_size == 1:
                fr = [t.unsqueeze(0) for t in fr]
            results.append(fr)
        if len(results) == 1:
            per_input = results[0]
        else:
            per_input = [cat([r[i] for r in results], 0) for i in range(len(flat_p))]
        per_input = [split(r, list(numels), dim=0) for r in per_input]
        fifo = [tuple(s.view(tuple(o.shape) + tuple(p.shape)) for s, o in zip(splits, flat_out))
                for splits, p in zip(per_input, flat_p)]
        return _jacobian_tree(tuple(zip(*fifo)), pspec, ospec, argnums, has_aux,
                              aux if has_aux else None)
    return wrapper


def _jacobian_tree(blocks, pspec, ospec, argnums, has_aux, aux):
    """jacrev/jacfwd's result from its blocks (per output, per input): the inputs' and the
    outputs' pytrees rebuilt around them (one argument unwrapped), with ``aux`` when asked."""
    out_in = tuple(tree_unflatten(list(b), pspec) for b in blocks)
    if isinstance(argnums, int):
        out_in = tuple(b[0] for b in out_in)
    res = tree_unflatten(list(out_in), ospec)
    return (res, aux) if has_aux else res


def _safe_unflatten(t, dim, shape):
    if len(shape) == 0:
        return t.squeeze(dim)
    return t.unflatten(dim, shape)


def jacfwd(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False, *,
           randomness: str = "error") -> Callable:
    """The Jacobian of ``func`` with respect to ``argnums`` by forward mode: the tangent of
    every basis vector, run as one batched pass under vmap (torch.func.jacfwd)."""
    @functools.wraps(func)
    def wrapper(*args):
        _error_if_complex("jacfwd", args, is_input=True)
        primals = args if argnums is None else _slice_argnums(args, argnums)
        flat_p, pspec = tree_flatten(primals)
        numels = tuple(p.numel() for p in flat_p)
        basis = tree_unflatten(list(next(_basis_chunks(flat_p, numels))), pspec)

        def push_jvp(basis):
            out = _jvp_with_argnums(func, args, basis, argnums=argnums, has_aux=has_aux)
            _error_if_complex("jacfwd", out[0], is_input=False)
            if has_aux:
                _, jvp_out, aux = out
                return jvp_out, aux
            return out[1]

        results = vmap(push_jvp, randomness=randomness)(basis)
        aux = None
        if has_aux:
            results, aux = results
            fa, aspec = tree_flatten(aux)
            aux = tree_unflatten([v[0] for v in fa], aspec)
        jac_outs, spec = tree_flatten(results)
        from .. import split
        jac_outs_ins = tuple(
            tuple(_safe_unflatten(joi, -1, tuple(p.shape)) for p, joi in
                  zip(flat_p, split(jo.movedim(0, -1), list(numels), dim=-1)))
            for jo in jac_outs)
        return _jacobian_tree(jac_outs_ins, pspec, spec, argnums, has_aux, aux)
    return wrapper


def hessian(func: Callable, argnums: int | tuple[int, ...] = 0) -> Callable:
    """The Hessian of scalar ``func``: forward-mode over reverse-mode, as torch.func.hessian."""
    return jacfwd(jacrev(func, argnums), argnums)


__all__ = ["grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd", "hessian"]
