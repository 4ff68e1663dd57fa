"""Keras 3's recurrent layers on ``lax.scan``: ``RNN``, ``SimpleRNN``, ``LSTM``, ``GRU``,
``Bidirectional``.

As Keras 3's JAX backend (``backend.rnn``): a masked step keeps the previous
state and repeats the previous output (zeros with ``zero_output_for_mask``, as
``Bidirectional`` sets for sequences), ``go_backwards`` returns the sequence in
processing order, ``unroll=True`` is a Python loop. The cells are in
`._recurrent_cells` (``ConvLSTMCell`` in `._conv_lstm`). Shapes given to
``build`` are per example: ``(timesteps, features)``, or ``(timesteps, *spatial,
channels)`` for a cell whose ``step_rank`` is above 1 (its ``step_shapes`` give
the output and state shapes; masks broadcast over them); sequences of any
length are accepted once built.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx

from .. import regularizers
from ..errors import LayerArgumentError, NotBuiltError
from ._layer import Layer, Shape, format_shape, snake_case
from ._recurrent_cells import GRUCell, LSTMCell, SimpleRNNCell, _Cell

_MERGE_MODES = ("sum", "mul", "ave", "concat", None)


class RNNState(nnx.Variable):
    """The carried states of a ``stateful=True`` recurrent layer (not weights, not trained)."""


# -- the loop ---------------------------------------------------------------------------


def _like(x: jax.Array, state: jax.Array) -> jax.Array:
    """``state`` plus zeros of ``x``'s kind: under shard_map a carry must vary over
    replicas as ``x`` does."""
    zeros = jnp.zeros_like(x.reshape(x.shape[0], -1)[:, 0])
    return zeros.reshape((-1,) + (1,) * (state.ndim - 1)) + state


def _keep(m_t: jax.Array, new: jax.Array, old: jax.Array) -> jax.Array:
    """``new`` where the step's mask ``m_t`` (batch,) is True, else ``old``."""
    return jnp.where(m_t.reshape(m_t.shape + (1,) * (new.ndim - 1)), new, old)


def _state_list(cell: Layer) -> list[int]:
    size = cell.state_size
    return list(size) if isinstance(size, list | tuple) else [size]


