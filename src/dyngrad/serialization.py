"""``save`` / ``load``: PyTorch's checkpoint format by default, safetensors by extension.

``save`` writes what ``torch.save`` writes: a zip archive holding ``archive/data.pkl`` (a
protocol-2 pickle in which tensors are ``torch._utils._rebuild_tensor_v2`` calls over
persistent storage ids) and each storage's raw bytes as a stored, 64-byte aligned record, so
``torch.load(path, weights_only=True)`` reads it.  The pickle is written opcode by opcode
(``_torch_pickle``); PyTorch is never imported.  A path ending in ``.safetensors`` (or
``save_safetensors``) writes a safetensors file instead, through the ``safetensors`` library:
tensors under their names in the saved structure ("0.weight", "model.0.bias"), everything
else (dict keys and order, lists, numbers, strings) as JSON in the file's metadata, with a
CRC-32 over the structure and every tensor's description and bytes.

Any other picklable object (a whole ``nn.Module``, a user's class holding tensors) is
pickled whole, as ``torch.save`` does, with its tensors as persistent storages.

``load`` tells the formats apart by their bytes: PyTorch's zip archive, PyTorch's legacy
(pre-1.6) pickle format, or safetensors.  Pickles are read weights-only by default, as
``torch.load`` does since PyTorch 2.6: a restricted unpickler resolves tensor rebuilds,
storage types, dtypes, ``torch.Size`` / ``torch.device``, plain containers and the globals
the user allowlisted (``add_safe_globals`` / ``safe_globals``), never imports anything else,
and raises ``WeightsOnlyError`` (a ``pickle.UnpicklingError``, with PyTorch's message) naming
any other global; allowlisted classes are constructed only after every check.
``weights_only=False`` imports and runs what the pickle names, as PyTorch does, but refuses
globals that run commands or code and PyTorch's own classes.  A truncated, corrupt or
foreign file raises ``CheckpointError`` naming it.

Saving is atomic: the data is written and fsynced into a new file in the target's folder,
which is then renamed over the target, so a failed or killed save leaves an existing file
whole.  On Linux the new file is anonymous (``O_TMPFILE``) until it is complete, so a save
killed while writing leaves nothing behind; elsewhere (or where the file system lacks
``O_TMPFILE``) the temporary's name carries the writing process's pid, and the next save into
the folder removes temporaries whose writer is dead.
"""
from __future__ import annotations

import math
import os
import pickle
import re
import struct
import sys
import zlib
from collections import OrderedDict

import numpy as np

from . import _dtype as D
from . import _torch_pickle as TP
from ._tensor import Tensor

FORMAT = "dyngrad.v1"
_ST_DTYPES = {"F16": np.float16, "F32": np.float32, "F64": np.float64, "I8": np.int8,
              "I16": np.int16, "I32": np.int32, "I64": np.int64, "U8": np.uint8, "BOOL": np.bool_,
              "C64": np.complex64, "BF16": D.BF16}
_NP_TO_ST = {np.dtype(v): k for k, v in _ST_DTYPES.items()}
_MAX_NDIM = 64          # NumPy's limit


def _c_order(a: np.ndarray) -> np.ndarray:
    """``a`` in C order with its shape kept (np.ascontiguousarray turns 0-d into 1-d)."""
    return a if a.flags.c_contiguous else a.copy(order="C")


class CheckpointError(RuntimeError, pickle.UnpicklingError):
    """A file that is not a readable checkpoint: an UnpicklingError, as PyTorch raises for
    one, and a RuntimeError."""


class WeightsOnlyError(CheckpointError):
    """A pickle that names a global a weights-only load refuses (PyTorch raises
    ``pickle.UnpicklingError`` there); nothing from the file was run."""


class MissingParentError(RuntimeError, FileNotFoundError):
    """``save`` to a path whose folder does not exist: PyTorch's RuntimeError, and an OSError
    (FileNotFoundError) as the failed open is."""


class _Bad(Exception):
    """A malformed structure entry; ``where`` collects the path to it while unwinding."""

    def __init__(self, msg):
        super().__init__(msg)
        self.where: list = []


