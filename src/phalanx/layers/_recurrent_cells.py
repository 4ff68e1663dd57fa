"""Keras 3's recurrent cells: ``SimpleRNNCell``, ``LSTMCell``, ``GRUCell`` (one time step each).

The numerics are Keras 3's (``keras/src/layers/rnn``): the same gate order and
weight layout (LSTM ``i, f, c, o``; GRU ``z, r, h`` with ``reset_after=True``
and a ``(2, 3 * units)`` bias), and dropout masks drawn once per sequence by
the ``RNN`` that runs the cell (one mask per gate once ``recurrent_dropout`` is
set, as Keras's ``implementation=1``). Weights are Keras's (``kernel``,
``recurrent_kernel``, ``bias``), so ``set_weights(keras_cell.get_weights())``
gives Keras's outputs. A cell's shape given to ``build`` is ``(features,)``.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx

from .. import activations, regularizers
from . import _args, _initializers
from ._layer import Layer, Shape


def _dropout_rate(layer: str, what: str, value: Any) -> float:
    rate = _args.non_negative(layer, what, value)
    return min(1.0, rate)  # Keras clips to [0, 1]


def _dropout_masks(key: Any, rate: float, like: jax.Array, count: int | None) -> Any:
    """Keras's ``DropoutRNNCell`` masks: ``count`` masks (or one) of ``like``'s shape."""
    keep = 1.0 - rate

    def one(k):
        return jax.random.bernoulli(k, keep, like.shape).astype(like.dtype) / keep

    if count is None:
        return one(key)
    return [one(k) for k in jax.random.split(key, count)]


def _as_key(rngs: Any) -> Any:
    if isinstance(rngs, nnx.Rngs):
        return rngs.dropout()
    return rngs


class _Cell(Layer):
    """What Keras's three cells share: units, dropout, and their kernel, recurrent kernel, bias."""

    _gates = 1
    _weight_regularizer_paths = (
        ("kernel_regularizer", ("kernel",)),
        ("recurrent_regularizer", ("recurrent_kernel",)),
        ("bias_regularizer", ("bias",)),
    )
    _weight_constraint_paths = (
        ("kernel_constraint", ("kernel",)),
        ("recurrent_constraint", ("recurrent_kernel",)),
        ("bias_constraint", ("bias",)),
    )

    def __init__(
        self,
        units: int,
        *,
        activation: Any,
        use_bias: bool,
        kernel_initializer: Any,
        recurrent_initializer: Any,
        bias_initializer: Any,
        kernel_regularizer: Any,
        recurrent_regularizer: Any,
        bias_regularizer: Any,
        kernel_constraint: Any,
        recurrent_constraint: Any,
        bias_constraint: Any,
        dropout: float,
        recurrent_dropout: float,
        seed: int | None,
        name: str | None,
        dtype: Any,
    ):
        owner = type(self).__name__
        super().__init__(name=name, dtype=dtype)
        _args.keep_constraints(
            self,
            kernel_constraint=kernel_constraint,
            recurrent_constraint=recurrent_constraint,
            bias_constraint=bias_constraint,
        )
        self.units = _args.positive_int(owner, "units", units, f"{owner}(32)")
        _args.keep_kernel_arguments(
            self,
            activation,
            bool(use_bias),
            kernel_initializer,
            bias_initializer,
            kernel_regularizer,
            bias_regularizer,
            None,
        )
        _initializers.get(recurrent_initializer)
        self.recurrent_initializer = recurrent_initializer
        self.recurrent_regularizer = regularizers.get(recurrent_regularizer)
        self.dropout = _dropout_rate(owner, "dropout", dropout)
        self.recurrent_dropout = _dropout_rate(owner, "recurrent_dropout", recurrent_dropout)
        self.seed = seed
        self.kernel = nnx.data(None)
        self.recurrent_kernel = nnx.data(None)
        self.bias = nnx.data(None)

    _has_activation = True

    @property
    def state_size(self) -> Any:
        """The size of each state (an int for one state), as Keras."""
        return self.units

    @property
    def output_size(self) -> int:
        """The size of the cell's output at each step."""
        return self.units

    @property
    def uses_rng(self) -> bool:
        """True when the cell draws dropout masks in training."""
        return self.dropout > 0.0 or self.recurrent_dropout > 0.0

    @property
    def _mask_count(self) -> int | None:
        """Keras's ``dropout_mask_count``: one mask per gate once recurrent dropout is on."""
        return self._gates if self.recurrent_dropout > 0.0 and self._gates > 1 else None

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        return (self.output_size,)

    def _check_input_shape(self, input_shape: Shape) -> None:
        self._require_rank(input_shape, 1, "(batch, features)")
        self._require_known(input_shape, [-1], "feature axis")

    def _bias_shape(self) -> tuple[int, ...]:
        return (self._gates * self.units,)

    def _bias_init(self, key: Any, shape: tuple[int, ...]) -> jax.Array:
        return _initializers.get(self.bias_initializer)(key, shape, jnp.float32)

    def _build(self, input_shape: Shape, rngs: nnx.Rngs) -> None:
        width = self._gates * self.units
        init = _initializers.get(self.kernel_initializer)
        recurrent = _initializers.get(self.recurrent_initializer)
        self.kernel = nnx.Param(init(rngs.params(), (input_shape[-1], width), jnp.float32))
        self.recurrent_kernel = nnx.Param(
            recurrent(rngs.params(), (self.units, width), jnp.float32)
        )
        if self.use_bias:
            self.bias = nnx.Param(self._bias_init(rngs.params(), self._bias_shape()))

    def dropout_masks(self, inputs: jax.Array, state: jax.Array, training: bool, rngs: Any):
        """The (input, recurrent) dropout masks of one call, or None where no dropout runs."""
        if not training or not self.uses_rng:
            return None, None
        key = _as_key(rngs)
        if key is None:
            raise ValueError(
                f"Layer '{self.name}' ({type(self).__name__}) needs a random key for dropout in "
                "training: call it with rngs=jax.random.key(seed) (Model.fit gives one)."
            )
        if self.seed is not None:
            key = jax.random.fold_in(key, self.seed)
        k_in, k_rec = jax.random.split(key)
        dp = None
        if 0.0 < self.dropout < 1.0:
            dp = _dropout_masks(k_in, self.dropout, inputs, self._mask_count)
        rec = None
        if 0.0 < self.recurrent_dropout < 1.0:
            rec = _dropout_masks(k_rec, self.recurrent_dropout, state, self._mask_count)
        return dp, rec

    def call(self, inputs, states, *, training, rngs, masks=None):
        """One step: ``(output, new_states)`` for ``inputs`` (batch, features) and ``states``.

        ``masks`` are the (input, recurrent) dropout masks an ``RNN`` drew for the
        whole sequence; called alone in training, the cell draws its own.
        """
        single = not isinstance(states, list | tuple)
        states = [states] if single else list(states)
        inputs = self._cast(inputs)
        if masks is None:
            masks = self.dropout_masks(inputs, states[0], training, rngs)
        output, new_states = self.step(inputs, states, *masks)
        return output, (new_states[0] if single else new_states)

    def _values(self):
        dtype = self.dtype
        kernel = self.kernel.get_value()
        recurrent = self.recurrent_kernel.get_value()
        bias = None if self.bias is None else self.bias.get_value()
        if dtype is not None:
            kernel, recurrent = kernel.astype(dtype), recurrent.astype(dtype)
            bias = None if bias is None else bias.astype(dtype)
        return kernel, recurrent, bias

    def get_initial_state(self, batch_size: int) -> list[jax.Array]:
        """Zero states for ``batch_size`` sequences."""
        sizes = self.state_size if isinstance(self.state_size, list) else [self.state_size]
        return [jnp.zeros((batch_size, s), self.dtype or jnp.float32) for s in sizes]

    def get_config(self) -> dict:
        config = super().get_config()
        for key in ("kernel", "recurrent_kernel", "bias", "activity_regularizer"):
            config.pop(key, None)
        return config


