"""``Layer.add_weight``: the weights a layer of one's own creates, as Keras's.

A trainable weight is an ``nnx.Param`` (``fit`` trains it), a non-trainable
one an ``nnx.BatchStat`` (state the layer may update in ``call``, kept by
``fit`` as batch statistics are). Each carries its creation index
(``keras_order``: ``weights``/``get_weights`` list them in creation order, as
Keras), its ``name=``, its regularizer and its constraint as ``nnx`` metadata.
"""

from __future__ import annotations

import itertools
from typing import Any

import jax.numpy as jnp
import numpy as np
from flax import nnx

from .. import regularizers
from ..constraints import _constraints
from ..errors import LayerArgumentError
from . import _initializers

_ORDER = itertools.count()
_AGGREGATIONS = ("none", "mean", "sum", "only_first_replica")


def _shape(owner: str, shape: Any) -> tuple[int, ...]:
    if shape is None:
        return ()
    if isinstance(shape, int | np.integer) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        dims = tuple(shape)
    except TypeError:
        dims = None
    if dims is None or not all(
        isinstance(d, int | np.integer) and not isinstance(d, bool) and d >= 0 for d in dims
    ):
        raise LayerArgumentError(
            f"{owner}.add_weight: shape must be a tuple of known sizes (ints >= 0), got "
            f"{shape!r}. In build(input_shape), use input_shape[-1] (the batch axis, "
            "input_shape[0], is None)."
        )
    return tuple(int(d) for d in dims)


def add_weight(
    layer: Any,
    *,
    shape: Any,
    initializer: Any,
    dtype: Any,
    trainable: bool,
    regularizer: Any,
    constraint: Any,
    aggregation: str,
    overwrite_with_gradient: bool,
    name: str | None,
    rngs: nnx.Rngs,
) -> nnx.Variable:
    """Creates the weight ``Layer.add_weight`` describes (see there)."""
    owner = type(layer).__name__
    constraint = _constraints.resolve(f"{owner}.add_weight", constraint=constraint)["constraint"]
    if overwrite_with_gradient:
        raise LayerArgumentError(
            f"{owner}.add_weight: overwrite_with_gradient=True is not supported by phalanx."
        )
    if aggregation not in _AGGREGATIONS:
        raise LayerArgumentError(
            f"{owner}.add_weight: aggregation must be one of {_AGGREGATIONS}, got {aggregation!r}."
        )
    dims = _shape(owner, shape)
    dtype = jnp.dtype(jnp.float32 if dtype is None else dtype)
    if initializer is None:
        initializer = "glorot_uniform" if jnp.issubdtype(dtype, jnp.floating) else "zeros"
    init = _initializers.get(initializer)
    try:
        value = jnp.asarray(init(rngs.params(), dims, dtype), dtype)
    except (ValueError, TypeError, ZeroDivisionError) as error:
        raise LayerArgumentError(
            f"{owner}.add_weight: the initializer {initializer!r} cannot make a weight of shape "
            f"{dims}: {error}"
        ) from None
    kind = nnx.Param if trainable else nnx.BatchStat
    metadata: dict[str, Any] = {"keras_order": next(_ORDER)}
    if name is not None:
        metadata["keras_name"] = str(name)
    reg = regularizers.get(regularizer)
    if reg is not None:
        metadata["regularizer"] = reg
    if constraint is not None:  # fit projects the weight after each update (trainable only)
        metadata["constraint"] = constraint
    return kind(value, **metadata)