class RNN(Layer):
    """Keras's ``RNN``: runs a cell over the time axis of ``(batch, timesteps, features)``.

    The loop is one ``lax.scan`` (``unroll=True``: a Python loop, as Keras).

    Args:
      cell: a cell layer (``LSTMCell(32)``, or one's own with ``state_size`` and
        ``call(inputs, states, *, training, rngs)``).
      return_sequences: return every step's output ``(batch, timesteps, units)``
        instead of the last one.
      return_state: also return the final states: ``[output, *states]``.
      go_backwards: run the sequence from its end; returned sequences are in
        that order, as Keras.
      stateful: keep the final states of a batch as the next call's initial
        ones (each batch continues the sequences of the previous one); the
        batch size must stay the same. ``reset_states()`` sets them to zero.
      unroll: unroll the loop (short sequences).
      zero_output_for_mask: masked steps output zeros instead of the previous output.
      activity_regularizer: a penalty on the layer's output.

    Call arguments: ``layer(x, initial_state=None, mask=None, training=...)``;
    ``mask`` is ``(batch, timesteps)`` booleans, False for padding.

    Examples:
      >>> import jax.numpy as jnp
      >>> layer = RNN(SimpleRNNCell(4), return_sequences=True)
      >>> layer(jnp.ones((2, 5, 3))).shape
      (2, 5, 4)
    """

    supports_masking = True

    def __init__(
        self,
        cell: Layer,
        return_sequences: bool = False,
        return_state: bool = False,
        go_backwards: bool = False,
        stateful: bool = False,
        unroll: bool = False,
        zero_output_for_mask: bool = False,
        *,
        activity_regularizer: Any = None,
        name: str | None = None,
        input_shape: Any = None,
        dtype: Any = None,
    ):
        super().__init__(name=name, input_shape=input_shape, dtype=dtype)
        if isinstance(cell, list | tuple):
            raise LayerArgumentError(
                "RNN(cell=[...]): stacked cells (StackedRNNCells) are not supported by "
                "phalanx; stack RNN layers with return_sequences=True instead."
            )
        if not isinstance(cell, Layer) or not hasattr(cell, "state_size"):
            raise LayerArgumentError(
                f"RNN needs a cell: a phalanx Layer with a state_size attribute and "
                f"call(inputs, states, *, training, rngs); got {type(cell).__name__}. "
                "E.g. RNN(layers.LSTMCell(32))."
            )
        self.cell = cell
        self.return_sequences = bool(return_sequences)
        self.return_state = bool(return_state)
        self.go_backwards = bool(go_backwards)
        self.stateful = bool(stateful)
        self.unroll = bool(unroll)
        self.zero_output_for_mask = bool(zero_output_for_mask)
        self.activity_regularizer = regularizers.get(activity_regularizer)
        self.states = nnx.data(None)

    # -- shapes ---------------------------------------------------------------------
    @property
    def state_size(self) -> list[int]:
        """The cell's state sizes, as a list."""
        return _state_list(self.cell)

    def _step_shapes(self, step_shape: Shape) -> tuple[Shape, list[Shape]]:
        """``(output shape, state shapes)`` of one step, per example, for input ``step_shape``.

        A cell with ``step_shapes`` (``ConvLSTMCell``) says it; otherwise the output
        is ``(output_size,)`` and each state ``(size,)``.
        """
        own = getattr(self.cell, "step_shapes", None)
        if own is not None:
            return own(tuple(step_shape))
        output = getattr(self.cell, "output_size", None) or self.state_size[0]
        return (output,), [(s,) for s in self.state_size]

    def compute_output_shape(self, input_shape: Shape) -> Any:
        step, states = self._step_shapes(input_shape[1:])
        out = (input_shape[0], *step) if self.return_sequences else step
        if self.return_state:
            return [out, *states]
        return out

    #: the input's layout, said when its rank is wrong
    _layout = "(batch, timesteps, features)"
    _rank_hint = "Give each step a feature axis, e.g. x[..., None]."

    def _check_input_shape(self, input_shape: Shape) -> None:
        rank = 1 + getattr(self.cell, "step_rank", 1)
        self._require_rank(input_shape, rank, self._layout, self._rank_hint)
        self._require_known(input_shape, [-1], "feature axis")

    def check_input(self, x: Any) -> None:
        """Checks rank and the per-step shape; sequences of any length are accepted, as Keras."""
        built = self.built_input_shape
        if x.ndim != len(built) + 1 or tuple(x.shape[2:]) != tuple(built[1:]):
            raise self._error(
                f"was built for inputs of shape {format_shape(built)}, received "
                f"{format_shape(tuple(x.shape[1:]), x.shape[0] if x.ndim else None)}."
            )

    def _build(self, input_shape: Shape, rngs: nnx.Rngs) -> None:
        if not self.cell.built:
            if self.cell.name is None:
                self.cell.name = snake_case(type(self.cell).__name__)
            self.cell._build_example(tuple(input_shape[1:]), rngs)

    # -- states ---------------------------------------------------------------------
    def get_initial_state(self, batch_size: int) -> list[jax.Array]:
        """Zero states (or the cell's ``get_initial_state``) for ``batch_size`` sequences."""
        own = getattr(self.cell, "get_initial_state", None)
        if own is not None:
            states = own(batch_size)
            return list(states) if isinstance(states, list | tuple) else [states]
        return [jnp.zeros((batch_size, s), self.dtype or jnp.float32) for s in self.state_size]

    def reset_states(self, states: Any = None) -> None:
        """Sets a stateful layer's states to zero (or to ``states``)."""
        if not self.stateful:
            raise AttributeError(f"Layer '{self.name}' is not stateful (stateful=False).")
        if self.states is None:
            return
        held = self.states.get_value()
        values = [jnp.zeros_like(s) for s in held] if states is None else states
        values = list(values) if isinstance(values, list | tuple) else [values]
        self.states.set_value([jnp.asarray(v) for v in values])

    reset_state = reset_states

    def _stateful_initial(self, x: jax.Array) -> list[jax.Array]:
        batch = x.shape[0]
        if self.states is None:
            if isinstance(x, jax.core.Tracer):
                raise NotBuiltError(
                    f"Layer '{self.name}' (stateful=True) creates its states for the batch size "
                    "of its first call, which must happen outside jit: call the model once on "
                    "a batch (model(x[:batch_size])) before fit."
                )
            self.states = RNNState(self.get_initial_state(batch))
        held = self.states.get_value()
        if held[0].shape[0] != batch:
            raise self._error(
                f"is stateful with states for batches of {held[0].shape[0]}, and received a "
                f"batch of {batch}. Keep the batch size fixed (drop_remainder=True), or call "
                "reset_states() after rebuilding."
            )
        return list(held)

    # -- the call -------------------------------------------------------------------
    def call(self, x, initial_state=None, *, training, rngs, mask=None):
        x = self._cast(x)
        batch = x.shape[0]
        if initial_state is None:
            states = self._stateful_initial(x) if self.stateful else None
            states = states or self.get_initial_state(batch)
        else:
            states = self._given_states(initial_state)
        states = [_like(x, jnp.asarray(s).astype(x.dtype)) for s in states]
        masks = (None, None)
        if isinstance(self.cell, _Cell):
            masks = self.cell.dropout_masks(x[:, 0], states[0], training, rngs)
        last, outputs, final = self._loop(x, states, mask, training, rngs, masks)
        if self.stateful:
            self.states.set_value([jax.lax.stop_gradient(s) for s in final])
        output = outputs if self.return_sequences else last
        if self.return_state:
            return [output, *final]
        return output

    def _given_states(self, initial_state: Any) -> list[jax.Array]:
        states = list(initial_state) if isinstance(initial_state, list | tuple) else [initial_state]
        if len(states) != len(self.state_size):
            raise self._error(
                f"has {len(self.state_size)} state(s) of sizes {self.state_size}, and received "
                f"initial_state with {len(states)} tensor(s)."
            )
        shapes = self._step_shapes(self.built_input_shape[1:])[1]
        for s, shape in zip(states, shapes, strict=True):
            if tuple(jnp.shape(s)[1:]) != tuple(shape) or jnp.ndim(s) != len(shape) + 1:
                raise self._error(
                    f"expects initial states of shape {format_shape(tuple(shape))}, received "
                    f"{tuple(jnp.shape(s))}."
                )
        return states

    def _step_fn(self, training, rngs, masks):
        cell = self.cell
        if isinstance(cell, _Cell):

            def step(x_t, states):
                return cell.step(cell._cast(x_t), list(states), *masks)

        else:

            def step(x_t, states):
                out, new = cell(x_t, list(states), training=training, rngs=rngs)
                return out, (list(new) if isinstance(new, list | tuple) else [new])

        return step

    def _loop(self, x, states, mask, training, rngs, masks):
        """Keras's ``backend.rnn`` (JAX): ``(last_output, outputs, final_states)``."""
        step = self._step_fn(training, rngs, masks)
        xs = jnp.swapaxes(x, 0, 1)
        m = None
        if mask is not None:
            m = jnp.swapaxes(jnp.asarray(mask).astype(bool).reshape(x.shape[:2]), 0, 1)
        if self.unroll:
            return self._unrolled(step, xs, states, m)
        if m is None:

            def body(carry, x_t):
                out, new = step(x_t, carry)
                return new, out

            scan_xs = xs
        else:

            def body(carry, inputs):
                x_t, m_t = inputs
                out, new = step(x_t, carry)
                prev = jnp.zeros_like(out) if self.zero_output_for_mask else carry[0]
                out = _keep(m_t, out, prev)
                new = [_keep(m_t, n, s) for n, s in zip(new, carry, strict=True)]
                return new, out

            scan_xs = (xs, m)
        final, outputs = jax.lax.scan(body, list(states), scan_xs, reverse=self.go_backwards)
        if self.go_backwards:
            outputs = jnp.flip(outputs, axis=0)
        return outputs[-1], jnp.swapaxes(outputs, 0, 1), list(final)

    def _unrolled(self, step, xs, states, m):
        order = range(xs.shape[0] - 1, -1, -1) if self.go_backwards else range(xs.shape[0])
        outputs: list = []
        for t in order:
            out, new = step(xs[t], states)
            if m is not None:
                prev = outputs[-1] if outputs else jnp.zeros_like(out)
                out = _keep(m[t], out, prev)
                new = [_keep(m[t], n, s) for n, s in zip(new, states, strict=True)]
            outputs.append(out)
            states = new
        return outputs[-1], jnp.stack(outputs, axis=1), list(states)

    # -- Keras's introspection ----------------------------------------------------------
    def _keras_weight_groups(self) -> list[tuple[str, int]]:
        """Where Keras 3's ``.weights.h5`` keeps the arrays: under the cell's group."""
        return [("cell/", len(self.get_weights()))]

    @property
    def uses_rng(self) -> bool:
        """True when the cell draws dropout masks in training."""
        return bool(getattr(self.cell, "uses_rng", False))

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The output mask: the input mask for ``return_sequences``, else None."""
        output_mask = mask if self.return_sequences else None
        if self.return_state:
            return [output_mask] + [None] * len(self.state_size)
        return output_mask

    def get_config(self) -> dict:
        config = super().get_config()
        config.pop("states", None)
        config["cell"] = {"class_name": type(self.cell).__name__, "config": self.cell.get_config()}
        return config

    @classmethod
    def from_config(cls, config: dict) -> RNN:
        """Rebuilds the layer from `get_config` (the cell by its phalanx class name)."""
        config = dict(config)
        config.pop("trainable", None)
        cell = config.pop("cell")
        cell_cls = _CELLS[cell["class_name"]]
        return cls(_cell_from_config(cell_cls, cell["config"]), **config)


def _cell_from_config(cell_cls: type, config: dict) -> Layer:
    config = dict(config)
    trainable = config.pop("trainable", True)
    cell = cell_cls(**config)
    cell.trainable = trainable
    return cell


_LAYER_KEYS = (
    "return_sequences",
    "return_state",
    "go_backwards",
    "stateful",
    "unroll",
)


class _CellLayer(RNN):
    """``SimpleRNN``/``LSTM``/``GRU``: an ``RNN`` around the cell of the same arguments."""

    _cell_class: type = _Cell

    def __init__(self, cell_args: dict, layer_args: dict):
        name, dtype = layer_args.pop("name"), layer_args.get("dtype")
        cell = self._cell_class(
            **cell_args, dtype=dtype, name=snake_case(self._cell_class.__name__)
        )
        super().__init__(cell, name=name, **layer_args)

    def __getattr__(self, name: str) -> Any:
        # Keras's layer.units, layer.dropout, ... read the cell's arguments.
        if name in _CELL_ARGUMENTS:
            cell = self.__dict__.get("cell")
            if cell is not None and hasattr(cell, name):
                return getattr(cell, name)
        return super().__getattr__(name)

    def get_config(self) -> dict:
        config = Layer.get_config(self)
        config.pop("states", None)
        cell_config = self.cell.get_config()
        for key in ("name", "trainable", "dtype"):
            cell_config.pop(key, None)
        return {**config, **cell_config}

    @classmethod
    def from_config(cls, config: dict) -> _CellLayer:
        """Rebuilds the layer from `get_config`."""
        config = dict(config)
        trainable = config.pop("trainable", True)
        config.pop("zero_output_for_mask", None)
        layer = cls(**config)
        layer.trainable = trainable
        return layer


_CELL_ARGUMENTS = frozenset(
    (
        "units",
        "activation",
        "recurrent_activation",
        "use_bias",
        "kernel_initializer",
        "recurrent_initializer",
        "bias_initializer",
        "unit_forget_bias",
        "kernel_regularizer",
        "recurrent_regularizer",
        "bias_regularizer",
        "dropout",
        "recurrent_dropout",
        "reset_after",
        "seed",
        # ConvLSTM's
        "filters",
        "kernel_size",
        "strides",
        "padding",
        "data_format",
        "dilation_rate",
    )
)


def _check_cudnn(layer: str, use_cudnn: Any) -> None:
    if use_cudnn not in ("auto", True, False):
        raise LayerArgumentError(
            f"{layer}: use_cudnn must be 'auto', True or False, got {use_cudnn!r}."
        )
    if use_cudnn is True:
        raise LayerArgumentError(
            f"{layer}: use_cudnn=True asks for cuDNN's kernel, which phalanx (XLA) does not "
            "have; use_cudnn='auto' (the default) runs the same numerics on lax.scan."
        )


def _split_args(local: dict, cell_keys: Sequence[str]) -> tuple[dict, dict]:
    cell_args = {k: local[k] for k in cell_keys}
    layer_args = {k: local[k] for k in _LAYER_KEYS}
    layer_args.update(
        name=local["name"],
        dtype=local["dtype"],
        input_shape=local["input_shape"],
        activity_regularizer=local["activity_regularizer"],
    )
    return cell_args, layer_args


_COMMON_CELL_KEYS = (
    "units",
    "activation",
    "use_bias",
    "kernel_initializer",
    "recurrent_initializer",
    "bias_initializer",
    "kernel_regularizer",
    "recurrent_regularizer",
    "bias_regularizer",
    "kernel_constraint",
    "recurrent_constraint",
    "bias_constraint",
    "dropout",
    "recurrent_dropout",
    "seed",
)


class SimpleRNN(_CellLayer):
    """Keras's ``SimpleRNN``: ``RNN(SimpleRNNCell(...))`` with the cell's arguments.

    Args: those of `SimpleRNNCell` and of `RNN`.

    Examples:
      >>> import jax.numpy as jnp
      >>> SimpleRNN(4)(jnp.ones((2, 5, 3))).shape
      (2, 4)
    """

    _cell_class = SimpleRNNCell

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
        activity_regularizer: Any = None,
        kernel_constraint: Any = None,
        recurrent_constraint: Any = None,
        bias_constraint: Any = None,
        dropout: float = 0.0,
        recurrent_dropout: float = 0.0,
        return_sequences: bool = False,
        return_state: bool = False,
        go_backwards: bool = False,
        stateful: bool = False,
        unroll: bool = False,
        seed: int | None = None,
        *,
        name: str | None = None,
        input_shape: Any = None,
        dtype: Any = None,
    ):
        super().__init__(*_split_args(locals(), _COMMON_CELL_KEYS))


class LSTM(_CellLayer):
    """Keras's ``LSTM``: ``RNN(LSTMCell(...))``; ``return_state`` gives ``[output, h, c]``.

    Args: those of `LSTMCell` and of `RNN`; ``use_cudnn`` is
    ``'auto'`` or False (XLA has no cuDNN kernel; True raises).

    Examples:
      >>> import jax.numpy as jnp
      >>> out, h, c = LSTM(4, return_state=True)(jnp.ones((2, 5, 3)))
      >>> out.shape, c.shape
      ((2, 4), (2, 4))
    """

    _cell_class = LSTMCell

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
        activity_regularizer: Any = None,
        kernel_constraint: Any = None,
        recurrent_constraint: Any = None,
        bias_constraint: Any = None,
        dropout: float = 0.0,
        recurrent_dropout: float = 0.0,
        seed: int | None = None,
        return_sequences: bool = False,
        return_state: bool = False,
        go_backwards: bool = False,
        stateful: bool = False,
        unroll: bool = False,
        use_cudnn: Any = "auto",
        *,
        name: str | None = None,
        input_shape: Any = None,
        dtype: Any = None,
    ):
        _check_cudnn("LSTM", use_cudnn)
        keys = (*_COMMON_CELL_KEYS, "recurrent_activation", "unit_forget_bias")
        super().__init__(*_split_args(locals(), keys))
        self.use_cudnn = use_cudnn


class GRU(_CellLayer):
    """Keras's ``GRU``: ``RNN(GRUCell(...))``, ``reset_after=True`` by default as Keras 3.

    Args: those of `GRUCell` and of `RNN`; ``use_cudnn`` as `LSTM`.

    Examples:
      >>> import jax.numpy as jnp
      >>> GRU(4, return_sequences=True)(jnp.ones((2, 5, 3))).shape
      (2, 5, 4)
    """

    _cell_class = GRUCell

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
        activity_regularizer: Any = None,
        kernel_constraint: Any = None,
        recurrent_constraint: Any = None,
        bias_constraint: Any = None,
        dropout: float = 0.0,
        recurrent_dropout: float = 0.0,
        seed: int | None = None,
        return_sequences: bool = False,
        return_state: bool = False,
        go_backwards: bool = False,
        stateful: bool = False,
        unroll: bool = False,
        reset_after: bool = True,
        use_cudnn: Any = "auto",
        *,
        name: str | None = None,
        input_shape: Any = None,
        dtype: Any = None,
    ):
        _check_cudnn("GRU", use_cudnn)
        keys = (*_COMMON_CELL_KEYS, "recurrent_activation", "reset_after")
        super().__init__(*_split_args(locals(), keys))
        self.use_cudnn = use_cudnn


_CELLS = {c.__name__: c for c in (SimpleRNNCell, LSTMCell, GRUCell)}


# -- Bidirectional ----------------------------------------------------------------------


def _copy_rnn(layer: RNN, *, name: str, go_backwards: bool) -> RNN:
    config = layer.get_config()
    config.update(name=name, go_backwards=go_backwards)
    return type(layer).from_config(config)


class Bidirectional(Layer):
    """Keras's ``Bidirectional``: a recurrent layer run forwards and backwards, outputs merged.

    Args:
      layer: an unbuilt recurrent layer (``LSTM(32, return_sequences=True)``); a
        copy named ``forward_<name>`` runs forwards, and one named
        ``backward_<name>`` with ``go_backwards`` flipped runs backwards.
      merge_mode: ``'concat'`` (default), ``'sum'``, ``'mul'``, ``'ave'`` or None
        (a list of the two outputs).
      backward_layer: the backward layer to use instead of the copy.

    As Keras, ``initial_state`` holds the forward states then the backward ones,
    ``return_state`` returns ``[output, *forward_states, *backward_states]``, the
    backward sequence is flipped back to the input's order, and with
    ``return_sequences`` masked steps output zeros.

    Examples:
      >>> import jax.numpy as jnp
      >>> Bidirectional(GRU(4, return_sequences=True))(jnp.ones((2, 5, 3))).shape
      (2, 5, 8)
    """

    supports_masking = True

    def __init__(
        self,
        layer: RNN,
        merge_mode: str | None = "concat",
        weights: Any = None,
        backward_layer: RNN | None = None,
        *,
        name: str | None = None,
        input_shape: Any = None,
    ):
        super().__init__(name=name, input_shape=input_shape)
        if not isinstance(layer, RNN):
            raise LayerArgumentError(
                f"Bidirectional wraps a recurrent layer (LSTM, GRU, SimpleRNN, RNN, ConvLSTM2D, "
                "...), got "
                f"{type(layer).__name__}."
            )
        if merge_mode not in _MERGE_MODES:
            raise LayerArgumentError(
                f"Bidirectional merge_mode must be one of 'sum', 'mul', 'ave', 'concat' or "
                f"None, got {merge_mode!r}."
            )
        if weights is not None:
            raise LayerArgumentError(
                "Bidirectional(weights=...) is not supported by phalanx; call "
                "set_weights(...) once the layer is built."
            )
        base = layer.name or snake_case(type(layer).__name__)
        forward = _copy_rnn(
            layer, name=f"forward_{base.removeprefix('forward_')}", go_backwards=layer.go_backwards
        )
        if backward_layer is None:
            backward_layer = _copy_rnn(
                layer,
                name=f"backward_{base.removeprefix('backward_')}",
                go_backwards=not layer.go_backwards,
            )
        elif not isinstance(backward_layer, RNN):
            raise LayerArgumentError(
                f"Bidirectional backward_layer must be a recurrent layer, got "
                f"{type(backward_layer).__name__}."
            )
        # A list, so the weights come forward first, as Keras's (nnx sorts attribute names).
        self.directions = nnx.List([forward, backward_layer])
        self._verify()
        for sub in (self.forward_layer, self.backward_layer):
            sub.zero_output_for_mask = sub.return_sequences
        self.merge_mode = merge_mode
        self.return_sequences = layer.return_sequences
        self.return_state = layer.return_state
        self.stateful = layer.stateful

    @property
    def forward_layer(self) -> RNN:
        """The layer run forwards."""
        return self.directions[0]

    @property
    def backward_layer(self) -> RNN:
        """The layer run backwards."""
        return self.directions[1]

    def _verify(self) -> None:
        fwd, bwd = self.forward_layer, self.backward_layer
        if fwd.go_backwards == bwd.go_backwards:
            raise LayerArgumentError(
                "Bidirectional: the forward and backward layers must have different "
                f"go_backwards, got {fwd.go_backwards} for both."
            )
        for attr in ("stateful", "return_sequences", "return_state"):
            if getattr(fwd, attr) != getattr(bwd, attr):
                raise LayerArgumentError(
                    f"Bidirectional: the forward and backward layers must have the same {attr}, "
                    f"got {getattr(fwd, attr)} and {getattr(bwd, attr)}."
                )

    def _keras_weight_groups(self) -> list[tuple[str, int]]:
        """Keras 3's ``.weights.h5`` groups: ``forward_layer/cell/``, ``backward_layer/cell/``."""
        return [
            (f"{where}/{sub}", count)
            for where, layer in (
                ("forward_layer", self.forward_layer),
                ("backward_layer", self.backward_layer),
            )
            for sub, count in layer._keras_weight_groups()
        ]

    @property
    def uses_rng(self) -> bool:
        """True when either direction draws dropout masks in training."""
        return self.forward_layer.uses_rng or self.backward_layer.uses_rng

    def _check_input_shape(self, input_shape: Shape) -> None:
        self.forward_layer._check_input_shape(input_shape)

    def check_input(self, x: Any) -> None:
        """Checks rank and feature size, as the wrapped layer."""
        self.forward_layer.check_input(x)

    def compute_output_shape(self, input_shape: Shape) -> Any:
        out = self.forward_layer.compute_output_shape(input_shape)
        states = []
        if self.return_state:
            out, states = out[0], out[1:]
        if self.merge_mode == "concat":
            out = (*out[:-1], out[-1] * 2)
        outs = [out, out] if self.merge_mode is None else [out]
        if self.return_state:
            return [*outs, *states, *states]
        return outs if self.merge_mode is None else out

    def _build(self, input_shape: Shape, rngs: nnx.Rngs) -> None:
        for sub in (self.forward_layer, self.backward_layer):
            if not sub.built:
                sub._build_example(input_shape, rngs)

    def call(self, x, initial_state=None, *, training, rngs, mask=None):
        fwd_state = bwd_state = None
        if initial_state is not None:
            half = len(initial_state) // 2
            fwd_state, bwd_state = list(initial_state[:half]), list(initial_state[half:])
        key_f = key_b = rngs
        if rngs is not None and not isinstance(rngs, nnx.Rngs):
            key_f, key_b = jax.random.fold_in(rngs, 0), jax.random.fold_in(rngs, 1)
        y = self.forward_layer(x, initial_state=fwd_state, mask=mask, training=training, rngs=key_f)
        y_rev = self.backward_layer(
            x, initial_state=bwd_state, mask=mask, training=training, rngs=key_b
        )
        states: list = []
        if self.return_state:
            states = [*y[1:], *y_rev[1:]]
            y, y_rev = y[0], y_rev[0]
        if self.return_sequences:
            y_rev = jnp.flip(y_rev, axis=1)
        output = _merge(self.merge_mode, y, y_rev)
        if self.return_state:
            return [*output, *states] if self.merge_mode is None else [output, *states]
        return output

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The output mask: the input mask for ``return_sequences``, else None."""
        output_mask = mask if self.return_sequences else None
        if self.merge_mode is None:
            return [output_mask, output_mask]
        return output_mask

    def get_config(self) -> dict:
        config = {"name": self.name, "trainable": self.trainable, "merge_mode": self.merge_mode}
        config["layer"] = {
            "class_name": type(self.forward_layer).__name__,
            "config": self.forward_layer.get_config(),
        }
        config["backward_layer"] = {
            "class_name": type(self.backward_layer).__name__,
            "config": self.backward_layer.get_config(),
        }
        return config

    @classmethod
    def from_config(cls, config: dict) -> Bidirectional:
        """Rebuilds the layer from `get_config`."""
        layers = {c.__name__: c for c in _rnn_classes(RNN)}

        def rebuild(entry):
            sub = dict(entry["config"])
            sub.pop("zero_output_for_mask", None)
            return layers[entry["class_name"]].from_config(sub)

        layer = rebuild(config["layer"])
        backward = rebuild(config["backward_layer"]) if config.get("backward_layer") else None
        out = cls(
            layer,
            merge_mode=config.get("merge_mode", "concat"),
            backward_layer=backward,
            name=config.get("name"),
        )
        out.trainable = config.get("trainable", True)
        return out


def _rnn_classes(cls: type) -> list[type]:
    """``cls`` and its subclasses (``ConvLSTM2D`` lives in its own module)."""
    return [cls, *(c for sub in cls.__subclasses__() for c in _rnn_classes(sub))]


def _merge(mode: str | None, y: jax.Array, y_rev: jax.Array) -> Any:
    if mode == "concat":
        return jnp.concatenate([y, y_rev], axis=-1)
    if mode == "sum":
        return y + y_rev
    if mode == "ave":
        return (y + y_rev) / 2
    if mode == "mul":
        return y * y_rev
    return [y, y_rev]
