"""The first batch of each input checked against the model and its loss, before any step.

A batch of the wrong shape (785 features for a model built for 784, images for
a model of flat vectors, one-hot labels for a sparse loss) raises phalanx's
message while the step is traced, under 20-50 frames of the fused program
(``shard_map``, ``lax.scan``, ``jax.grad``). Here the model's forward pass and
its loss are evaluated abstractly (``jax.eval_shape``: shapes and dtypes, no
computation, no compilation) on the first batch's shapes, and a phalanx error
they raise is raised again from here, so the message comes first under the
user's own frames and ``fit``'s. Once per input signature and compiled model.
"""

from __future__ import annotations

from typing import Any

import flax.nnx as nnx
import jax
import numpy as np

from .. import regularizers
from ..errors import NotCompiledError, PhalanxError
from . import _step


def no_loss_message(what: str) -> str:
    """The message of ``NotCompiledError`` for a model with no loss to minimize."""
    return (
        f"No loss to compute: {what}() needs a loss, and compile() was given none (only an "
        "optimizer) while no layer of the model adds one (add_loss, a regularizer). Provide "
        "a `loss` argument in `compile()`: e.g. model.compile(optimizer='adam', loss='mse')."
    )


def check_first_batch(
    model: Any, first: Any, *, with_targets: bool, training: bool = False
) -> None:
    """Raises the phalanx error the first step would raise on ``first``'s shapes.

    Args:
      model: the compiled, built model (its ``_step_config`` and ``_state`` set).
      first: the epoch's first ``Execution`` (stacked batches, or indices into
        the resident ``data``).
      with_targets: check ``y`` against the loss too (fit, evaluate; not predict).
      training: for ``fit``: without a compiled loss, the layers must add one.

    Raises:
      NotCompiledError: ``fit`` without a compiled loss, and no layer adds one
        on this batch (Keras 3's "No loss to compute").
      PhalanxError: the model cannot take the batch's ``x`` (``LayerShapeError``)
        or the loss its ``y`` (``LossArgumentError``); with a short traceback.
    """
    config, state = model._step_config, model._state
    if config is None or state is None or model._overrides:
        return  # an overridden train_step reads the batch its own way
    x, y = _batch_specs(first)
    key = (id(config), _signature(x), _signature(y) if with_targets else None)
    checked = model.__dict__.setdefault("_checked_first_batches", set())
    if key in checked:
        return
    y = y if with_targets and config.loss is not None else None
    if training and config.loss is None and not _layers_add_losses(config, state, x):
        raise NotCompiledError(no_loss_message("fit"))

    def forward(params, rest, x, y):
        y_pred, logits, _, _, _ = _step._forward(
            config, config.eval_graphdef, params, rest, x, training=False
        )
        if y is not None:
            config.loss.per_example(y, y_pred, logits=logits)

    try:
        jax.eval_shape(forward, state.params, state.rest, x, y)
    except PhalanxError as e:  # the step would raise it deep in its trace: raise it here
        notes = [n for n in getattr(e, "__notes__", []) if "JAX has removed" not in n]
        if hasattr(e, "__notes__"):
            e.__notes__ = notes  # JAX's note on frames it hid: none are left to hide
        raise e.with_traceback(None) from None
    except Exception:  # anything else: left to the step, which raises it as before
        return
    checked.add(key)


def _layers_add_losses(config: Any, state: Any, x: Any) -> bool:
    """Whether a training call on ``x`` adds a loss (``add_loss``, an activity regularizer)
    or a layer has a weight regularizer: the loss ``fit`` minimizes without a compiled one."""
    if not config.regularized:
        return False
    found = []

    def forward(params, rest, x):
        graphdef, key = config.train_graphdef, jax.random.key(0)
        _, _, _, activity, _ = _step._forward(
            config, graphdef, params, rest, x, training=True, key=key
        )
        module = nnx.merge(config.train_graphdef, params, rest)
        found.append(bool(activity) or bool(regularizers.weight_losses(module)))

    try:
        jax.eval_shape(forward, state.params, state.rest, x)
    except Exception:  # the step raises it, as for any other batch
        return True
    return any(found)


def _batch_specs(first: Any) -> tuple[Any, Any]:
    """``(x, y)`` of one batch as ``jax.ShapeDtypeStruct``s (``y`` None when absent)."""
    resident = first.data is not None
    parts = first.data if resident else first.xs
    batch = first.sizes[0] if first.sizes else 1
    skip = 1 if resident else 2  # resident: [examples, ...]; stacked: [steps, batch, ...]

    def spec(leaf):
        shape = np.shape(leaf)
        return jax.ShapeDtypeStruct((batch, *shape[skip:]), leaf.dtype)

    x = jax.tree.map(spec, parts[0])
    y = jax.tree.map(spec, parts[1]) if len(parts) > 1 and parts[1] is not None else None
    return x, y


def _signature(tree: Any) -> Any:
    return tuple((s.shape, str(s.dtype)) for s in jax.tree.leaves(tree))