# --- structure <-> JSON -----------------------------------------------------------------
def _tensor_name(parts, tensors) -> str:
    """A tensor's safetensors name: its path in the saved structure ("0.weight",
    "model.layer.bias"), made unique."""
    base = ".".join(str(p) for p in parts) or "tensor"
    name, n = base, 1
    while name in tensors or name == "__metadata__":
        name = f"{base}#{n}"
        n += 1
    return name


def _encode(obj, tensors, path, parts=()):
    from .nn.parameter import Parameter
    if isinstance(obj, Tensor):
        key = _tensor_name(parts, tensors)
        tensors[key] = obj
        node = {"T": key, "param": isinstance(obj, Parameter), "rg": bool(obj._requires_grad)}
        if obj._data.dtype == np.complex128:
            node["as"] = "complex128"   # safetensors has no C128: stored as F64 pairs
        return node
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj if not isinstance(obj, float) or np.isfinite(obj) else {"f": repr(obj)}
    if isinstance(obj, (np.integer, np.floating, np.bool_)):
        return _encode(obj.item(), tensors, path, parts)
    if isinstance(obj, np.ndarray):
        return {"nd": _encode(Tensor._make(obj), tensors, path, parts)}
    if isinstance(obj, D.dtype):
        return {"dtype": obj.name}
    if isinstance(obj, dict):
        items = []
        for k, v in obj.items():
            if not isinstance(k, (str, int, float, bool)) and k is not None:
                raise TypeError(f"cannot save a dict key of type {type(k).__name__} at {path}: "
                                f"keys must be str, int, float or bool")
            items.append([k, _encode(v, tensors, f"{path}[{k!r}]", parts + (k,))])
        return {"dict": items, "ordered": isinstance(obj, OrderedDict)}
    if isinstance(obj, (list, tuple)):
        kind = "list" if isinstance(obj, list) else "tuple"
        return {kind: [_encode(v, tensors, f"{path}[{i}]", parts + (i,))
                       for i, v in enumerate(obj)]}
    if isinstance(obj, (set, frozenset)):
        return {"set": [_encode(v, tensors, path, parts + (i,)) for i, v in enumerate(obj)]}
    raise TypeError(f"dyngrad.save cannot store an object of type {type(obj).__name__} at {path}: "
                    f"only tensors, numbers, strings, None and dicts/lists/tuples of them are "
                    f"saved (no pickling)")


# the exact key set of each structure entry ``_encode`` writes ("as" is optional on tensors)
_KINDS = {"T": {"T", "param", "rg"}, "f": {"f"}, "nd": {"nd"}, "dtype": {"dtype"},
          "dict": {"dict", "ordered"}, "list": {"list"}, "tuple": {"tuple"}, "set": {"set"}}
_NONFINITE = {"inf", "-inf", "nan"}
_SCALARS = (str, int, float, bool)


def _decode(node, tensors, used):
    """The object ``node`` describes; raises ``_Bad`` for anything ``_encode`` never writes."""
    if node is None or isinstance(node, _SCALARS):
        return node
    if not isinstance(node, dict):
        raise _Bad(f"unexpected JSON {type(node).__name__}")
    kind = next((k for k in _KINDS if k in node), None)
    keys = set(node)
    if kind == "T":
        keys.discard("as")
    if kind is None or keys != _KINDS[kind]:
        raise _Bad(f"unknown entry with keys {sorted(node)}")
    v = node[kind]
    if kind == "T":
        return _decode_tensor(node, tensors, used)
    if kind == "f":
        if not isinstance(v, str) or v not in _NONFINITE:
            raise _Bad(f"{v!r} is not a non-finite float")
        return float(v)
    if kind == "nd":
        if not (isinstance(v, dict) and v.get("param") is False and v.get("rg") is False):
            raise _Bad("an array entry must hold a plain tensor")
        return _decode(v, tensors, used)._data
    if kind == "dtype":
        if not isinstance(v, str) or v not in _DTYPE_NAMES:
            raise _Bad(f"unknown dtype {v!r}")
        return D.to_dtype(v)
    if not isinstance(v, list):
        raise _Bad(f"a {kind} entry must hold a JSON array")
    if kind == "dict":
        ordered = node["ordered"]
        if not isinstance(ordered, bool):
            raise _Bad("'ordered' must be true or false")
        d = OrderedDict() if ordered else {}
        for item in v:
            if not (isinstance(item, list) and len(item) == 2):
                raise _Bad("a dict item must be a [key, value] pair")
            k, val = item
            if k is not None and not isinstance(k, _SCALARS):
                raise _Bad(f"a dict key must be a string, number, bool or null, not JSON "
                           f"{type(k).__name__}")
            if k in d:
                raise _Bad(f"duplicate dict key {k!r}")
            try:
                d[k] = _decode(val, tensors, used)
            except _Bad as e:
                e.where.append(f"[{k!r}]")
                raise
        return d
    out = []
    for i, item in enumerate(v):
        try:
            out.append(_decode(item, tensors, used))
        except _Bad as e:
            e.where.append(f"[{i}]")
            raise
    if kind == "list":
        return out
    if kind == "tuple":
        return tuple(out)
    try:
        s = set(out)
    except TypeError:
        raise _Bad("a set element is unhashable") from None
    if len(s) != len(out):
        raise _Bad("a set holds equal elements twice")
    return s


