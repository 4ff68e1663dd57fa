"""The text of ``Sequential.summary()``: Keras 3's table of layers, shapes and parameter counts."""

from __future__ import annotations

from typing import TYPE_CHECKING

import jax
import numpy as np
from flax import nnx

from ._layer import format_shape

if TYPE_CHECKING:
    from ._network import Sequential

_HEADERS = ("Layer (type)", "Output Shape", "Param #")


def _bytes(module: nnx.Module, variable_type) -> int:
    leaves = jax.tree.leaves(nnx.state(module, variable_type))
    return int(sum(np.prod(np.shape(x)) * np.dtype(x.dtype).itemsize for x in leaves))


def readable_size(num_bytes: float) -> str:
    """Formats a byte count as Keras does: ``397.54 KB``."""
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if num_bytes < 1024 or unit == "TB":
            return f"{num_bytes:.2f} {unit}"
        num_bytes /= 1024
    raise AssertionError("unreachable")


def _rows(network: Sequential) -> list[tuple[str, str, str]]:
    return [
        (
            f"{layer.name} ({type(layer).__name__})",
            format_shape(layer.output_shape),
            f"{layer.count_params():,}",
        )
        for layer in network.layers
    ]


def format_summary(network: Sequential, *, line_length: int | None = None) -> str:
    """Returns the summary table of a built network.

    Args:
      network: a built ``Sequential``.
      line_length: the table's total width; default fits the content.

    Returns:
      The text, one line per row, without a trailing newline.
    """
    rows = _rows(network)
    widths = [max(len(h), *(len(r[i]) for r in rows)) + 2 for i, h in enumerate(_HEADERS)]
    widths = [max(widths[0], 31), max(widths[1], 22), max(widths[2], 13)]
    if line_length is not None:
        extra = line_length - (sum(widths) + 4 * 3 - 2)
        widths[0] = max(widths[0] + extra, len(_HEADERS[0]) + 2)

    def line(left: str, fill: str, mid: str, right: str) -> str:
        return left + mid.join(fill * (w + 2) for w in widths) + right

    def cells(values, edge: str) -> str:
        parts = [
            f" {values[0]:<{widths[0]}} ",
            f" {values[1]:<{widths[1]}} ",
            f" {values[2]:>{widths[2]}} ",
        ]
        return edge + edge.join(parts) + edge

    trainable = _bytes(network, nnx.Param)
    non_trainable = _bytes(network, nnx.BatchStat)
    n_trainable = sum(
        int(np.prod(np.shape(x))) for x in jax.tree.leaves(nnx.state(network, nnx.Param))
    )
    n_non = network.count_params() - n_trainable
    out = [
        f'Model: "{network.name}"',
        line("┏", "━", "┳", "┓"),
        cells(_HEADERS, "┃"),
        line("┡", "━", "╇", "┩"),
        *(cells(r, "│") for r in rows),
        line("└", "─", "┴", "┘"),
        f" Total params: {n_trainable + n_non:,} ({readable_size(trainable + non_trainable)})",
        f" Trainable params: {n_trainable:,} ({readable_size(trainable)})",
        f" Non-trainable params: {n_non:,} ({readable_size(non_trainable)})",
    ]
    return "\n".join(out)
