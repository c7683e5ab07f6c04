"""``save`` / ``load``: tensors, state dicts and nested containers in the safetensors format.

Tensors are stored as safetensors entries; everything else (dict keys and order, lists,
numbers, strings) as JSON in the file's metadata.  Nothing is ever pickled, so loading a file
never runs code from it.  Saving is atomic: a temporary file is written, flushed and then
renamed over the target, so a failed save leaves an existing file whole.
"""
from __future__ import annotations

import os
import struct
from collections import OrderedDict

import numpy as np

from . import _dtype as D
from ._tensor import Tensor

FORMAT = "dyngrad.v1"
_ST_DTYPES = {"F16": np.float16, "F32": np.float32, "F64": np.float64, "I8": np.int8,
              "I16": np.int16, "I32": np.int32, "I64": np.int64, "U8": np.uint8, "BOOL": np.bool_,
              "C64": np.complex64}
_NP_TO_ST = {np.dtype(v): k for k, v in _ST_DTYPES.items()}


def _c_order(a: np.ndarray) -> np.ndarray:
    """``a`` in C order with its shape kept (np.ascontiguousarray turns 0-d into 1-d)."""
    return a if a.flags.c_contiguous else a.copy(order="C")


class CheckpointError(RuntimeError):
    """A file that is not a readable dyngrad checkpoint."""


# --- structure <-> JSON -----------------------------------------------------------------
def _encode(obj, tensors, path):
    from .nn.parameter import Parameter
    if isinstance(obj, Tensor):
        key = f"t{len(tensors)}"
        tensors[key] = obj
        return {"T": key, "param": isinstance(obj, Parameter), "rg": bool(obj._requires_grad)}
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj if not isinstance(obj, float) or np.isfinite(obj) else {"f": repr(obj)}
    if isinstance(obj, (np.integer, np.floating, np.bool_)):
        return _encode(obj.item(), tensors, path)
    if isinstance(obj, np.ndarray):
        return {"nd": _encode(Tensor._make(obj), tensors, path)}
    if isinstance(obj, D.dtype):
        return {"dtype": obj.name}
    if isinstance(obj, dict):
        items = []
        for k, v in obj.items():
            if not isinstance(k, (str, int, float, bool)) and k is not None:
                raise TypeError(f"cannot save a dict key of type {type(k).__name__} at {path}: "
                                f"keys must be str, int, float or bool")
            items.append([k, _encode(v, tensors, f"{path}[{k!r}]")])
        return {"dict": items, "ordered": isinstance(obj, OrderedDict)}
    if isinstance(obj, (list, tuple)):
        kind = "list" if isinstance(obj, list) else "tuple"
        return {kind: [_encode(v, tensors, f"{path}[{i}]") for i, v in enumerate(obj)]}
    if isinstance(obj, (set, frozenset)):
        return {"set": [_encode(v, tensors, path) for v in obj]}
    raise TypeError(f"dyngrad.save cannot store an object of type {type(obj).__name__} at {path}: "
                    f"only tensors, numbers, strings, None and dicts/lists/tuples of them are "
                    f"saved (no pickling)")


def _decode(node, tensors):
    from .nn.parameter import Parameter
    if not isinstance(node, dict):
        return node
    if "T" in node:
        t = tensors[node["T"]]
        if node.get("param"):
            return Parameter(t, node.get("rg", True))
        if node.get("rg"):
            t.requires_grad_(True)
        return t
    if "f" in node:
        return float(node["f"])
    if "nd" in node:
        return _decode(node["nd"], tensors)._data
    if "dtype" in node:
        return D.to_dtype(node["dtype"])
    if "dict" in node:
        d = OrderedDict() if node.get("ordered") else {}
        for k, v in node["dict"]:
            d[k] = _decode(v, tensors)
        return d
    if "list" in node:
        return [_decode(v, tensors) for v in node["list"]]
    if "tuple" in node:
        return tuple(_decode(v, tensors) for v in node["tuple"])
    if "set" in node:
        return set(_decode(v, tensors) for v in node["set"])
    raise CheckpointError(f"unknown entry in checkpoint structure: {sorted(node)}")