def _decode_tensor(node, tensors, used):
    from .nn.parameter import Parameter
    key, param, rg = node["T"], node["param"], node["rg"]
    if not isinstance(key, str) or key not in tensors:
        raise _Bad(f"tensor {key!r} is not in the file")
    if key in used:
        raise _Bad(f"tensor {key!r} is referenced twice")
    if not (isinstance(param, bool) and isinstance(rg, bool)):
        raise _Bad("'param' and 'rg' must be true or false")
    a = tensors[key]
    if "as" in node:
        if node["as"] != "complex128" or a.dtype != np.float64 or a.shape[-1:] != (2,):
            raise _Bad(f"tensor {key!r}: bad 'as' {node['as']!r} for a {a.dtype} array of "
                       f"shape {a.shape}")
        a = a.view(np.complex128)[..., 0]
    if rg and a.dtype not in D.INEXACT:
        raise _Bad(f"tensor {key!r} of dtype {a.dtype} cannot require gradients")
    used.add(key)
    t = Tensor._make(a)
    if param:
        return Parameter(t, rg)
    if rg:
        t.requires_grad_(True)
    return t


_DTYPE_NAMES = frozenset(d.name for d in D.ALL)


# --- the safetensors container ----------------------------------------------------------
def _checksum(structure: str, arrays: dict) -> str:
    """CRC-32 over the structure JSON and every tensor's name, dtype, shape and bytes."""
    crc = zlib.crc32(structure.encode("utf-8", "surrogatepass"))
    for k in sorted(arrays):
        a = arrays[k]
        crc = zlib.crc32(f"\0{k}\0{_NP_TO_ST[a.dtype]}\0{list(a.shape)}\0".encode(
            "utf-8", "surrogatepass"), crc)
        crc = zlib.crc32(a, crc)
    return f"{crc:08x}"


def _to_bytes(arrays: dict, metadata: dict) -> bytes:
    try:
        from safetensors.numpy import save as st_save
    except ImportError:
        raise ImportError("saving a .safetensors file needs the safetensors package (pip "
                          "install safetensors, or dyngrad[io]); any other file name saves "
                          "in PyTorch's format, which needs nothing") from None
    return st_save(arrays, metadata=metadata)


def _json(text: str, name: str, what: str, constants: bool):
    """``json.loads`` that refuses duplicate keys (and NaN/Infinity unless ``constants``) and
    turns every failure, deep nesting included, into ``CheckpointError``."""
    import json  # imported on first use: keeps `import dyngrad` fast

    def pairs(items):
        d = {}
        for k, v in items:
            if k in d:
                raise CheckpointError(f"{name}: the {what} has the key {k!r} twice; the file is "
                                      f"corrupt or not a checkpoint")
            d[k] = v
        return d

    def constant(c):
        raise CheckpointError(f"{name}: the {what} holds {c}, which is not a JSON number")

    try:
        return json.loads(text, object_pairs_hook=pairs,
                          parse_constant=None if constants else constant)
    except RecursionError:
        raise CheckpointError(f"{name}: the {what} is nested too deeply; the file is corrupt or "
                              f"not a checkpoint") from None
    except ValueError as e:   # JSONDecodeError, or an integer with too many digits
        raise CheckpointError(f"{name}: the {what} is not valid JSON ({e}); the file is corrupt "
                              f"or not a checkpoint") from None


