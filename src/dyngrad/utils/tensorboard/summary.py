"""``Summary`` protocol buffers for TensorBoard, built with the ``tensorboard`` package's own
protos (``tensorboard.compat.proto``): scalars, histograms, images, text and hparams.

Values may be dyngrad tensors, NumPy arrays, Python numbers (or anything ``np.asarray``
accepts); :func:`make_np` turns them into arrays.
"""
from __future__ import annotations

import io

import numpy as np
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto

__all__ = ["make_np", "scalar", "histogram", "histogram_raw", "make_histogram", "image",
           "make_image", "convert_to_HWC", "make_grid", "text", "hparams", "tensor_proto"]


def make_np(x) -> np.ndarray:
    """A NumPy array of ``x``: a dyngrad tensor (detached), an array, a number or a sequence."""
    if isinstance(x, np.ndarray):
        return x
    if np.isscalar(x):
        return np.array([x])
    if hasattr(x, "detach") and hasattr(x, "numpy"):
        return np.asarray(x.detach().numpy())
    if isinstance(x, str):
        raise NotImplementedError(f"Got {type(x)}, but numpy array or tensor are expected.")
    try:
        return np.asarray(x)
    except Exception:
        raise NotImplementedError(f"Got {type(x)}, but numpy array or tensor are "
                                  f"expected.") from None


def scalar(name, value, new_style=False, double_precision=False) -> Summary:
    """One scalar: ``simple_value`` (old style, the default) or a tensor for the scalars plugin."""
    arr = make_np(value).squeeze()
    if arr.ndim != 0:
        raise AssertionError(f"Tensor should contain one element (0 dimensions). Was given "
                             f"size: {arr.size} and {arr.ndim} dimensions.")
    v = float(arr)
    if new_style:
        if double_precision:
            tp = TensorProto(double_val=[v], dtype="DT_DOUBLE")
        else:
            tp = TensorProto(float_val=[v], dtype="DT_FLOAT")
        smd = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
        return Summary(value=[Summary.Value(tag=name, tensor=tp, metadata=smd)])
    return Summary(value=[Summary.Value(tag=name, simple_value=v)])


_TENSOR_TYPES = {  # numpy kind/size -> (TensorProto dtype, value field)
    np.dtype(np.float16): ("DT_HALF", "half_val"),
    np.dtype(np.float32): ("DT_FLOAT", "float_val"),
    np.dtype(np.float64): ("DT_DOUBLE", "double_val"),
    np.dtype(np.int8): ("DT_INT8", "int_val"),
    np.dtype(np.uint8): ("DT_UINT8", "uint32_val"),
    np.dtype(np.int16): ("DT_INT16", "int_val"),
    np.dtype(np.int32): ("DT_INT32", "int_val"),
    np.dtype(np.int64): ("DT_INT64", "int64_val"),
    np.dtype(np.bool_): ("DT_BOOL", "bool_val"),
    np.dtype(np.complex64): ("DT_COMPLEX64", "scomplex_val"),
    np.dtype(np.complex128): ("DT_COMPLEX128", "dcomplex_val"),
}


def tensor_proto(tag, tensor) -> Summary:
    """The whole tensor as a ``TensorProto`` (the ``tensor`` plugin)."""
    arr = make_np(tensor)
    if arr.nbytes >= (1 << 31):
        raise ValueError("tensor is bigger than protocol buffer's hard limit of 2GB in size")
    if arr.dtype not in _TENSOR_TYPES:
        raise ValueError(f"{tag} has unsupported tensor dtype {arr.dtype}")
    dtype, field = _TENSOR_TYPES[arr.dtype]
    flat = arr.reshape(-1)
    if field == "half_val":
        vals = flat.view(np.uint16).astype(np.int64).tolist()
    elif field in ("scomplex_val", "dcomplex_val"):
        vals = np.stack([flat.real, flat.imag], -1).reshape(-1).tolist()
    else:
        vals = flat.tolist()
    tp = TensorProto(dtype=dtype, tensor_shape=TensorShapeProto(
        dim=[TensorShapeProto.Dim(size=int(d)) for d in arr.shape]), **{field: vals})
    smd = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="tensor"))
    return Summary(value=[Summary.Value(tag=tag, metadata=smd, tensor=tp)])


def histogram_raw(name, min, max, num, sum, sum_squares, bucket_limits, bucket_counts):
    """A histogram from precomputed statistics (upper bucket limits and counts)."""
    hist = HistogramProto(min=float(min), max=float(max), num=float(num), sum=float(sum),
                          sum_squares=float(sum_squares),
                          bucket_limit=[float(v) for v in make_np(bucket_limits).reshape(-1)],
                          bucket=[float(v) for v in make_np(bucket_counts).reshape(-1)])
    return Summary(value=[Summary.Value(tag=name, histo=hist)])


