"""Keras 3's ``SpectralNormalization``: a wrapper dividing a layer's kernel by its spectral norm.

As ``keras/src/layers/normalization/spectral_normalization.py``: the kernel
(``kernel``, or an ``Embedding``'s ``embeddings``) is reshaped to
``(-1, kernel.shape[-1])``; ``power_iterations`` steps of power iteration from
the non-trainable ``vector_u`` (``(1, kernel.shape[-1])``, drawn from
``TruncatedNormal(stddev=0.02)``) estimate its largest singular value
``sigma``; in training the wrapped layer runs with ``kernel / sigma`` (the
gradient flows through ``sigma``; ``u`` and ``v`` are constants), and
``vector_u`` keeps the new estimate. An all-zero kernel is left as it is.

As Keras 3's ``fit`` on JAX, the normalized kernel is used by the training
call but not written back into the wrapped layer (Keras's JAX trainer drops a
call's assignments to trainable variables): the optimizer updates the raw
kernel, and inference runs the wrapped layer with it.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx

from ..errors import LayerArgumentError
from . import _initializers, _weight_creation
from ._layer import Layer, Shape, snake_case

#: Keras's ``backend.epsilon()``: ``ops.normalize`` caps the inverse norm at ``1 / epsilon``.
_EPSILON = 1e-7

# Where phalanx's layers keep the weight Keras calls ``kernel`` (or ``embeddings``).
_KERNEL_PATHS = (("linear", "kernel"), ("conv", "kernel"), ("kernel",), ("embed", "embedding"))


def _normalize(x: jax.Array) -> jax.Array:
    """Keras's ``ops.normalize(x, axis=None)``: ``x * min(rsqrt(sum(x**2)), 1 / epsilon)``."""
    inv_norm = jax.lax.rsqrt(jnp.sum(jnp.square(x)))
    return x * jnp.minimum(inv_norm, 1.0 / _EPSILON)


def _kernel_variable(layer: Layer) -> nnx.Variable | None:
    for path in _KERNEL_PATHS:
        node: Any = layer
        for part in path:
            node = vars(node).get(part) if isinstance(node, nnx.Module) else None
        if isinstance(node, nnx.Param):
            return node
    return None