def _is_count(x) -> bool:
    return type(x) is int and 0 <= x <= sys.maxsize


def _from_bytes(buf, name: str):
    if len(buf) < 8:
        raise CheckpointError(f"{name}: file is too short ({len(buf)} bytes) to be a dyngrad "
                              f"checkpoint; it is truncated or not a checkpoint")
    (n,) = struct.unpack("<Q", buf[:8])
    if n > len(buf) - 8 or n < 2:
        raise CheckpointError(f"{name}: header length {n} does not fit in a file of {len(buf)} "
                              f"bytes; the file is truncated, corrupt or not a checkpoint")
    try:
        text = bytes(buf[8:8 + n]).decode("utf-8")
    except UnicodeDecodeError as e:
        raise CheckpointError(f"{name}: the header is not UTF-8 ({e}); the file is corrupt or "
                              f"not a checkpoint") from None
    header = _json(text, name, "header", constants=False)
    if not isinstance(header, dict):
        raise CheckpointError(f"{name}: the header is not a JSON object; not a checkpoint")
    meta = header.pop("__metadata__", None)
    meta = {} if meta is None else meta
    if not (isinstance(meta, dict) and all(isinstance(v, str) for v in meta.values())):
        raise CheckpointError(f"{name}: the header's __metadata__ must map strings to strings")
    data = memoryview(buf)[8 + n:]
    spans = []
    for k, info in header.items():
        if not (isinstance(info, dict) and set(info) == {"dtype", "shape", "data_offsets"}):
            raise CheckpointError(f"{name}: entry {k!r} has a malformed description {info!r}; it "
                                  f"needs exactly dtype, shape and data_offsets")
        dt, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
        if not isinstance(dt, str) or dt not in _ST_DTYPES:
            raise CheckpointError(f"{name}: entry {k!r} has the unsupported dtype {dt!r}")
        if not (isinstance(shape, list) and len(shape) <= _MAX_NDIM
                and all(_is_count(s) for s in shape)):
            raise CheckpointError(f"{name}: entry {k!r} has the invalid shape {shape!r}; a shape "
                                  f"is a list of at most {_MAX_NDIM} non-negative integers")
        if not (isinstance(offsets, list) and len(offsets) == 2
                and all(_is_count(o) for o in offsets)):
            raise CheckpointError(f"{name}: entry {k!r} has the invalid data_offsets "
                                  f"{offsets!r}; they are two non-negative integers")
        start, end = offsets
        dt = np.dtype(_ST_DTYPES[dt])
        nbytes = math.prod(shape) * dt.itemsize
        if not start <= end <= len(data) or end - start != nbytes:
            raise CheckpointError(f"{name}: tensor {k!r} of shape {shape} needs {nbytes} bytes "
                                  f"but its data_offsets are {start}..{end} in a data section of "
                                  f"{len(data)}; the file is truncated or corrupt")
        spans.append((start, end, k, dt, tuple(shape)))
    spans.sort(key=lambda s: s[:2])
    pos = 0
    for start, end, k, _, _ in spans:
        if start != pos:
            raise CheckpointError(f"{name}: tensor {k!r} starts at byte {start} of the data but "
                                  f"the previous tensor ends at {pos} (overlap or gap); the file "
                                  f"is corrupt")
        pos = end
    if pos != len(data):
        raise CheckpointError(f"{name}: the data section has {len(data)} bytes but its tensors "
                              f"cover {pos}; the file is corrupt")
    arrays = {}
    for start, end, k, dt, shape in spans:
        try:
            a = np.frombuffer(data[start:end], dtype=dt).reshape(shape)
        except ValueError as e:   # e.g. a zero-size shape too large for NumPy
            raise CheckpointError(f"{name}: tensor {k!r} has the unusable shape {list(shape)} "
                                  f"({e})") from None
        arrays[k] = a.copy()
    arrays = {k: arrays[k] for k in header}   # the header's order
    return arrays, meta


