"""Keras's merge layers: ``Add``, ``Subtract``, ``Multiply``, ``Average``, ``Maximum``,
``Minimum``, ``Concatenate``, ``Dot``. Each takes a list of batches (``Add()([a, b])``).

Element-wise layers need inputs of one shape, or shapes that broadcast (Keras
allows that too); ``Concatenate(axis=-1)`` joins along an axis whose other
sizes agree; ``Dot(axes)`` is Keras's ``batch_dot`` of two inputs. They have no
weights. Masks pass as Keras's: the element-wise layers' output mask is the logical OR of
the inputs' masks (None when any input has none), ``Concatenate``'s joins the masks
along its axis (all True for an unmasked input), ``Dot`` gives none; ``Multiply``,
``Maximum`` and ``Minimum`` also let the masked entries drop out of their values, as
Keras's (``Add``, ``Subtract``, ``Average`` do not). Keras's functional forms (``add([a, b])``, ``concatenate([a, b], axis=1)``,
``dot([a, b], axes=1)``, ...) make the layer and call it on the inputs.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import LayerArgumentError
from ._layer import Layer, Shape, format_shape, normalize_shape, shapes_match

#: Keras's ``backend.epsilon()``: ``ops.normalize`` caps the inverse norm at ``1 / epsilon``.
_EPSILON = 1e-7


class _Merge(Layer):
    """Shared logic of the layers that take a list of inputs."""

    _min_inputs = 2
    supports_masking = True

    def __init__(self, *, name: str | None = None, dtype: Any = None):
        super().__init__(name=name, dtype=dtype)

    def _normalize_input_shape(self, input_shape: Any) -> list[Shape]:
        if not isinstance(input_shape, list | tuple) or not all(
            isinstance(s, list | tuple) for s in input_shape
        ):
            raise self._error(
                f"takes a list of inputs (layers.{type(self).__name__}()([a, b])), got "
                f"one input of shape {input_shape}."
            )
        return [normalize_shape(s) for s in input_shape]

    def _input_shape_of(self, x: Any) -> Any:
        if not isinstance(x, list | tuple):
            raise self._error(
                f"takes a list of inputs (layers.{type(self).__name__}()([a, b])), got a "
                f"single {type(x).__name__}."
            )
        return [tuple(a.shape[1:]) for a in x]

    def _check_input_shape(self, input_shape: list[Shape]) -> None:
        if len(input_shape) < self._min_inputs:
            raise self._error(f"needs at least {self._min_inputs} inputs, got {len(input_shape)}.")

    def check_input(self, x: Any) -> None:
        shapes = self._input_shape_of(x)
        if len(shapes) != len(self.built_input_shape) or not all(
            shapes_match(e, r) for e, r in zip(self.built_input_shape, shapes, strict=True)
        ):
            raise self._error(
                f"was built for inputs of shapes {self.built_input_shape}, received {shapes}."
            )

    def call(self, x, *, training, rngs):
        return self._merge([self._cast(a) for a in x])

    def _mask_list(self, inputs: Any, mask: Any) -> list | None:
        """Keras's checks of ``compute_mask``'s arguments: the mask list, or None."""
        if mask is None:
            return None
        if not isinstance(mask, list | tuple):
            raise self._error(
                f"expects `mask` to be a list (one mask or None per input), got "
                f"{type(mask).__name__}."
            )
        if not isinstance(inputs, list | tuple):
            raise self._error(f"expects `inputs` to be a list, got {type(inputs).__name__}.")
        if len(mask) != len(inputs):
            raise self._error(
                f"expects one mask (or None) per input: got {len(inputs)} inputs and "
                f"{len(mask)} masks."
            )
        return list(mask)


class _ElementWise(_Merge):
    def _check_input_shape(self, input_shape: list[Shape]) -> None:
        super()._check_input_shape(input_shape)
        self.compute_output_shape(input_shape)

    def compute_output_shape(self, input_shape: list[Shape]) -> Shape:
        rank = max(len(s) for s in input_shape)
        out = []
        for axis in range(rank):
            sizes = {s[axis - rank + len(s)] for s in input_shape if axis - rank + len(s) >= 0}
            known = {d for d in sizes if d not in (None, 1)}
            if len(known) > 1:
                raise self._error(
                    "cannot combine inputs of shapes "
                    f"{[format_shape(s) for s in input_shape]}: they must have one shape "
                    "(or shapes that broadcast)."
                )
            out.append(known.pop() if known else (None if None in sizes else 1))
        return tuple(out)

    def _merge(self, xs: list[jax.Array]) -> jax.Array:
        return functools.reduce(self._op, xs)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """Keras's: the logical OR of the inputs' masks; None when any input has none.

        Args:
          inputs: the list of inputs.
          mask: one mask (or None) per input, or None.

        Returns:
          The output's mask, or None.

        Raises:
          LayerShapeError: ``mask`` is not a list of one entry per input.
        """
        masks = self._mask_list(inputs, mask)
        if masks is None or any(m is None for m in masks):
            return None
        return functools.reduce(jnp.logical_or, [jnp.asarray(m) for m in masks])


class _MaskedValues(_ElementWise):
    """The element-wise layers whose values depend on the inputs' masks in Keras."""

    def call(self, x, *, training, rngs, mask=None):
        xs = [self._cast(a) for a in x]
        masks = self._mask_list(x, mask) if mask is not None else None
        if masks is None or all(m is None for m in masks):
            return self._merge(xs)
        full = [
            None if m is None else jnp.broadcast_to(jnp.asarray(m, bool)[..., None], a.shape)
            for a, m in zip(xs, masks, strict=True)
        ]
        return self._merge_masked(xs, full)


