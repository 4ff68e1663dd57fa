"""``CallbackList``: one object that forwards every hook to a list of callbacks."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import Any

from ..errors import CallbackArgumentError
from ._callback import Callback, Logs
from ._history import History
from ._progbar_logger import ProgbarLogger


def _flatten(callbacks: Any) -> list[Any]:
    """Keras's ``tree.flatten``: one callback, or nested lists (any iterables) of them.

    Anything else (a string, a number) is kept whole, for the caller to refuse.
    """
    if callbacks is None:
        return []
    if isinstance(callbacks, Callback | str | bytes | dict) or not isinstance(callbacks, Iterable):
        return [callbacks]
    return [cb for item in callbacks for cb in _flatten(item)]


def pythonify_logs(logs: Logs | None) -> Logs:
    """Keras's ``pythonify_logs``: nested dicts flattened, keys sorted, values as Python floats
    when they convert (the batch logs callbacks get; an overridden step's logs)."""
    result: Logs = {}
    for key, value in sorted((logs or {}).items()):
        if isinstance(value, dict):
            result.update(pythonify_logs(value))
            continue
        with contextlib.suppress(TypeError, ValueError):
            value = float(value)
        result[key] = value
    return result


def _keras_order(logs: Logs) -> Logs:
    """Reorders ``logs`` in place as Keras 3 builds them: its training (or test) logs
    with keys sorted, then the validation logs (``val_``), sorted; the same dict."""
    items = sorted(logs.items(), key=lambda kv: (kv[0].startswith("val_"), kv[0]))
    logs.clear()
    logs.update(items)
    return logs


class CallbackList(Callback):
    """A list of callbacks called as one, as Keras 3's ``CallbackList``.

    ``fit``, ``evaluate`` and ``predict`` build one and call its hooks; each
    hook is forwarded to every callback in order. Batch-end logs are cleaned
    as Keras does (keys sorted, values converted to Python floats); epoch
    logs are passed as the same dict to every callback, so entries a callback
    adds (``learning_rate``) reach those after it.

    Args:
        callbacks: A callback, or a list (nested lists, or other iterables,
            are flattened) of them.
        add_history: Append a ``History`` unless the list already has one;
            ``set_model`` then makes it ``model.history``.
        add_progbar: Append a ``ProgbarLogger`` unless the list already has one.
        model: The model to give every callback (``set_model``).
        **params: The run's parameters, given to every callback
            (``set_params``): ``epochs``, ``steps`` and ``verbose``.

    Raises:
        TypeError: An element of ``callbacks`` is not a ``Callback``.

    Examples:
        >>> from phalanx.callbacks import CallbackList, History
        >>> callbacks = CallbackList([], add_history=True, epochs=1, steps=2, verbose=0)
        >>> callbacks.on_train_begin()
        >>> callbacks.on_epoch_begin(0)
        >>> callbacks.on_epoch_end(0, {"loss": 0.5})
        >>> callbacks.history.history
        {'loss': [0.5]}
    """

    def __init__(
        self,
        callbacks: Callback | Iterable[Callback] | None = None,
        *,
        add_history: bool = False,
        add_progbar: bool = False,
        model: Any = None,
        **params: Any,
    ) -> None:
        super().__init__()
        self.callbacks: list[Callback] = _flatten(callbacks)
        for i, cb in enumerate(self.callbacks):
            if not isinstance(cb, Callback):
                raise CallbackArgumentError(
                    f"fit's callbacks[{i}] must be a phalanx.callbacks.Callback; received "
                    f"{cb!r} ({type(cb).__name__}). Subclass Callback or wrap functions in LambdaCallback."
                )
        self._add_default_callbacks(add_history, add_progbar)
        self.set_model(model)
        self.set_params(params)

    def _add_default_callbacks(self, add_history: bool, add_progbar: bool) -> None:
        self._history = next((cb for cb in self.callbacks if isinstance(cb, History)), None)
        self._progbar = next((cb for cb in self.callbacks if isinstance(cb, ProgbarLogger)), None)
        if self._history is None and add_history:
            self._history = History()
            self.callbacks.append(self._history)
        if self._progbar is None and add_progbar:
            self._progbar = ProgbarLogger()
            self.callbacks.append(self._progbar)

    @property
    def history(self) -> History | None:
        """The list's ``History`` callback, or ``None`` when it has none."""
        return self._history

    def append(self, callback: Callback) -> None:
        """Adds one more callback at the end of the list."""
        self.callbacks.append(callback)

    def set_model(self, model: Any) -> None:
        """Gives ``model`` to every callback, and sets ``model.history``."""
        if model is None:
            return
        super().set_model(model)
        if self._history is not None:
            model.history = self._history
        for cb in self.callbacks:
            cb.set_model(model)

    def set_params(self, params: dict[str, Any]) -> None:
        """Gives the run's parameters to every callback."""
        self.params = params
        if params:
            for cb in self.callbacks:
                cb.set_params(params)

    def _each(self, hook: str, *args: Any) -> None:
        for cb in self.callbacks:
            getattr(cb, hook)(*args)

    def _release_after_error(self) -> None:
        """``fit`` raised: callbacks that hold threads, signal handlers or open files release
        them (``_release_after_error``). ``on_train_end`` is not called, as in Keras."""
        for cb in self.callbacks:
            with contextlib.suppress(Exception):  # the error that ended fit is raised
                cb._release_after_error()

    def on_batch_begin(self, batch: int, logs: Logs | None = None) -> None:
        """Forwards ``on_batch_begin``."""
        self._each("on_batch_begin", batch, logs or {})

    def on_batch_end(self, batch: int, logs: Logs | None = None) -> None:
        """Forwards ``on_batch_end`` with cleaned logs."""
        self._each("on_batch_end", batch, pythonify_logs(logs))

    def on_epoch_begin(self, epoch: int, logs: Logs | None = None) -> None:
        """Forwards ``on_epoch_begin``."""
        self._each("on_epoch_begin", epoch, logs if logs is not None else {})

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        """Forwards ``on_epoch_end``; every callback gets the same ``logs`` dict, in
        Keras's key order (the training logs sorted, then the ``val_`` ones sorted)."""
        self._each("on_epoch_end", epoch, _keras_order(logs if logs is not None else {}))

    def on_train_batch_begin(self, batch: int, logs: Logs | None = None) -> None:
        """Forwards ``on_train_batch_begin``."""
        self._each("on_train_batch_begin", batch, logs or {})

    def on_train_batch_end(self, batch: int, logs: Logs | None = None) -> None:
        """Forwards ``on_train_batch_end`` with cleaned logs."""
        self._each("on_train_batch_end", batch, pythonify_logs(logs))

    def on_test_batch_begin(self, batch: int, logs: Logs | None = None) -> None:
        """Forwards ``on_test_batch_begin``."""
        self._each("on_test_batch_begin", batch, logs or {})

    def on_test_batch_end(self, batch: int, logs: Logs | None = None) -> None:
        """Forwards ``on_test_batch_end`` with cleaned logs."""
        self._each("on_test_batch_end", batch, pythonify_logs(logs))

    def on_predict_batch_begin(self, batch: int, logs: Logs | None = None) -> None:
        """Forwards ``on_predict_batch_begin``."""
        self._each("on_predict_batch_begin", batch, logs or {})

    def on_predict_batch_end(self, batch: int, logs: Logs | None = None) -> None:
        """Forwards ``on_predict_batch_end`` (logs as given: they may hold outputs)."""
        self._each("on_predict_batch_end", batch, logs or {})

    def on_train_begin(self, logs: Logs | None = None) -> None:
        """Forwards ``on_train_begin``."""
        self._each("on_train_begin", logs or {})

    def on_train_end(self, logs: Logs | None = None) -> None:
        """Forwards ``on_train_end``."""
        self._each("on_train_end", logs or {})

    def on_test_begin(self, logs: Logs | None = None) -> None:
        """Forwards ``on_test_begin``."""
        self._each("on_test_begin", logs or {})

    def on_test_end(self, logs: Logs | None = None) -> None:
        """Forwards ``on_test_end`` (a copy of the logs in Keras's order: keys sorted;
        ``evaluate``'s list keeps ``compile``'s order)."""
        self._each("on_test_end", dict(sorted((logs or {}).items())))

    def on_predict_begin(self, logs: Logs | None = None) -> None:
        """Forwards ``on_predict_begin``."""
        self._each("on_predict_begin", logs or {})

    def on_predict_end(self, logs: Logs | None = None) -> None:
        """Forwards ``on_predict_end``."""
        self._each("on_predict_end", logs or {})