class SpectralNormalization(Layer):
    """Keras's ``SpectralNormalization(layer, power_iterations=1)``: a wrapped layer whose
    kernel is divided by its spectral norm in training (GANs' Lipschitz constraint).

    Args:
      layer: an unbuilt layer with a ``kernel`` (``Dense``, ``Conv2D``, ...) or
        ``embeddings`` (``Embedding``).
      power_iterations: the power-iteration steps per training call (> 0).
      name: the layer's name.
      input_shape: the per-example input shape, on a network's first layer.

    Raises:
      LayerArgumentError: ``power_iterations`` <= 0, or a ``layer`` that is not a
        phalanx layer; at build, a layer without a kernel or embeddings.

    Examples:
      >>> import jax.numpy as jnp
      >>> from phalanx.layers import Conv2D, SpectralNormalization, Dense
      >>> SpectralNormalization(Conv2D(2, 2))(jnp.ones((1, 10, 10, 1))).shape
      (1, 9, 9, 2)
    """

    _no_keras_files = True  # .keras/.weights.h5: Keras's nested layout is not written yet

    def __init__(
        self,
        layer: Layer,
        power_iterations: int = 1,
        *,
        name: str | None = None,
        input_shape: Any = None,
    ):
        super().__init__(name=name, input_shape=input_shape)
        if not isinstance(layer, Layer):
            raise LayerArgumentError(
                f"SpectralNormalization wraps a phalanx layer with a kernel (e.g. "
                f"SpectralNormalization(layers.Dense(8))), got {type(layer).__name__}."
            )
        if (
            isinstance(power_iterations, bool)
            or not isinstance(power_iterations, int)
            or power_iterations <= 0
        ):
            raise LayerArgumentError(
                "`power_iterations` should be greater than zero. Received: "
                f"`power_iterations={power_iterations}`"
            )
        self.layer = layer
        self.power_iterations = int(power_iterations)
        self.vector_u = nnx.data(None)

    def compute_output_shape(self, input_shape: Shape) -> Any:
        return self.layer.compute_output_shape(input_shape)

    def _check_input_shape(self, input_shape: Shape) -> None:
        self.layer._check_input_shape(input_shape)

    def _build(self, input_shape: Shape, rngs: nnx.Rngs) -> None:
        if not self.layer.built:
            if self.layer.name is None:
                self.layer.name = snake_case(type(self.layer).__name__)
            self.layer._build_example(input_shape, rngs)
        kernel = _kernel_variable(self.layer)
        if kernel is None:
            raise LayerArgumentError(
                f"{type(self.layer).__name__} object has no attribute 'kernel' nor "
                "'embeddings': SpectralNormalization wraps a layer with a kernel (Dense, "
                "Conv2D, ...) or an Embedding."
            )
        self.vector_u = _weight_creation.add_weight(
            self,
            shape=(1, kernel.get_value().shape[-1]),
            initializer=_initializers.get(
                {"class_name": "TruncatedNormal", "config": {"stddev": 0.02}}
            ),
            dtype=kernel.get_value().dtype,
            trainable=False,
            regularizer=None,
            constraint=None,
            aggregation="none",
            overwrite_with_gradient=False,
            name="vector_u",
            rngs=rngs,
        )

    def normalized_weights(self) -> tuple[jax.Array, jax.Array]:
        """``(new vector_u, kernel / sigma)`` after ``power_iterations`` steps (Keras's)."""
        kernel = _kernel_variable(self.layer).get_value()
        weights = jnp.reshape(kernel, (-1, kernel.shape[-1]))
        u = self.vector_u.get_value()
        v = u
        for _ in range(self.power_iterations):
            v = _normalize(u @ weights.T)
            u = _normalize(v @ weights)
        u, v = jax.lax.stop_gradient(u), jax.lax.stop_gradient(v)
        sigma = (v @ weights) @ u.T
        return u.astype(self.vector_u.get_value().dtype), (kernel / sigma).astype(kernel.dtype)

    def call(self, x, *, training, rngs):
        if not training:
            return self.layer(x, training=training, rngs=rngs).astype(x.dtype)
        variable = _kernel_variable(self.layer)
        kernel = variable.get_value()
        new_u, new_kernel = self.normalized_weights()
        zero = jnp.all(kernel == 0)  # Keras: an all-zero kernel is kept, and so is u
        self.vector_u.set_value(jnp.where(zero, self.vector_u.get_value(), new_u))
        variable.set_value(jnp.where(zero, kernel, new_kernel))
        try:
            out = self.layer(x, training=training, rngs=rngs)
        finally:
            variable.set_value(kernel)  # Keras on JAX: the call's kernel is not kept
        return out.astype(x.dtype)

    def get_config(self) -> dict:
        """Keras's: the wrapped layer's class and config, and ``power_iterations``."""
        return {
            "name": self.name,
            "trainable": self.trainable,
            "dtype": None,
            "layer": {"class_name": type(self.layer).__name__, "config": self.layer.get_config()},
            "power_iterations": self.power_iterations,
        }

    @classmethod
    def from_config(cls, config: dict) -> SpectralNormalization:
        """Rebuilds the wrapper from `get_config` (the layer by its phalanx class name)."""
        from .. import layers as _layers  # the public layers, by class name

        config = dict(config)
        entry = config.pop("layer")
        layer_cls = getattr(_layers, entry["class_name"], None)
        if not (isinstance(layer_cls, type) and issubclass(layer_cls, Layer)):
            raise LayerArgumentError(
                f"SpectralNormalization.from_config: {entry['class_name']!r} is not a phalanx "
                "layer."
            )
        trainable = config.pop("trainable", True)
        config.pop("dtype", None)
        layer = cls(layer_cls.from_config(entry["config"]), **config)
        layer.trainable = trainable
        return layer
