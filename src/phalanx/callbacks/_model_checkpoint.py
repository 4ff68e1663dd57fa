"""``ModelCheckpoint``: save the weights every epoch or every N steps."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..checkpoint import Checkpoint, as_path
from ..errors import CallbackArgumentError, WeightsFileError
from ..io import _fs
from ..saving._keras_model import require_h5py
from . import _process
from ._args import check_path
from ._callback import Logs
from ._monitor import MonitorCallback
from ._step_counter import StepCounter, steps_done


class ModelCheckpoint(MonitorCallback):
    """Saves the model's weights (``model.save_weights``), or the model, during ``fit``.

    ``filepath`` may hold ``str.format`` fields filled from the epoch
    (1-based, as Keras), the step (``{batch}``, 1-based, with step-based
    saving) and the logs: ``"ckpt/weights-{epoch:02d}-{val_loss:.2f}.npz"``.

    With ``save_freq="epoch"`` it saves at each epoch end. With an integer
    ``N`` it saves whenever the total of training steps reaches or passes a
    multiple of ``N``; with ``steps_per_execution`` the check runs once per
    execution, so with executions of 3 steps and ``N=5`` it saves after steps
    6, 12, 15, 21, ... (the logs are then the epoch's running averages).

    With ``save_best_only`` it saves only when ``monitor`` improves on the
    best value so far (``initial_value_threshold`` to start from), and warns
    and saves anyway when the value is missing, as Keras does.

    ``model.save_weights`` is called on every process, since gathering
    sharded weights can need all of them; the model writes on process 0.
    A ``filepath`` ending in ``.keras`` saves the model (``model.save``: a
    Keras 3 ``.keras`` file that ``load_model`` reads), as Keras 3's default
    does. Otherwise, with ``save_weights_only=False`` each save is a
    ``phalanx.checkpoint`` checkpoint directory of the whole training state
    (weights, optimizer state, step, RNG key, metric accumulators, and
    ``fit``'s position with its input iterator state):
    ``Checkpoint(model=model).restore(path)`` resumes from it exactly (Keras
    3 refuses such a name).

    Args:
        filepath: Where to save, a path or a ``str.format`` pattern; with
            ``save_weights_only=True`` it ends in ``.weights.h5`` (Keras's weights
            file) or ``.npz`` (phalanx's).
        monitor: The value of the logs that ``save_best_only`` watches.
        verbose: 1 prints a line at each save (or skipped save).
        save_best_only: Save only when ``monitor`` improves.
        save_weights_only: ``True``: the weights (``model.save_weights``);
            ``False``: the model (a ``.keras`` filepath) or the whole training
            state (a checkpoint directory). ``None`` (the default) chooses by
            the name: ``.keras`` the model, as Keras 3's default ``False``;
            ``.weights.h5`` or ``.npz`` the weights; another name is refused.
        mode: ``"min"``, ``"max"``, or ``"auto"`` (inferred from the name).
        save_freq: ``"epoch"`` or a number of training steps.
        initial_value_threshold: The best value to beat before the first save.

    Raises:
        ValueError: ``save_freq`` is neither ``"epoch"`` nor a positive integer,
            ``mode`` is unknown, ``save_weights_only=True`` and ``filepath``
            does not end in ``.weights.h5`` (Keras's format) or ``.npz``
            (phalanx's), as Keras 3 refuses it (by default: nor in ``.keras``);
            in ``fit``, ``filepath`` names a value that
            is not in the logs.

    Examples:
        >>> from phalanx.callbacks import ModelCheckpoint
        >>> saved = []
        >>> class Model:
        ...     def save_weights(self, filepath):
        ...         saved.append(filepath)
        >>> ckpt = ModelCheckpoint("w-{epoch:02d}-{val_loss:.2f}.npz", save_best_only=True)
        >>> ckpt.set_model(Model())
        >>> ckpt.on_train_begin()
        >>> for epoch, val_loss in enumerate([0.5, 0.6, 0.4]):
        ...     ckpt.on_epoch_begin(epoch)
        ...     ckpt.on_epoch_end(epoch, {"loss": 0.1, "val_loss": val_loss})
        >>> saved
        ['w-01-0.50.npz', 'w-03-0.40.npz']
    """

    def __init__(
        self,
        filepath: str | os.PathLike[str],
        monitor: str = "val_loss",
        verbose: int = 0,
        save_best_only: bool = False,
        save_weights_only: bool | None = None,
        mode: str = "auto",
        save_freq: str | int = "epoch",
        initial_value_threshold: float | None = None,
    ) -> None:
        super().__init__(monitor, mode, initial_best=initial_value_threshold)
        if save_freq != "epoch" and (
            isinstance(save_freq, bool) or not isinstance(save_freq, int) or save_freq < 1
        ):
            raise CallbackArgumentError(
                "ModelCheckpoint: save_freq must be 'epoch' or a positive number of steps; "
                f"received save_freq={save_freq!r} ({type(save_freq).__name__})."
            )
        self.filepath = check_path(
            "ModelCheckpoint", "filepath", filepath, example="'ckpt/model.weights.h5'"
        )
        self.verbose = verbose
        self.save_best_only = save_best_only
        given = save_weights_only is not None
        if not given:  # Keras 3's default (False) saves a .keras model; phalanx: by the name
            save_weights_only = not self.filepath.endswith(".keras")
        self.save_weights_only = bool(save_weights_only)
        #: Whether each save is ``model.save``'s ``.keras`` file.
        self.saves_keras_file = not self.save_weights_only and self.filepath.endswith(".keras")
        if self.save_weights_only:
            _check_weights_name(self.filepath, given)
        if self.saves_keras_file or self.filepath.endswith(".weights.h5"):
            require_h5py(f"ModelCheckpoint({self.filepath!r}) (a Keras file)")
        elif not self.saves_keras_file:  # refused now, not after the first epoch
            as_path(self.filepath.split("{")[0] or ".", "ModelCheckpoint(save_weights_only=False)")
        self.save_freq = save_freq
        self._steps = StepCounter()
        self._current_epoch = 0

    def on_train_begin(self, logs: Logs | None = None) -> None:
        """Resets the step count; refuses a folder that is a file.

        The best value is kept, as in Keras 3: a second ``fit`` with the same
        callback saves only what beats the first one's best.
        """
        _check_folders(self.filepath.split("{")[0] + "_", self.filepath)
        self._steps.reset()
        self._warned_missing = False
        if self.save_best_only:
            self._resolve_direction()

    def on_epoch_begin(self, epoch: int, logs: Logs | None = None) -> None:
        """Remembers the epoch, for the file name and the step count."""
        self._current_epoch = epoch
        self._steps.start_epoch(epoch, self.params.get("steps"))

    def on_train_batch_end(self, batch: int, logs: Logs | None = None) -> None:
        """Saves when the steps done reach or pass a multiple of ``save_freq``."""
        if self.save_freq == "epoch":
            return
        self._steps.end_execution(batch)
        if self._steps.crossed(self.save_freq):
            self._save(self._current_epoch, batch, logs or {})

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        """Saves at the epoch end when ``save_freq="epoch"``."""
        if self.save_freq == "epoch":
            self._save(epoch, None, logs or {})

    def _save(self, epoch: int, batch: int | None, logs: Logs) -> None:
        filepath = self._format_path(epoch, batch, logs)
        if self.save_best_only and not self._improved(epoch, logs, filepath):
            return
        if self.verbose > 0 and not self.save_best_only:
            _process.print_msg(f"Epoch {epoch + 1}: saving model to {filepath}")
        dirname = os.path.dirname(filepath)
        if dirname and _process.is_chief():
            _check_folders(filepath, filepath)
            _fs.makedirs(dirname)
        if self.save_weights_only:
            self.model.save_weights(filepath)
        elif self.saves_keras_file:
            self.model.save(filepath, overwrite=True)
        else:
            Checkpoint(model=self.model).write(filepath)

    def _improved(self, epoch: int, logs: Logs, filepath: str) -> bool:
        self._resolve_direction()  # also when used without on_train_begin
        current = self._monitor_value(logs)
        if current is None:
            return True  # Keras saves when it cannot compare
        best = "None" if self.best is None else f"{self.best:.5f}"  # as Keras 3
        if self._is_improvement(current, self.best):
            if self.verbose > 0:
                _process.print_msg(
                    f"Epoch {epoch + 1}: {self.monitor} improved from {best} to "
                    f"{current:.5f}, saving model to {filepath}"
                )
            self.best = current
            return True
        if self.verbose > 0:
            _process.print_msg(f"Epoch {epoch + 1}: {self.monitor} did not improve from {best}")
        return False

    def _format_path(self, epoch: int, batch: int | None, logs: Logs) -> str:
        fields: dict[str, Any] = dict(logs)
        fields["epoch"] = epoch + 1
        if batch is not None and "batch" not in logs:
            # the steps done in the epoch: a last, shorter execution's index is Keras's
            # begin + steps_per_execution - 1, past the epoch's steps
            fields["batch"] = steps_done(batch, self.params.get("steps"))
        try:
            return self.filepath.format(**fields)
        except KeyError as error:
            raise ValueError(
                f"ModelCheckpoint: filepath {self.filepath!r} names {error}, which is not in the "
                f"logs. Available: {', '.join(sorted(fields))}."
            ) from None


#: The endings ``save_weights_only=True`` takes: Keras 3's weights file, phalanx's own.
WEIGHTS_ENDINGS = (".weights.h5", ".npz")


def _check_weights_name(filepath: str, given: bool) -> None:
    """Refuses a weights filepath that names no weights format, as Keras 3 refuses it.

    Keras 3 wants ``.weights.h5``; phalanx also writes its own ``.npz`` (which
    ``model.load_weights`` reads; Keras cannot). Any other name (``ckpt_{epoch}``,
    ``m.h5``, ``m.keras``) would hold ``.npz`` under a name that says otherwise.

    ``given``: ``save_weights_only=True`` was passed (else it was the default,
    and the name ends in none of ``.keras``, ``.weights.h5``, ``.npz``).
    """
    if filepath.endswith(WEIGHTS_ENDINGS):
        return
    if not given:  # Keras 3's default refuses it too: "must end in `.keras`"
        raise CallbackArgumentError(
            "The filepath provided must end in `.keras` (Keras model format), or in "
            "`.weights.h5` or `.npz` for the weights (as save_weights_only=True). Received: "
            f"filepath={filepath}. Name it so (e.g. 'best.keras', "
            "'ckpt_{epoch:04d}.weights.h5'), or pass save_weights_only=False for phalanx's "
            "checkpoint of the whole training state (a folder)."
        )
    raise CallbackArgumentError(
        "When using `save_weights_only=True` in `ModelCheckpoint`, the filepath provided "
        "must end in `.weights.h5` (Keras weights format) or `.npz` (phalanx's weights "
        f"format). Received: filepath={filepath}. Add `.weights.h5` to the name (e.g. "
        "'ckpt_{epoch:04d}.weights.h5'), or pass save_weights_only=False for a checkpoint "
        "of the whole training state (or the model, for a name ending in `.keras`)."
    )


def _check_folders(path: str, filepath: str) -> None:
    """Raises ``WeightsFileError`` when a folder of ``path`` exists as a file (before training)."""
    local = _fs.os_path(path)  # folders of a URL are an object store's business
    if local is None:
        return
    for parent in reversed(Path(local).parents):
        if parent.exists() and not parent.is_dir():
            raise WeightsFileError(
                f"ModelCheckpoint cannot write {filepath!r}: {str(parent)!r} is a file, not a "
                "folder. Choose another filepath, or move that file away."
            )