# --- the safetensors container ----------------------------------------------------------
def _to_bytes(arrays: dict, metadata: dict) -> bytes:
    import json  # imported on first use: keeps `import dyngrad` fast
    try:
        from safetensors.numpy import save as st_save
    except ImportError:
        st_save = None
    if st_save is not None:
        return st_save(arrays, metadata=metadata)
    # the same format, written directly when the library is not installed
    header = {"__metadata__": metadata}
    offset = 0
    blobs = []
    for k in sorted(arrays, key=lambda k: (-arrays[k].dtype.alignment, k)):
        a = _c_order(arrays[k])
        b = a.tobytes()
        header[k] = {"dtype": _NP_TO_ST[a.dtype], "shape": list(a.shape),
                     "data_offsets": [offset, offset + len(b)]}
        offset += len(b)
        blobs.append(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + b"".join(blobs)


def _from_bytes(buf: bytes, name: str):
    import json  # imported on first use: keeps `import dyngrad` fast
    if len(buf) < 8:
        raise CheckpointError(f"{name}: file is too short ({len(buf)} bytes) to be a dyngrad "
                              f"checkpoint; it is truncated or not a checkpoint")
    if buf[:1] == b"\x80" or buf[:2] == b"PK":
        kind = "a pickle" if buf[:1] == b"\x80" else "a zip archive (PyTorch's torch.save format)"
        raise CheckpointError(f"{name}: this is {kind}, not a dyngrad (safetensors) checkpoint. "
                              f"dyngrad never unpickles files, since loading a pickle can run "
                              f"arbitrary code; convert it with PyTorch and safetensors instead")
    (n,) = struct.unpack("<Q", buf[:8])
    if n > len(buf) - 8 or n < 2:
        raise CheckpointError(f"{name}: header length {n} does not fit in a file of {len(buf)} "
                              f"bytes; the file is truncated, corrupt or not a checkpoint")
    try:
        header = json.loads(buf[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{name}: the header is not valid JSON ({e}); the file is corrupt or "
                              f"not a checkpoint") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{name}: the header is not a JSON object; not a checkpoint")
    meta = header.pop("__metadata__", None) or {}
    data = buf[8 + n:]
    arrays = {}
    for k, info in header.items():
        try:
            dt = np.dtype(_ST_DTYPES[info["dtype"]])
            start, end = info["data_offsets"]
            shape = tuple(info["shape"])
        except (KeyError, TypeError, ValueError):
            raise CheckpointError(f"{name}: entry {k!r} has an unsupported or malformed "
                                  f"description {info!r}") from None
        count = int(np.prod(shape)) if shape else 1
        if end > len(data) or start < 0 or end - start != count * dt.itemsize:
            raise CheckpointError(f"{name}: tensor {k!r} needs bytes {start}..{end} but the data "
                                  f"section has {len(data)}; the file is truncated or corrupt")
        arrays[k] = np.frombuffer(data, dtype=dt, count=count, offset=start).reshape(shape).copy()
    return arrays, meta


def _file_mode(path: str) -> int:
    """The mode a plainly created file would get (or the existing file's mode): mkstemp's
    temporary files are private (0600), a saved checkpoint should not be."""
    try:
        return os.stat(path).st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def save(obj, f, pickle_module=None, pickle_protocol=None, _use_new_zipfile_serialization=True):
    """Save tensors / state dicts / nested containers to ``f`` (a path or a binary file)."""
    import json
    import tempfile  # both imported on first use: keeps `import dyngrad` fast
    tensors: dict = {}
    structure = _encode(obj, tensors, "obj")
    arrays = {k: _c_order(t._data) for k, t in tensors.items()}
    meta = {"format": FORMAT, "structure": json.dumps(structure)}
    blob = _to_bytes(arrays, meta)
    if hasattr(f, "write"):
        f.write(blob)
        return
    path = os.fspath(f)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".dyngrad-save-", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(blob)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _file_mode(path))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None, **kwargs):
    """Load what ``save`` wrote.  Never unpickles: foreign, truncated or corrupt files raise
    ``CheckpointError`` (a RuntimeError) naming the file."""
    import json  # imported on first use: keeps `import dyngrad` fast
    if hasattr(f, "read"):
        buf = f.read()
        name = getattr(f, "name", "<file object>")
    else:
        name = os.fspath(f)
        try:
            with open(name, "rb") as fh:
                buf = fh.read()
        except FileNotFoundError:
            raise FileNotFoundError(f"[Errno 2] No such file or directory: '{name}'") from None
    arrays, meta = _from_bytes(buf, str(name))
    if "structure" not in meta:
        # a plain safetensors file: a flat dict of tensors
        return OrderedDict((k, Tensor._make(v)) for k, v in arrays.items())
    if meta.get("format") != FORMAT:
        raise CheckpointError(f"{name}: written by an unknown format {meta.get('format')!r}")
    tensors = {k: Tensor._make(v) for k, v in arrays.items()}
    try:
        structure = json.loads(meta["structure"])
        return _decode(structure, tensors)
    except (KeyError, json.JSONDecodeError, TypeError) as e:
        raise CheckpointError(f"{name}: the checkpoint structure is corrupt ({e})") from None