class SimpleRNNCell(_Cell):
    """Keras's ``SimpleRNNCell``: ``h = activation(x @ kernel + bias + h_prev @ recurrent_kernel)``.

    Args:
      units: the size of the output and state.
      activation: default ``tanh``; None is linear.
      use_bias: whether to add a bias.
      kernel_initializer: default ``glorot_uniform``.
      recurrent_initializer: default ``orthogonal``.
      bias_initializer: default ``zeros``.
      kernel_regularizer: a penalty on ``kernel``.
      recurrent_regularizer: a penalty on ``recurrent_kernel``.
      bias_regularizer: a penalty on ``bias``.
      kernel_constraint: a projection of ``kernel`` after each optimizer update
        (``phalanx.constraints``), as Keras.
      recurrent_constraint: a projection of ``recurrent_kernel`` after each update.
      bias_constraint: a projection of ``bias`` after each update.
      dropout: the fraction of the inputs dropped in training (one mask per call).
      recurrent_dropout: the fraction of the previous state dropped in training.
      seed: an int folded into the dropout key.

    Examples:
      >>> cell = SimpleRNNCell(4)
      >>> cell.build((3,))
      (4,)
      >>> cell.count_params()
      32
    """

    def __init__(
        self,
        units: int,
        activation: Any = "tanh",
        use_bias: bool = True,
        kernel_initializer: Any = "glorot_uniform",
        recurrent_initializer: Any = "orthogonal",
        bias_initializer: Any = "zeros",
        kernel_regularizer: Any = None,
        recurrent_regularizer: Any = None,
        bias_regularizer: Any = None,
        kernel_constraint: Any = None,
        recurrent_constraint: Any = None,
        bias_constraint: Any = None,
        dropout: float = 0.0,
        recurrent_dropout: float = 0.0,
        seed: int | None = None,
        *,
        name: str | None = None,
        dtype: Any = None,
    ):
        super().__init__(
            units,
            activation=activation,
            use_bias=use_bias,
            kernel_initializer=kernel_initializer,
            recurrent_initializer=recurrent_initializer,
            bias_initializer=bias_initializer,
            kernel_regularizer=kernel_regularizer,
            recurrent_regularizer=recurrent_regularizer,
            bias_regularizer=bias_regularizer,
            kernel_constraint=kernel_constraint,
            recurrent_constraint=recurrent_constraint,
            bias_constraint=bias_constraint,
            dropout=dropout,
            recurrent_dropout=recurrent_dropout,
            seed=seed,
            name=name,
            dtype=dtype,
        )

    def step(self, x, states, dp, rec):
        kernel, recurrent, bias = self._values()
        prev = states[0]
        if dp is not None:
            x = x * dp
        h = x @ kernel
        if bias is not None:
            h = h + bias
        if rec is not None:
            prev = prev * rec
        output = self.activation_fn(h + prev @ recurrent)
        return output, [output]