def _merge_or_masked(op: Any, xs: list, masks: list) -> jax.Array:
    """Keras's ``_apply_merge_op_and_or_mask``: a masked entry takes the other side's value."""
    output, output_mask = xs[0], masks[0]
    for x, m in zip(xs[1:], masks[1:], strict=True):
        if m is not None:
            x = jnp.where(m, x, output)
        if output_mask is not None:
            output = jnp.where(output_mask, output, x)
        output_mask = None if m is None or output_mask is None else output_mask | m
        output = op(output, x)
    return output


class Add(_ElementWise):
    """Adds a list of inputs element-wise: ``Add()([a, b]) == a + b``.

    Examples:
      >>> import jax.numpy as jnp
      >>> Add()([jnp.ones((1, 2)), jnp.ones((1, 2))]).tolist()
      [[2.0, 2.0]]
    """

    _op = staticmethod(jnp.add)


class Multiply(_MaskedValues):
    """Multiplies a list of inputs element-wise; with masks, as Keras: a masked entry counts
    as 1, and where every input is masked the product is 0.

    Examples:
      >>> import jax.numpy as jnp
      >>> Multiply()([jnp.full((1, 2), 2.0), jnp.full((1, 2), 3.0)]).tolist()
      [[6.0, 6.0]]
    """

    _op = staticmethod(jnp.multiply)

    def _merge_masked(self, xs: list, masks: list) -> jax.Array:
        xs = [
            x if m is None else jnp.where(m, x, jnp.ones((), x.dtype))
            for x, m in zip(xs, masks, strict=True)
        ]
        output = functools.reduce(jnp.multiply, xs)
        if any(m is None for m in masks):
            return output
        return jnp.where(
            functools.reduce(jnp.logical_or, masks), output, jnp.zeros((), output.dtype)
        )


class Maximum(_MaskedValues):
    """The element-wise maximum of a list of inputs (a masked entry takes the others' value,
    as Keras)."""

    _op = staticmethod(jnp.maximum)

    def _merge_masked(self, xs: list, masks: list) -> jax.Array:
        return _merge_or_masked(jnp.maximum, xs, masks)


class Minimum(_MaskedValues):
    """The element-wise minimum of a list of inputs (a masked entry takes the others' value,
    as Keras)."""

    _op = staticmethod(jnp.minimum)

    def _merge_masked(self, xs: list, masks: list) -> jax.Array:
        return _merge_or_masked(jnp.minimum, xs, masks)


class Subtract(_ElementWise):
    """Subtracts the second of two inputs from the first: ``Subtract()([a, b]) == a - b``."""

    def _check_input_shape(self, input_shape: list[Shape]) -> None:
        if len(input_shape) != 2:
            raise self._error(f"takes exactly 2 inputs, got {len(input_shape)}.")
        super()._check_input_shape(input_shape)

    _op = staticmethod(jnp.subtract)


class Average(_ElementWise):
    """The element-wise mean of a list of inputs."""

    def _merge(self, xs: list[jax.Array]) -> jax.Array:
        return functools.reduce(jnp.add, xs) / len(xs)


