"""The text of ``summary()``: Keras 3's table of layers, shapes and parameter counts.

Functional models get Keras's fourth column, "Connected to": the layers whose
outputs each layer reads. Frozen weights (``trainable = False``) count as
non-trainable, as in Keras.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import jax
import numpy as np
from flax import nnx

from ..layers import format_shape, trainable_filter
from ._memory import _bytes, readable_size

if TYPE_CHECKING:
    from ._network import Sequential

_HEADERS = ("Layer (type)", "Output Shape", "Param #")


def _format_output_shape(shape) -> str:
    if isinstance(shape, list):
        return "[" + ", ".join(format_shape(s) for s in shape) + "]"
    return format_shape(shape)


def _rows(network: Sequential) -> list[tuple[str, ...]]:
    connections = getattr(network, "connections", None)
    rows = []
    for layer in network.layers:
        row = (
            f"{layer.name} ({type(layer).__name__})",
            _format_output_shape(layer.output_shape),
            f"{layer.count_params():,}",
        )
        if connections is not None:
            row = (*row, connections(layer.name) or "-")
        rows.append(row)
    return rows


def format_summary(network: Sequential, *, line_length: int | None = None) -> str:
    """Returns the summary table of a built network.

    Args:
      network: a built ``Sequential``.
      line_length: the table's total width; default fits the content.

    Returns:
      The text, one line per row, without a trailing newline.
    """
    rows = _rows(network)
    headers = _HEADERS + (("Connected to",) if rows and len(rows[0]) == 4 else ())
    widths = [max(len(h), *(len(r[i]) for r in rows)) + 2 for i, h in enumerate(headers)]
    widths[:3] = [max(widths[0], 31), max(widths[1], 22), max(widths[2], 13)]
    if line_length is not None:
        extra = line_length - (sum(widths) + 4 * len(widths) - 2)
        widths[0] = max(widths[0] + extra, len(headers[0]) + 2)

    def line(left: str, fill: str, mid: str, right: str) -> str:
        return left + mid.join(fill * (w + 2) for w in widths) + right

    def cells(values, edge: str) -> str:
        parts = [
            f" {v:>{w}} " if i == 2 else f" {v:<{w}} "
            for i, (v, w) in enumerate(zip(values, widths, strict=True))
        ]
        return edge + edge.join(parts) + edge

    trained = trainable_filter(network)
    held = nnx.Any(nnx.BatchStat, nnx.All(nnx.Param, nnx.Not(trained)))
    trainable = _bytes(network, trained)
    non_trainable = _bytes(network, held)
    n_trainable = sum(
        int(np.prod(np.shape(x))) for x in jax.tree.leaves(nnx.state(network, trained))
    )
    n_non = network.count_params() - n_trainable
    out = [
        f'Model: "{network.name}"',
        line("┏", "━", "┳", "┓"),
        cells(headers, "┃"),
        line("┡", "━", "╇", "┩"),
        *(cells(r, "│") for r in rows),
        line("└", "─", "┴", "┘"),
        f" Total params: {n_trainable + n_non:,} ({readable_size(trainable + non_trainable)})",
        f" Trainable params: {n_trainable:,} ({readable_size(trainable)})",
        f" Non-trainable params: {n_non:,} ({readable_size(non_trainable)})",
    ]
    return "\n".join(out)
