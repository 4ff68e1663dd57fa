"""A model used as a layer: ``outputs = base_model(inputs)`` inside another functional model.

Keras lets a functional (or Sequential) model be called on symbolic tensors,
as transfer learning does (``base.trainable = False``, then a new head). The
model's module becomes the child of a `NestedModel` layer, one per
model, so calling the model twice shares its weights, ``base.trainable =
False`` freezes them in the outer model's ``fit`` and ``base.get_weights()``
reads them. Only models whose outputs are one tensor or a list are nested
(dict outputs are not); Keras files of a nested model are not written. Keras's
masks flow through it: the mask it is given reaches its layers, and its output mask
the layers after it (`phalanx.layers._output_mask`).
"""

from __future__ import annotations

from typing import Any

import jax

from ..errors import ModelStructureError
from ..layers import (
    Layer,
    any_symbolic,
    call_with_mask,
    normalize_shape,
    recall_mask,
    remember_mask,
)


class NestedModel(Layer):
    """A built model's module as a layer of another functional model."""

    wraps_model = True

    def __init__(self, module: Any, name: str):
        super().__init__(name=name)
        self.module = module
        self.built = True
        self.built_input_shape = module.input_shape
        self.output_shape = module.output_shape

    @property
    def uses_rng(self) -> bool:
        """True when the nested model has random layers (dropout)."""
        return bool(getattr(self.module, "needs_rng", False))

    def _build_shapes(self, x: Any, *args: Any, **kwargs: Any) -> Any:
        return jax.tree.map(lambda t: tuple(t.shape[1:]), x)

    def _normalize_input_shape(self, input_shape: Any) -> Any:
        return input_shape

    def _normalize_output_shape(self, output_shape: Any) -> Any:
        if isinstance(output_shape, list):
            return [normalize_shape(s) for s in output_shape]
        return normalize_shape(output_shape)

    def compute_output_shape(self, input_shape: Any) -> Any:
        shape = self.module.output_shape
        several = isinstance(shape, list | tuple) and shape and isinstance(shape[0], tuple)
        return list(shape) if several else shape

    def check_input(self, x: Any) -> None:
        """The nested model checks its own inputs."""

    #: Keras's masks flow through a nested model: the mask given reaches its first layers,
    #: and its own output mask (``compute_mask``) goes on to the layers after it.
    supports_masking = True

    def call(self, x, *, training, rngs, mask=None):
        given = {} if mask is None else {"mask": mask}
        out, _, out_mask = call_with_mask(
            self.module, x, False, training=training, rngs=rngs, **given
        )
        if out_mask is not None:  # one entry per layer at most, read right after the call
            remember_mask(self, list(out_mask) if isinstance(out_mask, tuple) else out_mask)
        return list(out) if isinstance(out, tuple) else out

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The nested model's output mask of the call just made (None: none)."""
        return recall_mask(self)

    def count_params(self) -> int:
        """The nested model's number of weights."""
        return self.module.count_params()


def is_symbolic_call(x: Any) -> bool:
    """True when a model is called on symbolic tensors (to become a layer)."""
    return any_symbolic(x)


def call_symbolic(model: Any, x: Any, training: Any = None) -> Any:
    """``model(symbolic_inputs)``: the model as a layer (one per model, so weights are shared).

    Raises:
      ModelStructureError: the model is not built, or its outputs are a dict.
    """
    module = model._module
    if not model.built or not hasattr(module, "output_shape"):
        raise ModelStructureError(
            f"Model {model.name!r} cannot be called on symbolic tensors: only a built "
            "functional or Sequential model can be a layer of another model."
        )
    if isinstance(module.output_shape, dict):
        raise ModelStructureError(
            f"Model {model.name!r} has dict outputs; as a layer of another model phalanx takes "
            "a model with one output or a list of outputs."
        )
    layer = model._as_layer
    if layer is None:
        # a default name ("model", "sequential") is left for the outer model to make unique
        default = model.name in ("model", "sequential", "functional")
        layer = model._as_layer = NestedModel(module, None if default else model.name)
    return layer(x, training=training)