class Concatenate(_Merge):
    """Joins a list of inputs along ``axis`` (default the last), as Keras.

    Args:
      axis: the axis to join along, counting the batch axis (``-1``: features).
      name: the layer's name.

    Examples:
      >>> import jax.numpy as jnp
      >>> Concatenate()([jnp.ones((1, 2)), jnp.zeros((1, 3))]).shape
      (1, 5)
    """

    def __init__(self, axis: int = -1, *, name: str | None = None, dtype: Any = None):
        super().__init__(name=name, dtype=dtype)
        self.axis = int(axis)

    def _example_axis(self, rank: int) -> int:
        """``axis`` counted in a per-example shape of ``rank`` axes (no batch axis)."""
        axis = self.axis if self.axis < 0 else self.axis - 1
        if not -rank <= axis < rank or self.axis == 0:
            raise self._error(
                f"cannot join along axis {self.axis}: inputs have {rank + 1} axes (batch "
                "included), and the batch axis 0 cannot be joined."
            )
        return axis % rank

    def compute_output_shape(self, input_shape: list[Shape]) -> Shape:
        ranks = {len(s) for s in input_shape}
        if len(ranks) != 1:
            raise self._error(f"needs inputs of one rank, got shapes {input_shape}.")
        rank = ranks.pop()
        axis = self._example_axis(rank)
        out = list(input_shape[0])
        for s in input_shape[1:]:
            for i in range(rank):
                if i == axis:
                    continue
                if None not in (out[i], s[i]) and out[i] != s[i]:
                    raise self._error(
                        f"needs inputs whose sizes agree except on axis {self.axis}, got "
                        f"shapes {[format_shape(t) for t in input_shape]}."
                    )
                out[i] = out[i] if out[i] is not None else s[i]
        sizes = [s[axis] for s in input_shape]
        out[axis] = None if None in sizes else sum(sizes)
        return tuple(out)

    def _check_input_shape(self, input_shape: list[Shape]) -> None:
        super()._check_input_shape(input_shape)
        self.compute_output_shape(input_shape)

    def _merge(self, xs: list[jax.Array]) -> jax.Array:
        return jnp.concatenate(xs, axis=self.axis)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """Keras's: the masks joined along ``axis`` (all True for an unmasked input), then
        reduced by ``any`` over the last axis; None when no input has a mask.

        Args:
          inputs: the list of inputs.
          mask: one mask (or None) per input, or None.

        Returns:
          The output's mask, or None.

        Raises:
          LayerShapeError: ``mask`` is not a list of one entry per input.
        """
        masks = self._mask_list(inputs, mask)
        if masks is None or all(m is None for m in masks):
            return None
        full = []
        for x, m in zip(inputs, masks, strict=True):
            shape = jnp.shape(x)
            if m is None:
                full.append(jnp.ones(shape, bool))
            elif jnp.ndim(m) < len(shape):
                full.append(jnp.broadcast_to(jnp.asarray(m, bool)[..., None], shape))
            else:
                full.append(jnp.asarray(m, bool))
        return jnp.any(jnp.concatenate(full, axis=self.axis), axis=-1)


