"""``LambdaCallback``: a callback made of plain functions."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from ._callback import Callback

_HOOKS = frozenset(
    name for name in vars(Callback) if name.startswith("on_") and callable(vars(Callback)[name])
)


class LambdaCallback(Callback):
    """Builds a callback from functions, one per hook, as Keras's ``LambdaCallback``.

    Each function takes the hook's arguments: ``on_epoch_begin(epoch, logs)``,
    ``on_epoch_end(epoch, logs)``, ``on_train_begin(logs)``,
    ``on_train_end(logs)``, ``on_train_batch_begin(batch, logs)``,
    ``on_train_batch_end(batch, logs)``. Other keywords become attributes,
    as Keras 3 does: a hook by name (``on_test_begin=...``,
    ``on_predict_end=...``) is then called as that hook; another name
    (``custom_method=...``) is kept for the user's own use.

    Args:
        on_epoch_begin: Called at the start of each epoch.
        on_epoch_end: Called at the end of each epoch.
        on_train_begin: Called when training starts.
        on_train_end: Called when training ends.
        on_train_batch_begin: Called before each execution of steps.
        on_train_batch_end: Called after each execution of steps.
        **kwargs: Other hooks, or attributes, by name.

    Raises:
        TypeError: A hook's function is not callable.

    Warns:
        UserWarning: A keyword starts with ``on_`` but names no hook (a typo
            such as ``on_epoch_ends``, which Keras keeps silently and never calls).

    Examples:
        >>> from phalanx.callbacks import LambdaCallback
        >>> losses = []
        >>> record = LambdaCallback(on_epoch_end=lambda epoch, logs: losses.append(logs["loss"]))
        >>> record.on_epoch_end(0, {"loss": 0.5})
        >>> losses
        [0.5]
    """

    def __init__(
        self,
        on_epoch_begin: Callable[..., Any] | None = None,
        on_epoch_end: Callable[..., Any] | None = None,
        on_train_begin: Callable[..., Any] | None = None,
        on_train_end: Callable[..., Any] | None = None,
        on_train_batch_begin: Callable[..., Any] | None = None,
        on_train_batch_end: Callable[..., Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        for name, value in kwargs.items():
            if name in _HOOKS:
                continue
            if name.startswith("on_"):
                warnings.warn(
                    f"LambdaCallback got {name}=..., which is no callback hook: it is kept as "
                    f"an attribute and never called. Hooks: {', '.join(sorted(_HOOKS))}.",
                    stacklevel=2,
                )
            setattr(self, name, value)
        hooks = {
            "on_epoch_begin": on_epoch_begin,
            "on_epoch_end": on_epoch_end,
            "on_train_begin": on_train_begin,
            "on_train_end": on_train_end,
            "on_train_batch_begin": on_train_batch_begin,
            "on_train_batch_end": on_train_batch_end,
            **{name: value for name, value in kwargs.items() if name in _HOOKS},
        }
        for name, function in hooks.items():
            if function is None:
                continue
            if not callable(function):
                raise TypeError(
                    f"LambdaCallback: {name} must be a function; received {function!r} "
                    f"({type(function).__name__})."
                )
            setattr(self, name, function)
