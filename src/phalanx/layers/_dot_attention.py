"""Keras's ``Attention`` (Luong, dot-product) and ``AdditiveAttention`` (Bahdanau) on flax.nnx.

As Keras 3 (``keras/src/layers/attention/attention.py``, ``additive_attention.py``):
called on ``[query, value]`` or ``[query, value, key]`` (``key`` defaults to
``value``), the scores ``(batch, Tq, Tv)`` are ``query @ key^T`` (``"dot"``) or
``sum(tanh(query + key))`` (``"concat"``, and the additive layer's
``sum(scale * tanh(query + key))``); a value mask (``mask=[query_mask,
value_mask]``) and the causal mask subtract ``1e9`` (``65504`` in float16) from the
masked scores before the softmax; dropout acts on the attention distribution in
training; the output is ``distribution @ value``, zero where the query mask is
False, and its mask is the query mask.

Weights, as Keras's: ``Attention(use_scale=True)`` has a scalar ``scale`` (ones),
``score_mode="concat"`` a scalar ``concat_score_weight`` (ones), listed in that
order; ``AdditiveAttention(use_scale=True)`` a ``scale`` of the query's feature
size (glorot uniform).
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx

from ..errors import LayerArgumentError
from . import _args as _layer_args
from ._attention import attention_dropout
from ._layer import Layer, Shape, format_shape, normalize_shape, shapes_match


class Attention(Layer):
    """Dot-product (Luong-style) attention, as ``keras.layers.Attention``.

    Call it as ``attention([query, value])`` or ``attention([query, value,
    key])`` with ``query`` ``(batch, Tq, dim)`` and ``value``/``key`` ``(batch, Tv,
    dim)``; options ``mask=[query_mask, value_mask]`` (booleans ``(batch, Tq)``,
    ``(batch, Tv)``), ``return_attention_scores`` (then it returns ``(output,
    scores)``, the scores after masking, softmax and dropout), ``use_causal_mask``
    and ``training``. The output is ``(batch, Tq, value_dim)``.

    Args:
      use_scale: learn a scalar ``scale`` multiplying the scores.
      score_mode: ``"dot"`` (``query @ key^T``) or ``"concat"``
        (``concat_score_weight * sum(tanh(query + key))``).
      dropout: the fraction of the attention distribution dropped in training.
      seed: an int folded into the dropout key given at call time.
      name: the layer's name.
      dtype: the computation dtype or a mixed-precision policy.

    Raises:
      LayerArgumentError: ``score_mode`` is neither ``"dot"`` nor ``"concat"``, or
        ``dropout`` is not a fraction.

    Examples:
      >>> import jax.numpy as jnp
      >>> query = jnp.array([[[1.0, 0.0], [0.0, 1.0]]])
      >>> value = jnp.array([[[1.0, 1.0], [1.0, 1.0]]])
      >>> out, scores = Attention()(
      ...     [query, value], mask=[jnp.array([[True, False]])] * 2,
      ...     return_attention_scores=True)
      >>> out.tolist(), scores.tolist()
      ([[[1.0, 1.0], [0.0, 0.0]]], [[[1.0, 0.0], [1.0, 0.0]]])
    """

    supports_masking = True
    _score_modes = ("dot", "concat")

    def __init__(
        self,
        use_scale: bool = False,
        score_mode: str = "dot",
        dropout: float = 0.0,
        seed: int | None = None,
        *,
        name: str | None = None,
        dtype: Any = None,
    ):
        super().__init__(name=name, dtype=dtype)
        kind = type(self).__name__
        if score_mode not in self._score_modes:
            raise LayerArgumentError(
                "Invalid value for argument score_mode. Expected one of {'dot', 'concat'}. "
                f"Received: score_mode={score_mode!r}; e.g. {kind}(score_mode='dot')."
            )
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
            raise LayerArgumentError(
                f"{kind} seed must be an int or None, got {seed!r} ({type(seed).__name__})."
            )
        self.use_scale = bool(use_scale)
        self.score_mode = score_mode
        self.dropout = _layer_args.rate(kind, "dropout", dropout, one=True)
        self.seed = seed
        self.scale = nnx.data(None)
        self.concat_score_weight = nnx.data(None)

    @property
    def uses_rng(self) -> bool:
        """True when dropout on the attention distribution is on."""
        return self.dropout > 0.0

    def get_config(self) -> dict:
        """Keras's config: name, trainable, dtype, use_scale, score_mode, dropout, seed."""
        config = super().get_config()
        for key in ("scale", "concat_score_weight"):
            config.pop(key, None)
        return config

    # -- inputs ------------------------------------------------------------------------
    def _check_list(self, inputs: Any, what: str = "inputs") -> None:
        kind = type(self).__name__
        if not isinstance(inputs, list | tuple):
            raise self._error(
                f"must be called on a list of inputs, namely [query, value] or [query, value, "
                f"key]. Received: {what} of type {type(inputs).__name__}."
            )
        if not 2 <= len(inputs) <= 3:
            raise self._error(
                f"accepts inputs list of length 2 or 3, namely [query, value] or [query, value, "
                f"key]. Received length: {len(inputs)}; call it as {kind}()([query, value])."
            )

    def _input_shape_of(self, x: Any) -> list[Shape]:
        self._check_list(x)
        return [tuple(a.shape[1:]) for a in x]

    def _normalize_input_shape(self, input_shape: Any) -> list[Shape]:
        self._check_list(input_shape, "input_shape")
        return [normalize_shape(s) for s in input_shape]

    def _check_input_shape(self, input_shape: list[Shape]) -> None:
        self._check_list(input_shape, "input_shape")
        q, v = input_shape[0], input_shape[1]
        k = input_shape[2] if len(input_shape) > 2 else v
        for what, shape in (("query", q), ("value", v), ("key", k)):
            if len(shape) < 2:
                raise self._error(
                    f"expects {what} of rank 3 or more (batch, ..., sequence, features), "
                    f"received shape {format_shape(shape)}."
                )
        if not shapes_match(k[:-1], v[:-1]):
            raise self._error(
                f"needs key and value of one length, got {format_shape(k)} and {format_shape(v)}."
            )
        if None not in (q[-1], k[-1]) and q[-1] != k[-1]:
            raise self._error(
                f"needs query and key of one feature size, got {format_shape(q)} and "
                f"{format_shape(k)}."
            )

    def check_input(self, x: Any) -> None:
        shapes = self._input_shape_of(x)
        built = self.built_input_shape
        if len(shapes) != len(built) or not all(
            shapes_match(e[-1:], r[-1:]) and len(e) == len(r)
            for e, r in zip(built, shapes, strict=True)
        ):
            raise self._error(f"was built for inputs of shapes {built}, received {shapes}.")

    def compute_output_shape(self, input_shape: list[Shape]) -> Shape:
        return (*input_shape[0][:-1], input_shape[1][-1])

    def _symbolic_output_shape(self, input_shape, kwargs) -> Any:
        out = self.compute_output_shape(input_shape)
        if kwargs.get("return_attention_scores"):
            key = input_shape[2] if len(input_shape) > 2 else input_shape[1]
            return [out, (*input_shape[0][:-1], key[-2])]
        return out

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The output's mask: the query mask (None without one), as Keras."""
        _check_mask(self, mask)
        if mask is None or mask[0] is None:
            return None
        return jnp.asarray(mask[0])

    # -- weights and scores ------------------------------------------------------------
    def _build(self, input_shape: list[Shape], rngs: nnx.Rngs) -> None:
        if self.use_scale:
            self.scale = nnx.Param(jnp.ones((), jnp.float32))
        if self.score_mode == "concat":
            self.concat_score_weight = nnx.Param(jnp.ones((), jnp.float32))

    def _scores(self, query, key):
        if self.score_mode == "dot":
            scores = jnp.matmul(query, jnp.swapaxes(key, -2, -1))
            if self.use_scale:
                scores = scores * self.scale[...].astype(scores.dtype)
            return scores
        q, k = query[..., :, None, :], key[..., None, :, :]
        summed = q + k
        if self.use_scale:
            summed = self.scale[...].astype(summed.dtype) * summed
        weight = self.concat_score_weight[...].astype(query.dtype)
        return weight * jnp.sum(jnp.tanh(summed), axis=-1)

    # -- calling -----------------------------------------------------------------------
    def call(
        self,
        inputs,
        *,
        training,
        rngs,
        mask=None,
        return_attention_scores=False,
        use_causal_mask=False,
    ):
        _check_mask(self, mask)
        q, v = self._cast(inputs[0]), self._cast(inputs[1])
        k = self._cast(inputs[2]) if len(inputs) > 2 else v
        q_mask = mask[0] if mask else None
        v_mask = mask[1] if mask else None
        scores = self._scores(q, k)
        scores_mask = _score_mask(scores.shape, v_mask, use_causal_mask)
        if scores_mask is not None:
            big = 65504.0 if scores.dtype == jnp.float16 else 1.0e9
            scores = jnp.where(scores_mask, scores, scores - jnp.asarray(big, scores.dtype))
        weights = jax.nn.softmax(scores, axis=-1)
        if training and self.dropout > 0.0:
            weights = attention_dropout(self, weights, rngs)
        out = jnp.matmul(weights, v)
        if q_mask is not None:
            out = jnp.where(jnp.asarray(q_mask).astype(bool)[..., None], out, 0.0)
        return (out, weights) if return_attention_scores else out