class Dot(_Merge):
    """Keras's ``Dot``: the dot product of two inputs along one axis of each (``batch_dot``).

    With inputs of shapes ``(batch, 3, 5)`` and ``(batch, 10, 3)`` and
    ``axes=(1, 2)`` the output has shape ``(batch, 5, 10)``: the first input's
    axes without the summed one, then the second's without its batch and summed
    axes; an output of one axis becomes ``(batch, 1)``, as Keras.

    Args:
      axes: the axis of both inputs (an int), or a pair: the first input's axis
        and the second's. Axes count the batch axis (which cannot be summed);
        negative axes count from the end of each input.
      normalize: L2-normalize both inputs along their axes first (the output is
        then the cosine similarity), as Keras's ``ops.normalize``.
      name: the layer's name.
      dtype: the computation dtype, or None for the inputs'.

    Raises:
      LayerArgumentError: ``axes`` is not an int or a pair of ints.

    Examples:
      >>> import jax.numpy as jnp
      >>> Dot(axes=(1, 2))([jnp.ones((2, 3, 5)), jnp.ones((2, 10, 3))]).shape
      (2, 5, 10)
      >>> Dot(axes=1)([jnp.ones((1, 4)), jnp.ones((1, 4))]).tolist()
      [[4.0]]
    """

    def __init__(
        self, axes: Any, normalize: bool = False, *, name: str | None = None, dtype: Any = None
    ):
        super().__init__(name=name, dtype=dtype)
        if isinstance(axes, list | tuple):
            if len(axes) != 2:
                raise LayerArgumentError(
                    "Invalid format for argument `axes`: it should contain two elements (the "
                    f"first input's axis and the second's). Received: axes={axes}"
                )
            if not all(_is_int(a) for a in axes):
                raise LayerArgumentError(
                    "Invalid format for argument `axes`: list elements should be integers. "
                    f"Received: axes={axes}"
                )
            axes = tuple(int(a) for a in axes)
        elif _is_int(axes):
            axes = int(axes)
        else:
            raise LayerArgumentError(
                "Invalid type for argument `axes`: it should be a list or an int (e.g. "
                f"axes=1 or axes=(1, 2)). Received: axes={axes!r} ({type(axes).__name__})"
            )
        self.axes = axes
        self.normalize = bool(normalize)

    def _full_axes(self, rank1: int, rank2: int) -> tuple[int, int]:
        """The summed axes of inputs of ``rank1`` and ``rank2`` axes (batch included)."""
        first, second = (self.axes, self.axes) if isinstance(self.axes, int) else self.axes
        return (first % rank1 if first < 0 else first, second % rank2 if second < 0 else second)

    def _check_input_shape(self, input_shape: list[Shape]) -> None:
        if len(input_shape) != 2:
            raise self._error(
                "should be called on a list of 2 inputs (layers.Dot(axes)([a, b])), got "
                f"{len(input_shape)}."
            )
        shape1, shape2 = ((None, *s) for s in input_shape)
        if len(shape1) < 2 or len(shape2) < 2:
            raise self._error(
                "cannot do batch_dot on inputs with rank < 2 (batch axis included), got "
                f"shapes {format_shape(input_shape[0])} and {format_shape(input_shape[1])}."
            )
        a0, a1 = self._full_axes(len(shape1), len(shape2))
        if not (0 <= a0 < len(shape1) and 0 <= a1 < len(shape2)):
            raise self._error(
                f"got axes={self.axes}, out of range for inputs of shapes "
                f"{format_shape(input_shape[0])} and {format_shape(input_shape[1])}."
            )
        if 0 in (a0, a1):
            raise self._error(
                f"cannot perform batch_dot over axis 0 (axes={self.axes}): it is the batch "
                "axis. Sum over another axis, or add a batch axis to the inputs."
            )
        d1, d2 = shape1[a0], shape2[a1]
        if d1 is not None and d2 is not None and d1 != d2:
            raise self._error(
                f"got incompatible input shapes: axis values {d1} (at axis {a0}) != {d2} (at "
                f"axis {a1}). Full input shapes: {format_shape(input_shape[0])}, "
                f"{format_shape(input_shape[1])}."
            )

    def compute_output_shape(self, input_shape: list[Shape]) -> Shape:
        self._check_input_shape(input_shape)
        shape1, shape2 = (list((None, *s)) for s in input_shape)
        a0, a1 = self._full_axes(len(shape1), len(shape2))
        shape1.pop(a0)
        shape2.pop(a1)
        out = shape1 + shape2[1:]
        return tuple(out[1:]) if len(out) > 1 else (1,)

    def _merge(self, xs: list[jax.Array]) -> jax.Array:
        x1, x2 = xs
        a0, a1 = self._full_axes(x1.ndim, x2.ndim)
        if self.normalize:
            x1, x2 = _l2_normalize(x1, a0), _l2_normalize(x2, a1)
        out = jax.lax.dot_general(x1, x2, (((a0,), (a1,)), ((0,), (0,))))
        return out[:, None] if out.ndim == 1 else out

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """None: ``Dot``'s output carries no mask, as Keras."""
        return None


