"""``TensorBoard``: scalars (and weight histograms) as TensorBoard event files.

A ``log_dir`` that is a URL (``gs://``, ``s3://``, ``memory://``) is written
to a local temporary folder by tensorboardX and uploaded by ``phalanx.io``
(``StagedDir``) at every epoch end and when the writers close, rather than
through tensorboardX's own remote writers, which know only ``s3://`` and
``gs://``, each with its own client library and credentials.

Every writer gets a file of its own: tensorboardX names event files by the
second and the host only, so a second writer opened in the same second (a
``fit`` then an ``evaluate`` with one board) would overwrite the first's
file; phalanx adds the process id and a counter to the name, as TensorFlow
does.
"""

from __future__ import annotations

import itertools
import os
import time
from typing import Any

import numpy as np

from ..errors import CallbackArgumentError
from ..io import StagedDir, _fs
from . import _process
from ._args import check_path
from ._callback import Callback, Logs
from ._learning_rate import try_learning_rate
from ._profiler import ProfileWindow, parse_profile_batch
from ._step_counter import StepCounter

_writer_ids = itertools.count(1)  # event files of one process: one name each


def _check_update_freq(update_freq: Any) -> str | int:
    if update_freq == "batch":
        return 1
    if update_freq == "epoch":
        return "epoch"
    if isinstance(update_freq, int) and not isinstance(update_freq, bool) and update_freq >= 1:
        return update_freq
    raise CallbackArgumentError(
        "TensorBoard: update_freq must be 'epoch', 'batch' or a positive number of steps; "
        f"received update_freq={update_freq!r} ({type(update_freq).__name__})."
    )


def _refuse(name: str, value: Any, default: Any) -> None:
    if value != default:
        raise NotImplementedError(
            f"TensorBoard({name}={value!r}) is not supported by phalanx yet; "
            f"leave {name}={default!r} (scalars and histogram_freq are written)."
        )