def _read_all(f):
    """(bytes, name) of a path or binary file object, with PyTorch's errors."""
    if hasattr(f, "read"):
        buf = f.read()
        name = str(getattr(f, "name", "<file object>"))
        if not isinstance(buf, (bytes, bytearray)):
            raise CheckpointError(f"{name}: read() returned {type(buf).__name__}, not bytes; "
                                  f"open the file in binary mode ('rb')")
        return buf, name
    if not isinstance(f, (str, bytes, os.PathLike)):  # PyTorch takes it for a file object
        raise AttributeError(f"'{type(f).__name__}' object has no attribute 'seek'. You can "
                             f"only torch.load from a file that is seekable. Please pre-load "
                             f"the data into a buffer like io.BytesIO and try to load from it "
                             f"instead.")
    name = os.fspath(f)
    try:
        with open(name, "rb") as fh:
            buf = fh.read()
    except FileNotFoundError:
        raise FileNotFoundError(f"[Errno 2] No such file or directory: '{name}'") from None
    return buf, os.fsdecode(name)


def _kind(buf) -> str:
    """Which format ``buf`` is in, by its first bytes."""
    if buf[8:9] == b"{":      # a safetensors header (a zip's bytes 8-9 are its compression)
        return "safetensors"
    if buf[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return "zip"
    if buf[:1] == b"\x80" and buf[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return "legacy"
    return "safetensors"      # its checks name what is wrong


UNSAFE_MESSAGE = (
    "In PyTorch 2.6, we changed the default value of the `weights_only` argument in "
    "`torch.load` from `False` to `True`. Re-running `torch.load` with `weights_only` set to "
    "`False` will likely succeed, but it can result in arbitrary code execution. Do it only if "
    "you got the file from a trusted source."
)
_DOCS_MESSAGE = (
    "\n\nCheck the documentation of torch.load to learn more about types accepted by default "
    "with weights_only https://pytorch.org/docs/stable/generated/torch.load.html."
)


def _wo_message(message: str) -> str:
    """PyTorch's text around a WeightsUnpickler error (torch.load's _get_wo_message)."""
    if re.search(r"GLOBAL (\S+) was not an allowed global by default.", message):
        return ("Weights only load failed. This file can still be loaded, to do so you have "
                "two options, \033[1mdo those steps only if you trust the source of the "
                f"checkpoint\033[0m. \n\t(1) {UNSAFE_MESSAGE}\n\t(2) Alternatively, to load "
                "with `weights_only=True` please check the recommended steps in the following "
                "error message.\n\tWeightsUnpickler error: " + message + _DOCS_MESSAGE)
    out = f"Weights only load failed. {UNSAFE_MESSAGE}\n"
    if not re.search(r"whose module (\S+) is blocked", message):
        out += ("Please file an issue with the following so that we can make "
                "`weights_only=True` compatible with your use case: WeightsUnpickler error: ")
    return out + "\n\n" + message + _DOCS_MESSAGE


_TRUE = ("1", "y", "yes", "true")


def _resolve_weights_only(weights_only, pickle_module, kwargs) -> bool:
    """torch.load's choice of unpickler: the default (and the environment's overrides)."""
    not_set = weights_only is None
    if not_set:
        weights_only = pickle_module is None
    force = os.getenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "0").lower() in _TRUE
    force_no = os.getenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "0").lower() in _TRUE
    if force and force_no:
        raise RuntimeError("Only one of `TORCH_FORCE_WEIGHTS_ONLY_LOAD` or "
                           "`TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD` should be set, but both were "
                           "set.")
    if force:
        weights_only = True
    elif force_no and not_set:
        _warn_user("Environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected, since "
                   "the`weights_only` argument was not explicitly passed to `torch.load`, "
                   "forcing weights_only=False.")
        weights_only = False
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is "
                           "specified")
    if kwargs and weights_only:
        _warn_user("pickle_load_args only works if `weights_only=False`.")
    return bool(weights_only)