class LSTMCell(_Cell):
    """Keras's ``LSTMCell`` (gates ``i, f, c, o``; states ``[h, c]``).

    Args:
      units: the size of the output and of each state.
      activation: default ``tanh``.
      recurrent_activation: the gates' activation, default ``sigmoid``.
      unit_forget_bias: start the forget gate's bias at 1 (Keras's default, True).

    The other arguments are ``SimpleRNNCell``'s.

    Examples:
      >>> cell = LSTMCell(4)
      >>> cell.build((3,))
      (4,)
      >>> cell.count_params()
      128
    """

    _gates = 4

    def __init__(
        self,
        units: int,
        activation: Any = "tanh",
        recurrent_activation: Any = "sigmoid",
        use_bias: bool = True,
        kernel_initializer: Any = "glorot_uniform",
        recurrent_initializer: Any = "orthogonal",
        bias_initializer: Any = "zeros",
        unit_forget_bias: bool = True,
        kernel_regularizer: Any = None,
        recurrent_regularizer: Any = None,
        bias_regularizer: Any = None,
        kernel_constraint: Any = None,
        recurrent_constraint: Any = None,
        bias_constraint: Any = None,
        dropout: float = 0.0,
        recurrent_dropout: float = 0.0,
        seed: int | None = None,
        *,
        name: str | None = None,
        dtype: Any = None,
    ):
        super().__init__(
            units,
            activation=activation,
            use_bias=use_bias,
            kernel_initializer=kernel_initializer,
            recurrent_initializer=recurrent_initializer,
            bias_initializer=bias_initializer,
            kernel_regularizer=kernel_regularizer,
            recurrent_regularizer=recurrent_regularizer,
            bias_regularizer=bias_regularizer,
            kernel_constraint=kernel_constraint,
            recurrent_constraint=recurrent_constraint,
            bias_constraint=bias_constraint,
            dropout=dropout,
            recurrent_dropout=recurrent_dropout,
            seed=seed,
            name=name,
            dtype=dtype,
        )
        activations.get(recurrent_activation)
        self.recurrent_activation = recurrent_activation
        self.unit_forget_bias = bool(unit_forget_bias)

    @property
    def state_size(self) -> list[int]:
        """``[units, units]``: the output ``h`` and the carry ``c``."""
        return [self.units, self.units]

    def _bias_init(self, key, shape):
        init = _initializers.get(self.bias_initializer)
        if not self.unit_forget_bias:
            return init(key, shape, jnp.float32)
        u = self.units
        k1, k2 = jax.random.split(key)
        return jnp.concatenate(
            [init(k1, (u,), jnp.float32), jnp.ones((u,)), init(k2, (2 * u,), jnp.float32)]
        )

    def step(self, x, states, dp, rec):
        kernel, recurrent, bias = self._values()
        h_prev, c_prev = states[0], states[1]
        gate = activations.get(self.recurrent_activation)
        if self._mask_count is None:  # Keras's implementation 2: fused
            if dp is not None:
                x = x * dp
            z = x @ kernel + h_prev @ recurrent
            if bias is not None:
                z = z + bias
            z_i, z_f, z_c, z_o = jnp.split(z, 4, axis=-1)
        else:  # implementation 1: a mask per gate
            xs = [x * m for m in dp] if dp is not None else [x] * 4
            hs = [h_prev * m for m in rec] if rec is not None else [h_prev] * 4
            ks, rs = jnp.split(kernel, 4, axis=1), jnp.split(recurrent, 4, axis=1)
            bs = jnp.split(bias, 4) if bias is not None else [0.0] * 4
            z_i, z_f, z_c, z_o = (xs[g] @ ks[g] + bs[g] + hs[g] @ rs[g] for g in range(4))
        i, f, o = gate(z_i), gate(z_f), gate(z_o)
        c = f * c_prev + i * self.activation_fn(z_c)
        h = o * self.activation_fn(c)
        return h, [h, c]