def _is_int(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def _l2_normalize(x: jax.Array, axis: int) -> jax.Array:
    """Keras's ``ops.normalize(x, axis)``: ``x * min(rsqrt(sum(x**2)), 1 / epsilon)``."""
    inv_norm = jax.lax.rsqrt(jnp.sum(jnp.square(x), axis=axis, keepdims=True))
    return x * jnp.minimum(inv_norm, 1.0 / _EPSILON)


# Keras's functional forms: ``keras.layers.add(inputs, **kwargs)`` is ``Add(**kwargs)(inputs)``.


def add(inputs: list, **kwargs: Any) -> Any:
    """Keras's ``add``: ``Add(**kwargs)(inputs)``, the element-wise sum of the inputs.

    Args:
      inputs: a list of batches or symbolic tensors of one shape (or shapes that broadcast).
      **kwargs: the layer's arguments (``name=``, ``dtype=``).

    Returns:
      The sum, a batch (or a symbolic tensor in a functional model).

    Examples:
      >>> import jax.numpy as jnp
      >>> add([jnp.ones((1, 2)), jnp.ones((1, 2))]).tolist()
      [[2.0, 2.0]]
    """
    return Add(**kwargs)(inputs)


def subtract(inputs: list, **kwargs: Any) -> Any:
    """Keras's ``subtract``: ``Subtract(**kwargs)(inputs)``, the first input minus the second.

    Args:
      inputs: a list of exactly 2 batches or symbolic tensors.
      **kwargs: the layer's arguments (``name=``, ``dtype=``).

    Returns:
      The difference, a batch (or a symbolic tensor in a functional model).
    """
    return Subtract(**kwargs)(inputs)


def multiply(inputs: list, **kwargs: Any) -> Any:
    """Keras's ``multiply``: ``Multiply(**kwargs)(inputs)``, the element-wise product.

    Args:
      inputs: a list of batches or symbolic tensors of one shape (or shapes that broadcast).
      **kwargs: the layer's arguments (``name=``, ``dtype=``).

    Returns:
      The product, a batch (or a symbolic tensor in a functional model).
    """
    return Multiply(**kwargs)(inputs)


def average(inputs: list, **kwargs: Any) -> Any:
    """Keras's ``average``: ``Average(**kwargs)(inputs)``, the element-wise mean.

    Args:
      inputs: a list of batches or symbolic tensors of one shape (or shapes that broadcast).
      **kwargs: the layer's arguments (``name=``, ``dtype=``).

    Returns:
      The mean, a batch (or a symbolic tensor in a functional model).
    """
    return Average(**kwargs)(inputs)


def maximum(inputs: list, **kwargs: Any) -> Any:
    """Keras's ``maximum``: ``Maximum(**kwargs)(inputs)``, the element-wise maximum.

    Args:
      inputs: a list of batches or symbolic tensors of one shape (or shapes that broadcast).
      **kwargs: the layer's arguments (``name=``, ``dtype=``).

    Returns:
      The maximum, a batch (or a symbolic tensor in a functional model).
    """
    return Maximum(**kwargs)(inputs)


def minimum(inputs: list, **kwargs: Any) -> Any:
    """Keras's ``minimum``: ``Minimum(**kwargs)(inputs)``, the element-wise minimum.

    Args:
      inputs: a list of batches or symbolic tensors of one shape (or shapes that broadcast).
      **kwargs: the layer's arguments (``name=``, ``dtype=``).

    Returns:
      The minimum, a batch (or a symbolic tensor in a functional model).
    """
    return Minimum(**kwargs)(inputs)


def concatenate(inputs: list, axis: int = -1, **kwargs: Any) -> Any:
    """Keras's ``concatenate``: ``Concatenate(axis, **kwargs)(inputs)``.

    Args:
      inputs: a list of batches or symbolic tensors whose sizes agree except on ``axis``.
      axis: the axis to join along, counting the batch axis (``-1``: features).
      **kwargs: the layer's arguments (``name=``, ``dtype=``).

    Returns:
      The joined batch (or a symbolic tensor in a functional model).

    Examples:
      >>> import jax.numpy as jnp
      >>> concatenate([jnp.ones((1, 2)), jnp.zeros((1, 3))]).shape
      (1, 5)
    """
    return Concatenate(axis=axis, **kwargs)(inputs)


def dot(inputs: list, axes: Any = -1, normalize: bool = False, **kwargs: Any) -> Any:
    """Keras's ``dot``: ``Dot(axes, normalize, **kwargs)(inputs)``, a batched dot product.

    Args:
      inputs: a list of 2 batches or symbolic tensors.
      axes: the summed axis of both inputs, or a pair (the first's, the second's);
        axes count the batch axis, which cannot be summed.
      normalize: L2-normalize the inputs along their axes first (cosine similarity).
      **kwargs: the layer's arguments (``name=``, ``dtype=``).

    Returns:
      The dot product, a batch (or a symbolic tensor in a functional model).

    Examples:
      >>> import jax.numpy as jnp
      >>> dot([jnp.ones((2, 3, 5)), jnp.ones((2, 10, 3))], axes=(1, 2)).shape
      (2, 5, 10)
    """
    return Dot(axes=axes, normalize=normalize, **kwargs)(inputs)