def _warn_user(msg: str) -> None:
    import warnings
    warnings.warn(msg, UserWarning, stacklevel=4)


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **kwargs):
    """Load a checkpoint: PyTorch's zip or legacy format, or safetensors.

    ``weights_only`` defaults to True, as in PyTorch 2.6+: the pickle may only rebuild
    tensors, storages, dtypes, ``torch.Size`` / ``torch.device``, plain containers and the
    globals allowlisted with ``add_safe_globals`` / ``safe_globals`` (constructed through
    NEWOBJ / REDUCE and BUILD, as PyTorch's weights-only unpickler allows); any other global
    raises ``WeightsOnlyError`` (a ``pickle.UnpicklingError``) with PyTorch's message and
    nothing from the file is run.  ``weights_only=False`` unpickles with a full unpickler
    (which runs the code the pickle names, as in PyTorch), except that globals which run
    commands or code (os, subprocess, eval, exec, open ...) are refused whatever the flag
    says, and PyTorch's own classes (a whole PyTorch module) cannot be loaded into dyngrad.
    Foreign, truncated or corrupt files raise ``CheckpointError`` (a RuntimeError) naming
    the file."""
    full = not _resolve_weights_only(weights_only, pickle_module, kwargs)
    buf, name = _read_all(f)
    kind = _kind(buf)
    if kind == "safetensors":
        return _load_safetensors(buf, name)
    try:
        allowed = TP.user_allowed_globals()
        if kind == "zip":
            return TP.read_zip(buf, map_location, full, allowed)
        return TP.read_legacy(buf, map_location, full, allowed)
    except TP.Unsafe as e:
        refused = f"; refused: {e.global_name}" if e.global_name else ""
        what = "PyTorch zip checkpoint" if kind == "zip" else "pickle (PyTorch's legacy format)"
        raise WeightsOnlyError(f"{name}: {_wo_message(str(e))}\n\n(dyngrad read the pickle in "
                               f"this {what} weights-only: nothing from the file was "
                               f"run{refused})") from None
    except TP.FullLoadRefused as e:
        what = str(e)
        if what.startswith("GLOBAL torch"):
            why = ("it is one of PyTorch's own classes (a whole PyTorch module or object "
                   "saved with torch.save(model)), which dyngrad cannot rebuild: save its "
                   "state_dict() in PyTorch and load that")
        else:
            why = ("it runs commands or code, which a checkpoint never needs; dyngrad "
                   "refuses it whatever weights_only says")
        raise WeightsOnlyError(
            f"{name}: Weights only load failed, and the load with weights_only=False refuses "
            f"{what} too: {why}. Nothing from the file was run.") from None
    except TP.Corrupt as e:
        what = "PyTorch zip checkpoint" if kind == "zip" else "pickle"
        raise CheckpointError(f"{name}: cannot load this {what}: {e}") from None


def load_safetensors(f):
    """Load a safetensors file (``save``'s structured files, or any flat one)."""
    buf, name = _read_all(f)
    return _load_safetensors(buf, name)


def _load_safetensors(buf, name):
    arrays, meta = _from_bytes(buf, name)
    if "structure" not in meta and meta.get("format") != FORMAT:
        # a plain safetensors file: a flat dict of tensors
        return OrderedDict((k, Tensor._make(v)) for k, v in arrays.items())
    if meta.get("format") != FORMAT:
        raise CheckpointError(f"{name}: written by an unknown format {meta.get('format')!r}")
    if "structure" not in meta or not set(meta) <= {"format", "structure", "crc32"}:
        raise CheckpointError(f"{name}: the metadata has the keys {sorted(meta)}; a "
                              f"{FORMAT} checkpoint has format, structure and crc32")
    if "crc32" in meta and meta["crc32"] != _checksum(meta["structure"], arrays):
        raise CheckpointError(f"{name}: checksum mismatch: the file's bytes were changed after "
                              f"it was written (corrupt or edited)")
    structure = _json(meta["structure"], name, "checkpoint structure", constants=True)
    used: set = set()
    try:
        out = _decode(structure, arrays, used)
    except _Bad as e:
        where = "obj" + "".join(reversed(e.where))
        raise CheckpointError(f"{name}: the checkpoint structure is corrupt at {where}: "
                              f"{e}") from None
    except RecursionError:
        raise CheckpointError(f"{name}: the checkpoint structure is nested too deeply") from None
    if len(used) != len(arrays):
        raise CheckpointError(f"{name}: the file holds tensors the structure never uses: "
                              f"{sorted(set(arrays) - used)}; the file is corrupt")
    return out


# --- atomic saving ----------------------------------------------------------------------
_TMP_PREFIX = ".dyngrad-save-"
_TMP_NAME = re.compile(r"\.dyngrad-save-([0-9a-f]{8})-([0-9]{1,10})-[0-9a-f]{16}\.tmp\Z")