class GRUCell(_Cell):
    """Keras's ``GRUCell`` (gates ``z, r, h``; ``reset_after=True`` by default, as Keras 3).

    Args:
      units: the size of the output and state.
      activation: default ``tanh``.
      recurrent_activation: the gates' activation, default ``sigmoid``.
      reset_after: apply the reset gate after the recurrent matmul (Keras's and
        cuDNN's default); the bias is then ``(2, 3 * units)``.

    The other arguments are ``SimpleRNNCell``'s.

    Examples:
      >>> cell = GRUCell(4)
      >>> cell.build((3,))
      (4,)
      >>> cell.count_params()
      108
    """

    _gates = 3

    def __init__(
        self,
        units: int,
        activation: Any = "tanh",
        recurrent_activation: Any = "sigmoid",
        use_bias: bool = True,
        kernel_initializer: Any = "glorot_uniform",
        recurrent_initializer: Any = "orthogonal",
        bias_initializer: Any = "zeros",
        kernel_regularizer: Any = None,
        recurrent_regularizer: Any = None,
        bias_regularizer: Any = None,
        kernel_constraint: Any = None,
        recurrent_constraint: Any = None,
        bias_constraint: Any = None,
        dropout: float = 0.0,
        recurrent_dropout: float = 0.0,
        reset_after: bool = True,
        seed: int | None = None,
        *,
        name: str | None = None,
        dtype: Any = None,
    ):
        super().__init__(
            units,
            activation=activation,
            use_bias=use_bias,
            kernel_initializer=kernel_initializer,
            recurrent_initializer=recurrent_initializer,
            bias_initializer=bias_initializer,
            kernel_regularizer=kernel_regularizer,
            recurrent_regularizer=recurrent_regularizer,
            bias_regularizer=bias_regularizer,
            kernel_constraint=kernel_constraint,
            recurrent_constraint=recurrent_constraint,
            bias_constraint=bias_constraint,
            dropout=dropout,
            recurrent_dropout=recurrent_dropout,
            seed=seed,
            name=name,
            dtype=dtype,
        )
        activations.get(recurrent_activation)
        self.recurrent_activation = recurrent_activation
        self.reset_after = bool(reset_after)

    def _bias_shape(self):
        return (2, 3 * self.units) if self.reset_after else (3 * self.units,)

    def step(self, x, states, dp, rec):
        kernel, recurrent, bias = self._values()
        h_prev = states[0]
        u = self.units
        gate = activations.get(self.recurrent_activation)
        in_bias, rec_bias = None, None
        if bias is not None:
            in_bias, rec_bias = (bias[0], bias[1]) if self.reset_after else (bias, None)
        if self._mask_count is None:
            xs, hs = [x * dp if dp is not None else x] * 3, [h_prev] * 3
        else:
            xs = [x * m for m in dp] if dp is not None else [x] * 3
            hs = [h_prev * m for m in rec] if rec is not None else [h_prev] * 3
        x_z, x_r, x_h = (xs[g] @ kernel[:, g * u : (g + 1) * u] for g in range(3))
        if in_bias is not None:
            x_z, x_r, x_h = x_z + in_bias[:u], x_r + in_bias[u : 2 * u], x_h + in_bias[2 * u :]
        r_z = hs[0] @ recurrent[:, :u]
        r_r = hs[1] @ recurrent[:, u : 2 * u]
        if rec_bias is not None:
            r_z, r_r = r_z + rec_bias[:u], r_r + rec_bias[u : 2 * u]
        z, r = gate(x_z + r_z), gate(x_r + r_r)
        if self.reset_after:
            r_h = hs[2] @ recurrent[:, 2 * u :]
            if rec_bias is not None:
                r_h = r_h + rec_bias[2 * u :]
            r_h = r * r_h
        else:
            r_h = (r * hs[2]) @ recurrent[:, 2 * u :]
        hh = self.activation_fn(x_h + r_h)
        h = z * h_prev + (1 - z) * hh
        return h, [h]