def make_histogram(values, bins, max_bins=None) -> HistogramProto:
    """``HistogramProto`` of ``values`` with ``np.histogram`` bins, trimmed to the populated
    range plus one empty bucket on the left (TensorBoard stores right limits only)."""
    if values.size == 0:
        raise ValueError("The input has no element.")
    values = values.reshape(-1)
    counts, limits = np.histogram(values, bins=bins)
    num_bins = len(counts)
    if max_bins is not None and num_bins > max_bins:
        sub = num_bins // max_bins
        rem = num_bins % sub
        if rem != 0:
            counts = np.pad(counts, pad_width=[[0, sub - rem]], mode="constant",
                            constant_values=0)
        counts = counts.reshape(-1, sub).sum(axis=-1)
        new_limits = np.empty((counts.size + 1,), limits.dtype)
        new_limits[:-1] = limits[:-1:sub]
        new_limits[-1] = limits[-1]
        limits = new_limits
    cum = np.cumsum(np.greater(counts, 0))
    start, end = np.searchsorted(cum, [0, cum[-1] - 1], side="right")
    start, end = int(start), int(end) + 1
    counts = counts[start - 1:end] if start > 0 else np.concatenate([[0], counts[:end]])
    limits = limits[start:end + 1]
    if counts.size == 0 or limits.size == 0:
        raise ValueError("The histogram is empty.")
    return HistogramProto(min=float(values.min()), max=float(values.max()), num=len(values),
                          sum=float(values.sum()), sum_squares=float(values.dot(values)),
                          bucket_limit=limits.tolist(), bucket=counts.tolist())


def histogram(name, values, bins, max_bins=None) -> Summary:
    """A histogram of ``values`` (any shape, flattened)."""
    arr = make_np(values).astype(float)
    return Summary(value=[Summary.Value(tag=name, histo=make_histogram(arr, bins, max_bins))])


def make_grid(imgs, ncols=8):
    """N1HW or N3HW images tiled into one 3HW canvas, ``ncols`` per row."""
    if imgs.shape[1] == 1:
        imgs = np.concatenate([imgs, imgs, imgs], 1)
    if imgs.ndim != 4 or imgs.shape[1] != 3:
        raise AssertionError("Input should be a 4D numpy array with 3 channels")
    n, _, h, w = imgs.shape
    ncols = min(n, ncols)
    nrows = int(np.ceil(float(n) / ncols))
    canvas = np.zeros((3, h * nrows, w * ncols), dtype=imgs.dtype)
    for i in range(n):
        y, x = divmod(i, ncols)
        canvas[:, y * h:(y + 1) * h, x * w:(x + 1) * w] = imgs[i]
    return canvas


def convert_to_HWC(tensor, input_format):
    """``tensor`` (an array laid out as ``input_format``: NCHW, CHW, HWC, HW, ...) as HWC with
    1 channel repeated to 3; a batch is tiled with :func:`make_grid`."""
    if len(set(input_format)) != len(input_format):
        raise AssertionError(f"You can not use the same dimension shorthand twice. "
                             f"input_format: {input_format}")
    if tensor.ndim != len(input_format):
        raise AssertionError(f"size of input tensor and input format are different. tensor "
                             f"shape: {tensor.shape}, input_format: {input_format}")
    fmt = input_format.upper()
    if len(fmt) == 4:
        chw = make_grid(tensor.transpose([fmt.find(c) for c in "NCHW"]))
        return chw.transpose(1, 2, 0)
    if len(fmt) == 3:
        hwc = tensor.transpose([fmt.find(c) for c in "HWC"])
        if hwc.shape[2] == 1:
            hwc = np.concatenate([hwc, hwc, hwc], 2)
        return hwc
    if len(fmt) == 2:
        hw = tensor.transpose([fmt.find(c) for c in "HW"])
        return np.stack([hw, hw, hw], 2)
    raise AssertionError(f"unsupported image format {input_format!r}")


def make_image(hwc, rescale=1) -> Summary.Image:
    """A uint8 HWC array as a PNG-encoded ``Summary.Image`` (needs Pillow)."""
    try:
        from PIL import Image
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("add_image needs Pillow to encode PNG: pip install pillow") from e
    height, width, channel = hwc.shape
    img = Image.fromarray(hwc)
    if rescale != 1:
        img = img.resize((int(width * rescale), int(height * rescale)),
                         Image.Resampling.LANCZOS)
    out = io.BytesIO()
    img.save(out, format="PNG")
    return Summary.Image(height=height, width=width, colorspace=channel,
                         encoded_image_string=out.getvalue())