def _machine_tag() -> str:
    """Names this machine and pid namespace in temporary names, so that a pid in a name is
    only ever judged where it means the same process (shared folders, containers)."""
    node = os.uname().nodename if hasattr(os, "uname") else os.environ.get("COMPUTERNAME", "")
    try:
        ns = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        ns = 0
    return f"{zlib.crc32(f'{node}/{ns}'.encode('utf-8', 'surrogateescape')):08x}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):   # e.g. PermissionError: it exists, it is not ours
        return True
    return True


def _remove_stale_temporaries(folder: str, tag: str) -> None:
    """Delete the temporaries of saves into ``folder`` whose process died (SIGKILL, power
    loss) before renaming them.  POSIX only: Windows' os.kill would terminate the process."""
    if os.name != "posix":
        return
    try:
        with os.scandir(folder) as entries:
            stale = [e.path for e in entries
                     if (m := _TMP_NAME.match(e.name)) and m[1] == tag
                     and int(m[2]) != os.getpid() and not _alive(int(m[2]))]
        for p in stale:
            os.unlink(p)
    except OSError:
        pass   # best effort: never fails a save that has succeeded


def _open_anonymous(folder: str):
    """A descriptor of a new nameless file in ``folder`` (Linux O_TMPFILE), or None."""
    flag = getattr(os, "O_TMPFILE", 0)
    if not flag:
        return None
    try:
        return os.open(folder, flag | os.O_WRONLY | os.O_CLOEXEC, 0o666)
    except OSError:   # the file system or kernel lacks O_TMPFILE
        return None


def _write_file(fd: int, blob, mode) -> None:
    with os.fdopen(fd, "wb", closefd=False) as fh:   # a buffered writer writes it all
        fh.write(blob)
    if mode is not None and hasattr(os, "fchmod"):
        os.fchmod(fd, mode)
    os.fsync(fd)


def _link(fd: int, dir_fd: int, name: str) -> bool:
    """Give the anonymous file ``fd`` the name ``name`` in the folder ``dir_fd``; False where
    that is impossible (no /proc).  linkat with AT_SYMLINK_FOLLOW, as open(2) documents: a
    plain os.link calls link(2), which does not follow /proc's magic link (EXDEV)."""
    try:
        os.link(f"/proc/self/fd/{fd}", name, dst_dir_fd=dir_fd, follow_symlinks=True)
        return True
    except OSError:
        return False


def _save_file(blob, path: str) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    tag = _machine_tag()
    try:   # an existing file keeps its mode; a new one gets 0o666 minus the umask
        mode = os.stat(path).st_mode & 0o7777
    except OSError:
        mode = None
    name = f"{_TMP_PREFIX}{tag}-{os.getpid()}-{os.urandom(8).hex()}.tmp"
    tmp = os.path.join(folder, name)
    dir_fd = fd = None
    named = False
    try:
        if os.name == "posix":   # the folder: for linkat, and to make the rename durable
            dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            fd = _open_anonymous(folder)
        if fd is not None:
            _write_file(fd, blob, mode)
            # the complete file gets a name only now and is renamed at once: a kill can only
            # leave it behind between these two system calls, and the next save removes it
            named = _link(fd, dir_fd, name)
            if named:
                os.replace(tmp, path)
                named = False
            else:   # no /proc: write a named temporary instead
                os.close(fd)
                fd = None
                named = _write_named(tmp, blob, mode)
                os.replace(tmp, path)
                named = False
        else:
            named = _write_named(tmp, blob, mode)
            os.replace(tmp, path)
            named = False
        if dir_fd is not None:
            try:
                os.fsync(dir_fd)
            except OSError:   # some file systems cannot fsync a folder
                pass
    except BaseException:
        if named:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        raise
    finally:
        for d in (fd, dir_fd):
            if d is not None:
                os.close(d)
    _remove_stale_temporaries(folder, tag)


def _write_named(tmp: str, blob, mode) -> bool:
    """Write ``blob`` into the new file ``tmp`` (the portable way); True once it exists."""
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
                 | getattr(os, "O_BINARY", 0), 0o666)
    try:
        _write_file(fd, blob, mode)
    except BaseException:
        os.close(fd)
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    os.close(fd)
    return True


