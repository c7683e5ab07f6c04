"""``SummaryWriter`` and ``FileWriter`` as in ``torch.utils.tensorboard``, writing through the
``tensorboard`` package's ``EventFileWriter`` (its record format, CRCs and protos)."""
from __future__ import annotations

import os
import time

from tensorboard.compat.proto import event_pb2
from tensorboard.compat.proto.event_pb2 import Event, SessionLog
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from . import summary as _summary

__all__ = ["FileWriter", "SummaryWriter"]


class FileWriter:
    """Writes protocol buffers to one event file in ``log_dir``, asynchronously (the
    ``EventFileWriter`` queues events and flushes every ``flush_secs`` or ``max_queue``)."""

    def __init__(self, log_dir, max_queue=10, flush_secs=120, filename_suffix=""):
        log_dir = str(log_dir)
        self.event_writer = EventFileWriter(log_dir, max_queue, flush_secs, filename_suffix)

    def get_logdir(self):
        """The directory the event file is written to."""
        return self.event_writer.get_logdir()

    def add_event(self, event, step=None, walltime=None):
        """Add an ``Event``, stamped with ``walltime`` (default now) and ``step``."""
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_summary(self, summary, global_step=None, walltime=None):
        """Add a ``Summary`` wrapped in an ``Event``."""
        self.add_event(event_pb2.Event(summary=summary), global_step, walltime)

    def add_graph(self, graph_profile, walltime=None):
        """Add a ``(GraphDef, RunMetadata)`` pair: the graph and its run metadata (tag
        ``step1``), which is what TensorBoard's graph dashboard reads."""
        graph, stepstats = graph_profile
        self.add_event(event_pb2.Event(graph_def=graph.SerializeToString()), None, walltime)
        trm = event_pb2.TaggedRunMetadata(tag="step1",
                                          run_metadata=stepstats.SerializeToString())
        self.add_event(event_pb2.Event(tagged_run_metadata=trm), None, walltime)

    def flush(self):
        """Write pending events to disk."""
        self.event_writer.flush()

    def close(self):
        """Flush and close the event file."""
        self.event_writer.close()

    def reopen(self):
        """After ``close()``, continue in a new event file in the same directory."""
        self.event_writer.reopen()


def _default_logdir(comment=""):
    import socket
    from datetime import datetime
    current_time = datetime.now().strftime("%b%d_%H-%M-%S")
    return os.path.join("runs", current_time + "_" + socket.gethostname() + comment)


def _default_bins():
    """TensorFlow's default histogram bucket limits: +-1e-12 growing by 1.1 up to 1e20."""
    v = 1e-12
    buckets, neg = [], []
    while v < 1e20:
        buckets.append(v)
        neg.append(-v)
        v *= 1.1
    return neg[::-1] + [0] + buckets


_UNSUPPORTED = ("add_embedding", "add_audio", "add_video", "add_pr_curve", "add_pr_curve_raw",
                "add_mesh", "add_onnx_graph", "add_image_with_boxes",
                "add_custom_scalars_multilinechart", "add_custom_scalars_marginchart")


