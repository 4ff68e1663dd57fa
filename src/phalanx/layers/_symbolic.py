"""Symbolic tensors: what ``phalanx.Input`` returns and layers return when called on one.

A `KerasTensor` has a shape (batch axis first, ``None``), a dtype and
the `Node` that made it: the layer call with its inputs. Calling a
layer on symbolic tensors computes nothing and creates no weights; it checks
the shapes (``_check_input_shape``), computes the output shape
(``compute_output_shape``) and records the call. ``Model(inputs, outputs)``
(`phalanx.models._functional`) walks those records back from the outputs.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import ModelStructureError
from ._layer import Layer, format_shape, normalize_shape, shapes_match


class Node:
    """One call of a layer on symbolic inputs.

    Attributes:
      layer: the layer called.
      args: the call's positional inputs (symbolic tensors where the user gave them).
      kwargs: its keyword options (symbolic tensors or plain values).
      training: the ``training=`` given at the call, or None to follow the model.
      outputs: the symbolic tensors the call returned.
    """

    def __init__(self, layer: Layer, args: tuple, kwargs: dict, training: bool | None):
        self.layer = layer
        self.args = args
        self.kwargs = kwargs
        self.training = training
        self.outputs: list[KerasTensor] = []
        self.multi = False  # the call returns a list of outputs

    @property
    def inputs(self) -> list[KerasTensor]:
        """The symbolic tensors this call reads."""
        return [
            t
            for t in jax.tree.leaves((self.args, self.kwargs), is_leaf=is_symbolic)
            if is_symbolic(t)
        ]


class KerasTensor:
    """A symbolic batch, as Keras's ``KerasTensor``: shape, dtype and where it came from.

    Attributes:
      shape: the shape with the batch axis first (``None``): ``(None, 784)``.
      dtype: the dtype.
      name: the name (an ``Input``'s name, else the producing layer's).
    """

    def __init__(self, shape: tuple, dtype: Any, node: Node, index: int = 0, name: str = ""):
        self.shape = (None, *shape)
        self.dtype = "string" if dtype in ("string", str) else jnp.dtype(dtype)  # Keras's name
        self.node = node
        self.index = index
        self.name = name

    @property
    def per_example_shape(self) -> tuple:
        """The shape without the batch axis."""
        return self.shape[1:]

    def __repr__(self) -> str:
        layer = self.node.layer
        return (
            f"<KerasTensor shape={format_shape(self.shape[1:])}, dtype={self.dtype.name}, "
            f"name={self.name or layer.name}>"
        )

    def __array__(self, dtype=None, copy=None):
        raise TypeError(
            f"{self!r} is symbolic: it has no values. Build a model with "
            "phalanx.Model(inputs, outputs) and call or fit that model."
        )

    def _no_operators(self, *args):
        raise TypeError(
            "Operators on symbolic tensors are not supported by phalanx: use the merge "
            "layers (layers.Add()([a, b]), layers.Multiply(), layers.Concatenate()) or a "
            "layer of your own."
        )

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _no_operators
    __matmul__ = __truediv__ = __getitem__ = _no_operators


def is_symbolic(x: Any) -> bool:
    """True for a `KerasTensor`."""
    return isinstance(x, KerasTensor)


def any_symbolic(tree: Any) -> bool:
    """True when a pytree holds a `KerasTensor` anywhere."""
    return any(is_symbolic(leaf) for leaf in jax.tree.leaves(tree, is_leaf=is_symbolic))


def shape_of(tree: Any) -> Any:
    """The per-example shapes of a pytree of symbolic tensors (lists stay lists)."""
    return jax.tree.map(lambda t: t.per_example_shape, tree, is_leaf=is_symbolic)


def _check_args(layer: Layer, args: tuple, kwargs: dict) -> None:
    for leaf in jax.tree.leaves((args, kwargs), is_leaf=is_symbolic):
        if isinstance(leaf, np.ndarray | jax.Array):
            raise ModelStructureError(
                f"Layer '{layer.name or type(layer).__name__}' was called on symbolic inputs "
                f"together with an array of shape {np.shape(leaf)}: a functional model's "
                "inputs must all be symbolic. Make it an Input(...) of the model."
            )


def call_symbolic(layer: Layer, x: Any, args: tuple, kwargs: dict, *, training) -> Any:
    """Records ``layer(x, *args, **kwargs)`` on symbolic tensors; returns symbolic outputs.

    Raises:
      LayerShapeError: the layer cannot take these shapes.
      ModelStructureError: an array was mixed with symbolic inputs.
    """
    all_args = (x, *args)
    _check_args(layer, all_args, kwargs)
    shape = layer._normalize_input_shape(layer._build_shapes(*all_args, **kwargs))
    if layer.built and not _shapes_compatible(layer.built_input_shape, shape):
        raise layer._error(
            f"was built for inputs of shape {layer.built_input_shape}, and is now called "
            f"on symbolic inputs of shape {shape}."
        )
    layer._check_input_shape(shape)
    out_shape = layer._symbolic_output_shape(shape, kwargs)  # outputs may depend on kwargs
    out_shape = layer._normalize_output_shape(out_shape)
    node = Node(layer, all_args, dict(kwargs), training)
    dtype = _output_dtype(layer, all_args)
    if isinstance(out_shape, list):
        node.multi = True
        node.outputs = [KerasTensor(s, dtype, node, i) for i, s in enumerate(out_shape)]
        return list(node.outputs)
    node.outputs = [KerasTensor(out_shape, dtype, node, 0)]
    return node.outputs[0]


def _shapes_compatible(a: Any, b: Any) -> bool:
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_shapes_compatible(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, tuple) and isinstance(b, tuple):
        return shapes_match(a, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return set(a) == set(b) and all(_shapes_compatible(a[k], b[k]) for k in a)
    return False


def _output_dtype(layer: Layer, args: tuple) -> Any:
    from ._core import InputLayer

    if isinstance(layer, InputLayer):
        return layer.dtype or jnp.float32
    if layer.runs_on_host:  # strings to ids: Keras's compute_output_spec
        return layer.symbolic_dtype
    return layer.dtype or jnp.float32


def make_input(layer: Layer, shape: Any, dtype: Any, name: str | None) -> KerasTensor:
    """The symbolic tensor of an ``InputLayer`` (what ``Input(...)`` returns)."""
    node = Node(layer, (), {}, None)
    tensor = KerasTensor(normalize_shape(shape), dtype or jnp.float32, node, 0, name or "")
    node.outputs = [tensor]
    return tensor