def _is_safetensors_name(name) -> bool:
    if isinstance(name, bytes):
        name = os.fsdecode(name)
    return isinstance(name, str) and name.lower().endswith(".safetensors")


def _safetensors_blob(obj) -> bytes:
    import json  # imported on first use: keeps `import dyngrad` fast
    tensors: dict = {}
    structure = json.dumps(_encode(obj, tensors, "obj"))
    arrays = {}
    for k, t in tensors.items():
        a = _c_order(t._data)
        arrays[k] = a.reshape(a.shape + (1,)).view(np.float64) if a.dtype == np.complex128 else a
    meta = {"format": FORMAT, "structure": structure, "crc32": _checksum(structure, arrays)}
    return _to_bytes(arrays, meta)


def _check_target(f):
    if not hasattr(f, "write"):
        if not isinstance(f, (str, bytes, os.PathLike)):
            raise AttributeError("expected 'f' to be string, path, or a file-like object with a "
                                 "'write' attribute")
        parent = os.path.dirname(os.fsdecode(f))
        if parent and not os.path.isdir(parent):
            raise MissingParentError(f"Parent directory {parent} does not exist.")


def _write(blob, f) -> None:
    if hasattr(f, "write"):
        f.write(blob)
    else:
        _save_file(blob, os.fspath(f))


def save(obj, f, pickle_module=None, pickle_protocol=None, _use_new_zipfile_serialization=True):
    """Save ``obj`` (tensors, state dicts, containers, or any picklable object such as a whole
    module) to ``f`` (a path or a binary file) in PyTorch's zip format (``torch.load`` reads
    it); a name ending in ``.safetensors`` writes safetensors (tensors and containers only).
    ``_use_new_zipfile_serialization=False`` writes PyTorch's legacy format."""
    _check_target(f)
    target = getattr(f, "name", None) if hasattr(f, "write") else os.fspath(f)
    if _is_safetensors_name(target):
        blob = _safetensors_blob(obj)
    elif _use_new_zipfile_serialization:
        blob = TP.write_zip(obj)
    else:
        blob = TP.write_legacy(obj)
    _write(blob, f)


def save_safetensors(obj, f) -> None:
    """Save to ``f`` in the safetensors format, whatever its name (see ``save``)."""
    _check_target(f)
    _write(_safetensors_blob(obj), f)


# --- the weights-only allowlist (torch.serialization's API) ----------------------------------
def add_safe_globals(safe_globals) -> None:
    """Mark the given globals as safe for a ``weights_only`` load: allowlisted classes can be
    instantiated and have their state set, allowlisted functions can be called.  Each item is
    a function/class, or a ``(function/class, "module.qualname")`` pair naming it as the
    checkpoint does (by default ``f"{obj.__module__}.{obj.__qualname__}"``)."""
    TP.add_safe_globals(safe_globals)


def get_safe_globals() -> list:
    """The user-added globals that are safe for a ``weights_only`` load."""
    return TP.get_safe_globals()


def clear_safe_globals() -> None:
    """Clear the list of globals that are safe for a ``weights_only`` load."""
    TP.clear_safe_globals()


def get_unsafe_globals_in_checkpoint(f) -> list:
    """The GLOBALs in the pickle of the zip checkpoint ``f`` that a ``weights_only`` load
    would refuse (neither allowed by default nor allowlisted), as "module.name" strings; the
    pickle is disassembled, never run."""
    buf, name = _read_all(f)
    if _kind(buf) != "zip":
        raise ValueError("Expected input to be a checkpoint returned by torch.save")
    try:
        found = TP.globals_in_zip(buf)
    except TP.Corrupt as e:
        raise CheckpointError(f"{name}: {e}") from None
    return list(found - TP.default_global_names() - set(TP.user_allowed_globals()))


class safe_globals:
    """Context manager that adds the given globals as safe for a ``weights_only`` load
    while it is active (see ``add_safe_globals``)."""

    def __init__(self, safe_globals):
        self.safe_globals = safe_globals

    def __enter__(self):
        TP.add_safe_globals(self.safe_globals)

    def __exit__(self, type, value, tb):
        TP.remove_safe_globals(self.safe_globals)