class SummaryWriter:
    """Writes scalars, histograms, images, text, hparams and the model graph to event files
    in ``log_dir`` for TensorBoard, as ``torch.utils.tensorboard.SummaryWriter`` does.

    ``log_dir`` defaults to ``runs/<Mon DD_HH-MM-SS>_<hostname><comment>``.  ``purge_step``
    writes a restart marker so TensorBoard hides events at or after that step from an
    earlier, crashed run in the same directory.  ``filename_suffix`` ends every event file's
    name.  Use as a context manager to close on exit.

    Values may be dyngrad tensors (detached, so tensors that require grad are fine), NumPy
    arrays or Python numbers.  ``add_graph`` writes dyngrad's autograd graph, not a TorchScript
    trace (see :meth:`add_graph`).
    """

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10,
                 flush_secs=120, filename_suffix=""):
        if not log_dir:
            log_dir = _default_logdir(comment)
        self.log_dir = log_dir
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer = self.all_writers = None
        self._get_file_writer()
        self.default_bins = _default_bins()

    def _get_file_writer(self):
        """The main ``FileWriter``, created again if the writer was closed."""
        if self.all_writers is None or self.file_writer is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs,
                                          self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:
                step = self.purge_step
                self.file_writer.add_event(Event(step=step, file_version="brain.Event:2"))
                self.file_writer.add_event(Event(
                    step=step, session_log=SessionLog(status=SessionLog.START)))
                self.purge_step = None
        return self.file_writer

    def get_logdir(self):
        """The directory event files are written to."""
        return self.log_dir

    # -- scalars ------------------------------------------------------------------------
    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False,
                   double_precision=False):
        """Log one scalar (a number, a one-element tensor or array) under ``tag``."""
        self._get_file_writer().add_summary(
            _summary.scalar(tag, scalar_value, new_style=new_style,
                            double_precision=double_precision), global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Log several scalars on one chart: each key goes to its own run, in the directory
        ``<log_dir>/<main_tag with / as _>_<key>``, under the tag ``main_tag``."""
        walltime = time.time() if walltime is None else walltime
        fw_logdir = self._get_file_writer().get_logdir()
        for tag, value in tag_scalar_dict.items():
            fw_tag = fw_logdir + "/" + main_tag.replace("/", "_") + "_" + tag
            fw = self.all_writers.get(fw_tag)
            if fw is None:
                fw = FileWriter(fw_tag, self.max_queue, self.flush_secs, self.filename_suffix)
                self.all_writers[fw_tag] = fw
            fw.add_summary(_summary.scalar(main_tag, value), global_step, walltime)

    def add_tensor(self, tag, tensor, global_step=None, walltime=None):
        """Log a whole tensor (as a ``TensorProto``)."""
        self._get_file_writer().add_summary(_summary.tensor_proto(tag, tensor), global_step,
                                            walltime)

    # -- histograms -----------------------------------------------------------------------
    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None,
                      max_bins=None):
        """Log a histogram of ``values``.  ``bins``: ``'tensorflow'`` (TensorFlow's default
        exponential buckets) or anything ``np.histogram`` accepts (``'auto'``, ``'fd'``, an
        int, edges)."""
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        self._get_file_writer().add_summary(
            _summary.histogram(tag, values, bins, max_bins=max_bins), global_step, walltime)

    def add_histogram_raw(self, tag, min, max, num, sum, sum_squares, bucket_limits,
                          bucket_counts, global_step=None, walltime=None):
        """Log a histogram from precomputed statistics (``bucket_limits`` are upper limits)."""
        if len(bucket_limits) != len(bucket_counts):
            raise ValueError("len(bucket_limits) != len(bucket_counts), see the document.")
        self._get_file_writer().add_summary(
            _summary.histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits,
                                   bucket_counts), global_step, walltime)

    # -- images and text ----------------------------------------------------------------
    def add_image(self, tag, img_tensor, global_step=None, walltime=None, dataformats="CHW"):
        """Log an image: ``dataformats`` CHW (default), HWC, HW, ...; uint8 values are used
        as they are, floats are taken to be in [0, 1].  One channel is shown as grey.  Encoded
        as PNG (needs Pillow)."""
        self._get_file_writer().add_summary(
            _summary.image(tag, img_tensor, dataformats=dataformats), global_step, walltime)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None,
                   dataformats="NCHW"):
        """Log a batch of images tiled into a grid (8 per row)."""
        self._get_file_writer().add_summary(
            _summary.image(tag, img_tensor, dataformats=dataformats), global_step, walltime)

    def add_figure(self, tag, figure, global_step=None, close=True, walltime=None):
        """Log a matplotlib figure (or a list of figures, as a grid) as an image."""
        import numpy as np

        def render(fig):
            from matplotlib.backends import backend_agg
            canvas = backend_agg.FigureCanvasAgg(fig)
            canvas.draw()
            data = np.frombuffer(canvas.buffer_rgba(), dtype=np.uint8)
            w, h = fig.canvas.get_width_height()
            img = np.moveaxis(data.reshape([h, w, 4])[:, :, :3], 2, 0)
            if close:
                import matplotlib.pyplot as plt
                plt.close(fig)
            return img

        if isinstance(figure, list):
            self.add_images(tag, np.stack([render(f) for f in figure]), global_step, walltime,
                            dataformats="NCHW")
        else:
            self.add_image(tag, render(figure), global_step, walltime, dataformats="CHW")

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        """Log text (rendered as Markdown) under ``<tag>/text_summary``."""
        self._get_file_writer().add_summary(_summary.text(tag, text_string), global_step,
                                            walltime)

    # -- hparams ------------------------------------------------------------------------
    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None,
                    run_name=None, global_step=None):
        """Log hyperparameters and their metrics for the HPARAMS dashboard, in a sub-run
        ``<log_dir>/<run_name>`` (default: the current time), with each metric also logged
        there as a scalar."""
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        exp, ssi, sei = _summary.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        if not run_name:
            run_name = str(time.time())
        logdir = os.path.join(self._get_file_writer().get_logdir(), run_name)
        with SummaryWriter(log_dir=logdir) as w_hp:
            w_hp.file_writer.add_summary(exp, global_step)
            w_hp.file_writer.add_summary(ssi, global_step)
            w_hp.file_writer.add_summary(sei, global_step)
            for k, v in metric_dict.items():
                w_hp.add_scalar(k, v, global_step)

    # -- graph --------------------------------------------------------------------------
    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True):
        """Log the model's graph for TensorBoard's GRAPHS dashboard.

        Unlike PyTorch, which traces the model with ``torch.jit.trace`` and writes the
        TorchScript graph (``aten::`` ops), dyngrad runs ``model(*input_to_model)`` forward
        once (in eval mode, then restores the mode) and writes the autograd graph that run
        recorded: ``input/<arg>`` and ``output/output.<i>`` IO nodes, parameters named by
        module path (``Net/Linear[fc1]/weight``), one node per ``grad_fn`` with its class as
        the op (``Net/Linear[fc1]/AddmmBackward0``), and edges from ``next_functions``.  Ops
        that need no gradient (integer arithmetic, anything on constants only) leave no node.
        ``use_strict_trace`` is accepted and ignored (there is no tracer).
        """
        from ._graph import graph
        self._get_file_writer().add_graph(graph(model, input_to_model, verbose))

    # -- files --------------------------------------------------------------------------
    def flush(self):
        """Write pending events of every run of this writer to disk."""
        if self.all_writers is None:
            return
        for w in self.all_writers.values():
            w.flush()

    def close(self):
        """Flush and close every event file (a second close does nothing; adding after close
        opens a new event file)."""
        if self.all_writers is None:
            return
        for w in self.all_writers.values():
            w.flush()
            w.close()
        self.file_writer = self.all_writers = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.close()

    def __getattr__(self, name):
        if name in _UNSUPPORTED:
            raise AttributeError(f"'SummaryWriter' object has no attribute '{name}' (dyngrad's "
                                 f"SummaryWriter implements scalars, histograms, images, text, "
                                 f"hparams and graphs; '{name}' is not part of it yet)")
        raise AttributeError(f"'SummaryWriter' object has no attribute '{name}'")
