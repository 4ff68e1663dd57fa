"""Keras's ``MultiHeadAttention`` on flax.nnx, with Keras's weights, names and numerics.

As Keras 3 (``keras/src/layers/attention/multi_head_attention.py``): the
query, key and value are projected by einsum-dense sub-layers named
``query``, ``key``, ``value`` (kernels ``(dim, num_heads, key_dim)``, biases
``(num_heads, key_dim)``); the query is scaled by ``1/sqrt(key_dim)``; the
scores ``(batch, heads, T, S)`` go through a softmax whose masked positions
are set to ``-1e9`` first; dropout (``dropout=``) acts on the attention
probabilities in training; ``attention_output`` (kernel ``(num_heads,
value_dim, output_dim)``) maps the heads back. ``get_weights()`` lists the
eight arrays in Keras's order, so weights move between the two with
``set_weights``.

Only the default ``attention_axes`` (the sequence axis) is supported.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx

from .. import regularizers
from ..errors import LayerArgumentError
from . import _args as _layer_args
from . import _initializers
from ._args import positive_int
from ._einsum_dense import _kernel_initializer
from ._layer import Layer, Shape, format_shape, normalize_shape
from ._regularization import _key


def _refuse_unsupported(sliding_window: Any, flash_attention: Any, use_gate: Any) -> None:
    """Raises for Keras 3's arguments phalanx's attention does not implement."""
    given = {
        "sliding_window": (sliding_window, sliding_window is not None),
        "flash_attention": (flash_attention, bool(flash_attention)),
        "use_gate": (use_gate, bool(use_gate)),
    }
    for name, (value, set_) in given.items():
        if set_:
            raise LayerArgumentError(
                f"MultiHeadAttention: {name}={value!r} is not supported by phalanx (Keras 3 "
                f"has it); leave {name} at its default, or write the attention as a layer of "
                "your own."
            )


class _Projection(Layer):
    """An einsum-dense projection: contracts the last ``contract`` input axes with a kernel.

    ``kernel`` has shape ``input_shape[-contract:] + out_dims``, ``bias`` ``out_dims``.
    A variance-scaling initializer counts its fans as Keras's ``EinsumDense``: the
    contracted axes in, the others out (``(dim, heads, key_dim)``: ``dim`` and
    ``heads * key_dim``), not the convolution rule of a kernel of more than two axes.
    """

    _weight_regularizer_paths = (
        ("kernel_regularizer", ("kernel",)),
        ("bias_regularizer", ("bias",)),
    )
    _weight_constraint_paths = (
        ("kernel_constraint", ("kernel",)),
        ("bias_constraint", ("bias",)),
    )

    def __init__(self, out_dims, contract, use_bias, kernel_initializer, bias_initializer, name):
        super().__init__(name=name)
        self.out_dims = tuple(out_dims)
        self.contract = contract
        self.use_bias = use_bias
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer
        self.kernel = nnx.data(None)
        self.bias = nnx.data(None)

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        return (*input_shape[: len(input_shape) - self.contract], *self.out_dims)

    def _build(self, input_shape: Shape, rngs: nnx.Rngs) -> None:
        shape = (*input_shape[len(input_shape) - self.contract :], *self.out_dims)
        in_axes = list(range(self.contract))
        out_axes = list(range(self.contract, len(shape)))
        init = _kernel_initializer(self.kernel_initializer, in_axes, out_axes)
        self.kernel = nnx.Param(init(rngs.params(), shape, jnp.float32))
        if self.use_bias:
            bias_init = _initializers.get(self.bias_initializer)
            self.bias = nnx.Param(bias_init(rngs.params(), self.out_dims, jnp.float32))

    def call(self, x, *, training, rngs):
        x = self._cast(x)
        y = jnp.tensordot(x, self.kernel[...].astype(x.dtype), self.contract)
        if self.use_bias:
            y = y + self.bias[...].astype(y.dtype)
        return y


class MultiHeadAttention(Layer):
    """Multi-head attention, as ``keras.layers.MultiHeadAttention``.

    Call it as ``mha(query, value, key=None, attention_mask=None,
    return_attention_scores=False, training=False, use_causal_mask=False)``;
    ``query`` is ``(batch, T, dim)``, ``value``/``key`` ``(batch, S, dim)``
    (``key`` defaults to ``value``); self-attention is ``mha(x, x)``.

    Args:
      num_heads: the number of attention heads.
      key_dim: the size of each head for query and key.
      value_dim: the size of each head for value; default ``key_dim``.
      dropout: the dropout rate of the attention probabilities (in training).
      use_bias: whether the projections have biases.
      output_shape: the output's last size; default the query's.
      attention_axes: None or ``(1,)``: attention over the sequence axis (the only
        one supported).
      kernel_initializer: default ``glorot_uniform``; a variance-scaling one counts
        each kernel's fans as Keras's ``EinsumDense`` (``(dim, heads, key_dim)``: ``dim``
        in, ``heads * key_dim`` out).
      bias_initializer: default ``zeros``.
      seed: an int folded into the dropout key.
      kernel_regularizer: a penalty on each projection's kernel (query, key, value,
        output), keyword-only.
      bias_regularizer: a penalty on each projection's bias, keyword-only.
      activity_regularizer: a penalty on the layer's output(s), divided by the batch size.
      kernel_constraint: a projection of each projection's kernel (query, key, value,
        output) after every optimizer update, as Keras 3; keyword-only.
      bias_constraint: the same for each projection's bias; keyword-only.
      sliding_window: Keras's local attention window: only None (refused otherwise).
      flash_attention: Keras's choice of a fused kernel: None or False (True refused).
      use_gate: Keras's gated attention: only False (refused otherwise).
      name: the layer's name.

    Examples:
      >>> import jax.numpy as jnp
      >>> mha = MultiHeadAttention(num_heads=2, key_dim=4)
      >>> mha(jnp.ones((1, 3, 8)), jnp.ones((1, 5, 8))).shape
      (1, 3, 8)
      >>> [w.path for w in mha.weights][:2]
      ['multi_head_attention/query/kernel', 'multi_head_attention/query/bias']
    """

    def __init__(
        self,
        num_heads: int,
        key_dim: int,
        value_dim: int | None = None,
        dropout: float = 0.0,
        use_bias: bool = True,
        output_shape: Any = None,
        attention_axes: Any = None,
        kernel_initializer: Any = "glorot_uniform",
        bias_initializer: Any = "zeros",
        seed: int | None = None,
        *,
        kernel_regularizer: Any = None,
        bias_regularizer: Any = None,
        activity_regularizer: Any = None,
        kernel_constraint: Any = None,
        bias_constraint: Any = None,
        sliding_window: Any = None,
        flash_attention: Any = None,
        use_gate: bool = False,
        name: str | None = None,
        dtype: Any = None,
    ):
        super().__init__(name=name, dtype=dtype)
        _refuse_unsupported(sliding_window, flash_attention, use_gate)
        example = "MultiHeadAttention(num_heads=4, key_dim=64)"
        num_heads = positive_int("MultiHeadAttention", "num_heads", num_heads, example)
        key_dim = positive_int("MultiHeadAttention", "key_dim", key_dim, example)
        if value_dim is not None:
            value_dim = positive_int("MultiHeadAttention", "value_dim", value_dim, example)
        dropout = _layer_args.rate("MultiHeadAttention", "dropout", dropout, one=True)
        _initializers.get(kernel_initializer), _initializers.get(bias_initializer)
        if isinstance(attention_axes, int):
            attention_axes = (attention_axes,)
        if attention_axes is not None and tuple(attention_axes) not in ((1,), (-2,)):
            raise LayerArgumentError(
                f"attention_axes={attention_axes!r} is not supported: phalanx's "
                "MultiHeadAttention attends over the sequence axis (attention_axes=None, or "
                "(1,) as Keras records it for (batch, sequence, features) inputs)."
            )
        self.num_heads = int(num_heads)
        self.key_dim = int(key_dim)
        self.value_dim = int(value_dim) if value_dim is not None else self.key_dim
        self.dropout = float(dropout)
        self.use_bias = bool(use_bias)
        self.output_dim = None if output_shape is None else _last(output_shape)
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer
        self.seed = seed
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.activity_regularizer = regularizers.get(activity_regularizer)
        _layer_args.keep_constraints(
            self, kernel_constraint=kernel_constraint, bias_constraint=bias_constraint
        )
        self.use_gate = False  # Keras 3.15's config records both
        self.sliding_window = None
        self.projections = nnx.data(None)

    @property
    def uses_rng(self) -> bool:
        """True when attention dropout is on."""
        return self.dropout > 0.0

    def __call__(self, query: Any, value: Any, key: Any = None, **kwargs: Any) -> Any:
        """``mha(query, value, key=None, attention_mask=None, ...)``; see the class docstring."""
        return super().__call__(query, value, key, **kwargs)

    # -- shapes ----------------------------------------------------------------------
    def _build_shapes(self, query, value, key=None, **kwargs):
        key = value if key is None else key
        return [tuple(query.shape[1:]), tuple(value.shape[1:]), tuple(key.shape[1:])]

    def _normalize_input_shape(self, input_shape: Any) -> list[Shape]:
        if not isinstance(input_shape, list | tuple) or len(input_shape) != 3:
            raise self._error(
                "builds from [query_shape, value_shape, key_shape]; call it as "
                "mha(query, value) instead."
            )
        return [normalize_shape(s) for s in input_shape]

    def _check_input_shape(self, input_shape: list[Shape]) -> None:
        q, v, k = input_shape
        for what, shape in (("query", q), ("value", v), ("key", k)):
            if len(shape) != 2:
                raise self._error(
                    f"expects {what} of rank 3 (batch, sequence, features), received shape "
                    f"{format_shape(shape)}."
                )
            self._require_known(shape, [-1], f"{what} feature axis")
        if v[0] is not None and k[0] is not None and v[0] != k[0]:
            raise self._error(
                f"needs key and value of one length, got {format_shape(k)} and {format_shape(v)}."
            )

    def compute_output_shape(self, input_shape: list[Shape]) -> Shape:
        q = input_shape[0]
        return (*q[:-1], self.output_dim or q[-1])

    def _symbolic_output_shape(self, input_shape, kwargs) -> Any:
        out = self.compute_output_shape(input_shape)
        if kwargs.get("return_attention_scores"):
            return [out, (self.num_heads, input_shape[0][0], input_shape[1][0])]
        return out

    def check_input(self, x: Any) -> None:
        if x.ndim != 3 or x.shape[-1] != self.built_input_shape[0][-1]:
            raise self._error(
                f"was built for queries of shape {format_shape(self.built_input_shape[0])}, "
                f"received {format_shape(tuple(x.shape[1:]), x.shape[0])}."
            )

    def _build(self, input_shape: list[Shape], rngs: nnx.Rngs) -> None:
        q, v, k = input_shape
        common = dict(
            use_bias=self.use_bias,
            kernel_initializer=self.kernel_initializer,
            bias_initializer=self.bias_initializer,
        )
        heads = self.num_heads
        query = _Projection((heads, self.key_dim), 1, name="query", **common)
        key = _Projection((heads, self.key_dim), 1, name="key", **common)
        value = _Projection((heads, self.value_dim), 1, name="value", **common)
        out = _Projection((self.output_dim or q[-1],), 2, name="attention_output", **common)
        for projection in (query, key, value, out):
            projection.kernel_regularizer = self.kernel_regularizer
            projection.bias_regularizer = self.bias_regularizer
            projection.kernel_constraint = self.kernel_constraint
            projection.bias_constraint = self.bias_constraint
        query._build_example(q, rngs)
        key._build_example(k, rngs)
        value._build_example(v, rngs)
        out._build_example((q[0], heads, self.value_dim), rngs)
        self.projections = nnx.List([query, key, value, out])

    # -- calling ---------------------------------------------------------------------
    def call(
        self,
        query,
        value,
        key=None,
        *,
        training,
        rngs,
        attention_mask=None,
        return_attention_scores=False,
        use_causal_mask=False,
        query_mask=None,
        value_mask=None,
        key_mask=None,
    ):
        key = value if key is None else key
        q_proj, k_proj, v_proj, out_proj = self.projections
        # .call: the projections take any sequence length (the layer checks the features).
        q = q_proj.call(query, training=training, rngs=None)
        q = q * (1.0 / math.sqrt(float(self.key_dim)))
        k = k_proj.call(key, training=training, rngs=None)
        v = v_proj.call(value, training=training, rngs=None)
        scores = jnp.einsum("aecd,abcd->acbe", k, q)  # (batch, heads, T, S)
        mask = _attention_mask(
            scores.shape, attention_mask, use_causal_mask, query_mask, value_mask, key_mask
        )
        if mask is not None:
            scores = jnp.where(mask, scores, jnp.asarray(-1e9, scores.dtype))
        probs = jax.nn.softmax(scores, axis=-1)
        dropped = probs
        if training and self.dropout > 0.0:
            dropped = attention_dropout(self, probs, rngs)
        out = out_proj.call(jnp.einsum("acbe,aecd->abcd", dropped, v), training=training, rngs=None)
        return [out, probs] if return_attention_scores else out


def attention_dropout(layer: Any, probs: jax.Array, rngs: Any) -> jax.Array:
    """``probs`` with Keras's attention dropout at ``layer.dropout`` (inverted: the kept
    weights scaled by ``1 / (1 - dropout)``), its key from ``rngs`` with ``layer.seed`` folded
    in (as the dropout layers'). Raises ``ValueError`` without a key (training needs one)."""
    rngs = _key(layer, rngs, layer.seed)  # the dropout layers' key, with its error
    if layer.dropout >= 1.0:  # everything dropped, as Keras (no 0 / 0 in the gradient)
        return jnp.zeros_like(probs)
    keep = jax.random.bernoulli(rngs, 1.0 - layer.dropout, probs.shape)
    return jnp.where(keep, probs / (1.0 - layer.dropout), 0.0)


def _attention_mask(shape, attention_mask, causal, query_mask, value_mask, key_mask):
    """Keras's combined boolean mask, broadcastable to the scores ``(batch, heads, T, S)``."""
    _, _, t, s = shape
    mask = None

    def both(a, b):
        return b if a is None else a & b

    if query_mask is not None:
        mask = both(mask, jnp.asarray(query_mask).astype(bool)[:, None, :, None])
    for m in (value_mask, key_mask):
        if m is not None:
            mask = both(mask, jnp.asarray(m).astype(bool)[:, None, None, :])
    if attention_mask is not None:
        m = jnp.asarray(attention_mask)
        m = m > 0.5 if m.dtype != jnp.bool_ else m
        mask = both(mask, m[:, None] if m.ndim == 3 else m)
    if causal:
        mask = both(mask, jnp.tril(jnp.ones((t, s), bool))[None, None])
    return mask


def _last(output_shape: Any) -> int:
    if isinstance(output_shape, int):
        return output_shape
    shape = tuple(output_shape)
    if len(shape) != 1:
        raise ValueError(
            f"output_shape={output_shape!r}: phalanx's MultiHeadAttention takes one output "
            "size (an int)."
        )
    return int(shape[0])