class AdditiveAttention(Attention):
    """Additive (Bahdanau-style) attention, as ``keras.layers.AdditiveAttention``.

    Called as `Attention`; the scores are ``sum(scale * tanh(query + key))`` over
    the features, ``scale`` a learned vector of the query's feature size
    (``use_scale=True``, glorot-uniform initialized) or 1.

    Args:
      use_scale: learn the ``scale`` vector (default True, as Keras).
      dropout: the fraction of the attention distribution dropped in training.
      seed: an int folded into the dropout key given at call time.
      name: the layer's name.
      dtype: the computation dtype or a mixed-precision policy.

    Raises:
      LayerArgumentError: ``dropout`` is not a fraction.

    Examples:
      >>> import jax.numpy as jnp
      >>> layer = AdditiveAttention()
      >>> layer([jnp.ones((1, 3, 4)), jnp.ones((1, 5, 4))]).shape
      (1, 3, 4)
      >>> [w.path for w in layer.weights], layer.weights[0].shape
      (['additive_attention/scale'], (4,))
    """

    def __init__(
        self,
        use_scale: bool = True,
        dropout: float = 0.0,
        seed: int | None = None,
        *,
        name: str | None = None,
        dtype: Any = None,
    ):
        super().__init__(use_scale=use_scale, dropout=dropout, seed=seed, name=name, dtype=dtype)

    def get_config(self) -> dict:
        """Keras's config: name, trainable, dtype, use_scale, dropout, seed."""
        config = super().get_config()
        config.pop("score_mode", None)
        return config

    def _build(self, input_shape: list[Shape], rngs: nnx.Rngs) -> None:
        dim = input_shape[0][-1]
        self._require_known(input_shape[0], [-1], "query feature axis")
        if self.use_scale:
            # Keras's glorot uniform of a vector: fan in = fan out = dim.
            limit = math.sqrt(6.0 / (2 * dim))
            scale = jax.random.uniform(rngs.params(), (dim,), jnp.float32, -limit, limit)
            self.scale = nnx.Param(scale)

    def _scores(self, query, key):
        summed = jnp.tanh(query[..., :, None, :] + key[..., None, :, :])
        if self.use_scale:
            summed = self.scale[...].astype(summed.dtype) * summed
        return jnp.sum(summed, axis=-1)


def _check_mask(layer: Attention, mask: Any) -> None:
    """Keras's checks of ``mask=``: None or a list ``[query_mask, value_mask]``."""
    if mask is None:
        return
    if not isinstance(mask, list | tuple):
        raise layer._error(
            "layer mask must be a list, namely [query_mask, value_mask]. Received: mask of "
            f"type {type(mask).__name__}."
        )
    if not 2 <= len(mask) <= 3:
        raise layer._error(
            f"accepts mask list of length 2 or 3, namely [query_mask, value_mask]. Received "
            f"length: {len(mask)}."
        )


def _score_mask(shape, value_mask, causal):
    """The mask of the scores ``(..., Tq, Tv)``: the value mask and the causal one, or None."""
    mask = None
    if value_mask is not None:
        mask = jnp.asarray(value_mask).astype(bool)[..., None, :]
    if causal:
        tq, tv = shape[-2], shape[-1]
        lower = jnp.tril(jnp.ones((tq, tv), bool))
        mask = lower if mask is None else mask & lower
    return mask
