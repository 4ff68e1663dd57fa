"""A model's output mask, handed from its call to the compiled step that made the call.

Keras 3 attaches the mask that a network carries to its last layer
(``Embedding(mask_zero=True)``, ``Masking``, ... through the layers that
support masking) to the output tensor, and the compiled loss and the
mean-of-a-function metrics weigh their values by it (``backend.get_keras_mask``
in ``Loss.__call__`` and ``MeanMetricWrapper.update_state``). A JAX array
carries no attributes, so phalanx's networks ``record_output_mask`` at the end
of a call, and ``call_with_mask`` (the training and evaluation steps' way of
calling a model) collects it. The record is per thread, and made at trace
time: the mask is a value of the same trace as the outputs.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class _Recording(threading.local):
    def __init__(self):
        self.stack: list[list] = []
        self.nested: dict[int, Any] = {}  # a nested model's output mask, by the layer's id


_RECORDING = _Recording()


def record_output_mask(network: Any, mask: Any) -> None:
    """Records ``mask`` as the output mask of ``network``'s call now ending (no-op outside
    ``call_with_mask``). A network of several outputs records a tuple, one mask (or None)
    per output. Only the called model's own record counts: a network inside a subclassed
    model's ``call`` records too, but that call's outputs need not be its outputs."""
    if _RECORDING.stack:
        _RECORDING.stack[-1][:] = [network, mask]


@contextmanager
def _recording() -> Iterator[list]:
    box: list = []
    _RECORDING.stack.append(box)
    try:
        yield box
    finally:
        _RECORDING.stack.pop()


def call_with_mask(module: Any, x: Any, return_logits: bool, **kwargs: Any) -> tuple:
    """``(y_pred, logits, output_mask)`` of ``module(x, **kwargs)``.

    Args:
      module: the model (a network that records its output mask, or any callable).
      x: the inputs.
      return_logits: call with ``return_logits=True`` (``logits`` is None otherwise).
      **kwargs: passed to the call (``training``, ``rngs``).

    Returns:
      The outputs, the logits (or None), and the mask of the single output
      (``[batch, ...]``, True for the entries that count), a tuple of masks (or
      None) for a model of several outputs, or None when the model carries none:
      the compiled step then has no mask arithmetic at all.
    """
    with _recording() as box:
        if return_logits:
            y_pred, logits = module(x, return_logits=True, **kwargs)
        else:
            y_pred, logits = module(x, **kwargs), None
    mask = box[1] if box and box[0] is module else None
    if isinstance(mask, tuple) and all(m is None for m in mask):
        mask = None
    return y_pred, logits, mask


def remember_mask(layer: Any, mask: Any) -> None:
    """Keeps ``mask`` as the output mask of ``layer``'s call now ending, for the network
    around it to read (``recall_mask``) right after the call: a model used as a layer."""
    _RECORDING.nested[id(layer)] = mask


def recall_mask(layer: Any) -> Any:
    """The mask ``remember_mask`` kept for ``layer``'s last call, removed (None: none)."""
    return _RECORDING.nested.pop(id(layer), None)