def image(tag, tensor, rescale=1, dataformats="NCHW") -> Summary:
    """An image: uint8 values are used as they are, anything else is taken to be in [0, 1]
    and scaled by 255; values outside [0, 255] are clipped."""
    arr = convert_to_HWC(make_np(tensor), dataformats)
    scale = 1 if arr.dtype == np.uint8 else 255
    arr = (arr.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)
    return Summary(value=[Summary.Value(tag=tag, image=make_image(arr, rescale=rescale))])


def text(tag, text_string) -> Summary:
    """Markdown text for the text plugin, under ``<tag>/text_summary``."""
    from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData
    smd = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
        plugin_name="text", content=TextPluginData(version=0).SerializeToString()))
    tp = TensorProto(dtype="DT_STRING", string_val=[text_string.encode("utf_8")],
                     tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=smd, tensor=tp)])


def hparams(hparam_dict=None, metric_dict=None, hparam_domain_discrete=None):
    """The three hparams-plugin summaries: experiment, session start info (the values) and
    session end info."""
    from google.protobuf import struct_pb2
    from tensorboard.plugins.hparams.api_pb2 import (DataType, Experiment, HParamInfo,
                                                     MetricInfo, MetricName, Status)
    from tensorboard.plugins.hparams.metadata import (EXPERIMENT_TAG, PLUGIN_DATA_VERSION,
                                                      PLUGIN_NAME, SESSION_END_INFO_TAG,
                                                      SESSION_START_INFO_TAG)
    from tensorboard.plugins.hparams.plugin_data_pb2 import (HParamsPluginData,
                                                             SessionEndInfo, SessionStartInfo)
    if not isinstance(hparam_dict, dict):
        raise TypeError("parameter: hparam_dict should be a dictionary, nothing logged.")
    if not isinstance(metric_dict, dict):
        raise TypeError("parameter: metric_dict should be a dictionary, nothing logged.")
    domains = hparam_domain_discrete or {}
    if not isinstance(domains, dict):
        raise TypeError("parameter: hparam_domain_discrete should be a dictionary, nothing "
                        "logged.")
    for k, v in domains.items():
        if k not in hparam_dict or not isinstance(v, list) \
                or not all(isinstance(d, type(hparam_dict[k])) for d in v):
            raise TypeError(f"parameter: hparam_domain_discrete[{k}] should be a list of same "
                            f"type as hparam_dict[{k}].")

    def domain(k, field):
        if k not in domains:
            return None
        return struct_pb2.ListValue(values=[struct_pb2.Value(**{field: d}) for d in domains[k]])

    hps = []
    ssi = SessionStartInfo()
    for k, v in hparam_dict.items():
        if v is None:
            continue
        if isinstance(v, (int, float)):  # bools included, as in PyTorch (shown as 0/1)
            ssi.hparams[k].number_value = v
            hps.append(HParamInfo(name=k, type=DataType.Value("DATA_TYPE_FLOAT64"),
                                  domain_discrete=domain(k, "number_value")))
        elif isinstance(v, str):
            ssi.hparams[k].string_value = v
            hps.append(HParamInfo(name=k, type=DataType.Value("DATA_TYPE_STRING"),
                                  domain_discrete=domain(k, "string_value")))
        elif hasattr(v, "detach") or isinstance(v, (np.ndarray, np.generic)):
            ssi.hparams[k].number_value = float(make_np(v).reshape(-1)[0])
            hps.append(HParamInfo(name=k, type=DataType.Value("DATA_TYPE_FLOAT64")))
        else:
            raise ValueError("value should be one of int, float, str, bool, or torch.Tensor")

    def wrap(tag, content):
        smd = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
            plugin_name=PLUGIN_NAME, content=content.SerializeToString()))
        return Summary(value=[Summary.Value(tag=tag, metadata=smd)])

    ssi = wrap(SESSION_START_INFO_TAG,
               HParamsPluginData(session_start_info=ssi, version=PLUGIN_DATA_VERSION))
    exp = Experiment(hparam_infos=hps,
                     metric_infos=[MetricInfo(name=MetricName(tag=k)) for k in metric_dict])
    exp = wrap(EXPERIMENT_TAG, HParamsPluginData(experiment=exp, version=PLUGIN_DATA_VERSION))
    sei = wrap(SESSION_END_INFO_TAG, HParamsPluginData(
        session_end_info=SessionEndInfo(status=Status.Value("STATUS_SUCCESS")),
        version=PLUGIN_DATA_VERSION))
    return exp, ssi, sei