class TensorBoard(Callback):
    """Writes the logs as TensorBoard scalars, in Keras's layout, on process 0.

    Event files go to ``log_dir/train`` and ``log_dir/validation``, written
    with tensorboardX and closed when training ends. At each epoch end
    (step = the 0-based epoch):

    - ``train``: ``epoch_<name>`` for every training value (``epoch_loss``,
      ``epoch_accuracy``, ...), ``epoch_learning_rate`` when the optimizer
      has a float learning rate, and ``epoch_steps_per_second`` when asked;
    - ``validation``: ``epoch_<name>`` for every ``val_<name>``.

    With an integer ``update_freq=N``, ``batch_<name>`` scalars (the running
    epoch averages) go to ``train`` whenever the total of training steps
    reaches or passes a multiple of ``N``, at step = that total; with
    ``steps_per_execution`` this is checked once per execution. After each
    validation or ``evaluate`` run, ``evaluation_<name>_vs_iterations``
    goes to ``validation`` at step = ``model.optimizer.iterations`` (the
    model's training steps so far, across ``fit`` calls, as Keras).

    Args:
        log_dir: The directory of the event files: a local path or a URL
            (``gs://bucket/logs``), uploaded at each epoch end and at the end.
        histogram_freq: Every this many epochs, write a histogram of each
            weight array (``weights/<index>``); 0 never.
        write_graph: Write the model's config (``model.to_json()``: its layers,
            their arguments and, for functional models, their connections) as
            the text ``model_config`` of ``train``, shown in TensorBoard's Text
            tab; no XLA graph is written.
        write_images: Must be ``False``.
        write_steps_per_second: Also write ``epoch_steps_per_second`` (and
            ``batch_steps_per_second`` with an integer ``update_freq``).
        update_freq: ``"epoch"``, ``"batch"`` (every step) or N steps.
        profile_batch: 0 (off), a step N, or ``(start, stop)``: a JAX profiler
            trace of those training steps (1-based, across epochs) goes to
            ``log_dir/train/plugins/profile/`` for TensorBoard's profile plugin
            (``phalanx.callbacks._profiler``).
        embeddings_freq: Must be 0.
        embeddings_metadata: Must be ``None``.

    Raises:
        ValueError: ``update_freq`` is not ``"epoch"``, ``"batch"`` or a positive int.
        NotImplementedError: an option phalanx does not write is set.

    Examples:
        >>> import tempfile
        >>> from phalanx.callbacks import TensorBoard
        >>> board = TensorBoard(log_dir=tempfile.mkdtemp(), update_freq=100)
    """

    # Its batch hooks only record the logs they are given: fit may run ahead of it.
    batch_hooks_read_only_logs = True

    def __init__(
        self,
        log_dir: str | os.PathLike[str] = "logs",
        histogram_freq: int = 0,
        write_graph: bool = True,
        write_images: bool = False,
        write_steps_per_second: bool = False,
        update_freq: str | int = "epoch",
        profile_batch: int | tuple[int, int] = 0,
        embeddings_freq: int = 0,
        embeddings_metadata: Any = None,
    ) -> None:
        super().__init__()
        _refuse("write_images", write_images, False)
        self._profile = ProfileWindow(parse_profile_batch(profile_batch))
        _refuse("embeddings_freq", embeddings_freq, 0)
        _refuse("embeddings_metadata", embeddings_metadata, None)
        if (
            isinstance(histogram_freq, bool)
            or not isinstance(histogram_freq, int)
            or histogram_freq < 0
        ):
            raise CallbackArgumentError(
                f"TensorBoard: histogram_freq must be an integer >= 0 (epochs); received {histogram_freq!r}."
            )
        self.log_dir = check_path(
            "TensorBoard", "log_dir", log_dir, what="a folder", example="'logs/run1'"
        )
        _fs.locate(self.log_dir)  # a URL whose file-system package is missing fails here
        self._staged: StagedDir | None = None
        self.histogram_freq = histogram_freq
        self.write_graph = write_graph
        self.write_steps_per_second = write_steps_per_second
        self.update_freq = _check_update_freq(update_freq)
        self._writers: dict[str, Any] = {}
        self._steps = StepCounter()
        self._in_fit = False
        self._epoch_start_time = 0.0
        self._batch_start_time = 0.0
        self._epoch_start_step = 0

    # Writers, created on process 0 at first use.

    def _writer(self, name: str) -> Any:
        if name not in self._writers:
            from tensorboardX import SummaryWriter

            self._writers[name] = SummaryWriter(
                os.path.join(self._local_log_dir(), name),
                filename_suffix=f".{os.getpid()}.{next(_writer_ids)}",
            )
        return self._writers[name]

    def _local_log_dir(self) -> str:
        """``log_dir`` on this machine's disks, or the local copy of a remote one."""
        local = _fs.os_path(self.log_dir)
        if local is not None:
            return local
        if self._staged is None:
            self._staged = StagedDir(self.log_dir)
        return self._staged.local

    def _upload(self) -> None:
        """Uploads a remote log dir's changed event files (nothing to do for a local one)."""
        if self._staged is None:
            return
        for writer in self._writers.values():
            writer.flush()
        self._staged.sync()

    def _scalars(
        self, name: str, values: Logs, step: int, prefix: str = "", suffix: str = ""
    ) -> None:
        if not values or not _process.is_chief():
            return
        writer = self._writer(name)
        for key, value in values.items():
            try:
                number = float(value)
            except (TypeError, ValueError):
                continue  # not a scalar: nothing to plot
            writer.add_scalar(f"{prefix}{key}{suffix}", number, global_step=step)

    def _release_after_error(self) -> None:
        """``fit`` raised: the event files are closed (and, for a URL, uploaded) as they are."""
        self._close_writers()

    def _close_writers(self) -> None:
        for writer in self._writers.values():
            writer.close()
        self._writers = {}
        if self._staged is not None:
            staged, self._staged = self._staged, None
            staged.close()

    # Hooks.

    def on_train_begin(self, logs: Logs | None = None) -> None:
        """Starts counting training steps."""
        self._in_fit = True
        self._steps.reset()
        if self.write_graph:
            self._write_model_config()

    def _write_model_config(self) -> None:
        to_json = getattr(self.model, "to_json", None)
        if to_json is None or not _process.is_chief():
            return
        text = to_json(indent=2)
        self._writer("train").add_text("model_config", f"```\n{text}\n```", global_step=0)

    def on_train_end(self, logs: Logs | None = None) -> None:
        """Closes the event files."""
        self._in_fit = False
        self._profile.close()
        self._close_writers()

    def on_epoch_begin(self, epoch: int, logs: Logs | None = None) -> None:
        """Notes the epoch's first step and start time."""
        self._steps.start_epoch(epoch, self.params.get("steps"))
        self._epoch_start_step = self._steps.total
        self._epoch_start_time = time.monotonic()

    def on_train_batch_begin(self, batch: int, logs: Logs | None = None) -> None:
        """Notes when the execution started (for steps per second)."""
        self._batch_start_time = time.monotonic()
        if not self._profile.done and _process.is_chief():
            first = self._steps.total + 1
            last = self._steps.total + int(getattr(self.model, "steps_per_execution", 1) or 1)
            self._profile.begin(first, last, os.path.join(self._local_log_dir(), "train"))

    def on_train_batch_end(self, batch: int, logs: Logs | None = None) -> None:
        """Writes ``batch_<name>`` when the steps pass a multiple of ``update_freq``."""
        previous = self._steps.total
        total = self._steps.end_execution(batch)
        if self._profile.end(total):
            self._upload()
        if self.update_freq == "epoch" or not self._steps.crossed(self.update_freq):
            return
        values = dict(logs or {})
        if self.write_steps_per_second:
            elapsed = max(time.monotonic() - self._batch_start_time, 1e-9)
            values["steps_per_second"] = (total - previous) / elapsed
        self._scalars("train", values, total, prefix="batch_")

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        """Writes the ``epoch_<name>`` scalars (and histograms when due)."""
        logs = logs or {}
        train = {k: v for k, v in logs.items() if not k.startswith("val_")}
        val = {k.removeprefix("val_"): v for k, v in logs.items() if k.startswith("val_")}
        lr = try_learning_rate(self.model)
        if lr is not None:
            train["learning_rate"] = lr
        if self.write_steps_per_second:
            elapsed = max(time.monotonic() - self._epoch_start_time, 1e-9)
            train["steps_per_second"] = (self._steps.total - self._epoch_start_step) / elapsed
        self._scalars("train", train, epoch, prefix="epoch_")
        self._scalars("validation", val, epoch, prefix="epoch_")
        if self.histogram_freq and epoch % self.histogram_freq == 0:
            self._histograms(epoch)
        self._upload()

    def on_test_end(self, logs: Logs | None = None) -> None:
        """Writes ``evaluation_<name>_vs_iterations`` at ``model.optimizer.iterations``."""
        self._scalars(
            "validation",
            logs or {},
            self._iterations(),
            prefix="evaluation_",
            suffix="_vs_iterations",
        )
        if not self._in_fit:
            self._close_writers()

    def _iterations(self) -> int:
        """The optimizer's steps so far, as Keras; the steps this board counted without one."""
        iterations = getattr(getattr(self.model, "optimizer", None), "iterations", None)
        try:
            return int(iterations)
        except (TypeError, ValueError):
            return self._steps.total

    def _histograms(self, epoch: int) -> None:
        weights = self.model.get_weights()  # on every process: gathering may need them all
        if not _process.is_chief():
            return
        writer = self._writer("train")
        for i, weight in enumerate(weights):
            writer.add_histogram(f"weights/{i}", np.asarray(weight), global_step=epoch)
