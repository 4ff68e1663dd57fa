"""The base class of every callback, with Keras's hooks."""

from __future__ import annotations

from typing import Any

Logs = dict[str, Any]


class Callback:
    """Base class for objects that ``fit``, ``evaluate`` and ``predict`` call back.

    Subclass it and override the hooks you need; every hook does nothing by
    default. The names, arguments and call order are Keras's (see the package
    docstring for the exact protocol, fused steps included).

    Attributes:
        model: The model being trained, set by ``set_model`` before any hook.
        params: The run's parameters, set by ``set_params``: ``epochs``,
            ``steps`` (steps per epoch, ``None`` when unknown) and ``verbose``.

    Examples:
        >>> from phalanx.callbacks import Callback
        >>> class CountEpochs(Callback):
        ...     def on_train_begin(self, logs=None):
        ...         self.count = 0
        ...     def on_epoch_end(self, epoch, logs=None):
        ...         self.count += 1
        >>> cb = CountEpochs()
        >>> cb.on_train_begin(); cb.on_epoch_end(0, {"loss": 1.0}); cb.count
        1
    """

    def __init__(self) -> None:
        self.params: dict[str, Any] = {}
        self._model: Any = None

    @property
    def model(self) -> Any:
        """The model these callbacks run with (``None`` before ``set_model``)."""
        return self._model

    def set_model(self, model: Any) -> None:
        """Remembers the model that the hooks act on."""
        self._model = model

    def set_params(self, params: dict[str, Any]) -> None:
        """Remembers the run's parameters (``epochs``, ``steps``, ``verbose``)."""
        self.params = params

    def _release_after_error(self) -> None:
        """``fit`` raised: a callback holding threads, signal handlers or open files releases
        them here (``on_train_end`` is not called, as in Keras); the base holds none."""

    # Legacy aliases, as Keras: the train-batch hooks call them by default.
    def on_batch_begin(self, batch: int, logs: Logs | None = None) -> None:
        """Alias of ``on_train_batch_begin`` kept for Keras 2 code."""

    def on_batch_end(self, batch: int, logs: Logs | None = None) -> None:
        """Alias of ``on_train_batch_end`` kept for Keras 2 code."""

    def on_epoch_begin(self, epoch: int, logs: Logs | None = None) -> None:
        """Called at the start of epoch ``epoch`` (0-based) of ``fit``."""

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        """Called at the end of epoch ``epoch`` with the epoch's ``logs``.

        ``logs`` holds ``loss``, the metrics, and their ``val_`` twins when
        validation ran this epoch. Callbacks may add entries (for instance
        ``learning_rate``); the callbacks after them see the additions.
        """

    def on_train_batch_begin(self, batch: int, logs: Logs | None = None) -> None:
        """Called before an execution of training steps starting at step ``batch``."""
        self.on_batch_begin(batch, logs=logs)

    def on_train_batch_end(self, batch: int, logs: Logs | None = None) -> None:
        """Called after an execution of training steps ending at step ``batch``.

        ``logs`` holds Python floats: the running epoch averages of the loss
        and metrics after that step.
        """
        self.on_batch_end(batch, logs=logs)

    def on_test_batch_begin(self, batch: int, logs: Logs | None = None) -> None:
        """Called before an execution of evaluation steps starting at step ``batch``."""

    def on_test_batch_end(self, batch: int, logs: Logs | None = None) -> None:
        """Called after an execution of evaluation steps ending at step ``batch``."""

    def on_predict_batch_begin(self, batch: int, logs: Logs | None = None) -> None:
        """Called before an execution of prediction steps starting at step ``batch``."""

    def on_predict_batch_end(self, batch: int, logs: Logs | None = None) -> None:
        """Called after an execution of prediction steps ending at step ``batch``."""

    def on_train_begin(self, logs: Logs | None = None) -> None:
        """Called once when ``fit`` starts."""

    def on_train_end(self, logs: Logs | None = None) -> None:
        """Called once when ``fit`` ends (also after an early stop)."""

    def on_test_begin(self, logs: Logs | None = None) -> None:
        """Called when ``evaluate`` (or the validation inside ``fit``) starts."""

    def on_test_end(self, logs: Logs | None = None) -> None:
        """Called when ``evaluate`` (or the validation inside ``fit``) ends, with its logs."""

    def on_predict_begin(self, logs: Logs | None = None) -> None:
        """Called when ``predict`` starts."""

    def on_predict_end(self, logs: Logs | None = None) -> None:
        """Called when ``predict`` ends."""
