"""The recurrent layers against Keras 3 (JAX backend): same weights in, same outputs and gradients.

Each test builds the phalanx layer and Keras's with the same arguments, copies
phalanx's weights into Keras's with ``set_weights`` (so the weight order and
shapes must be Keras's), and compares outputs and the gradients of a scalar of
the outputs with respect to the input and to every weight.
"""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

os.environ.setdefault("KERAS_BACKEND", "jax")
keras = pytest.importorskip("keras")

import phalanx  # noqa: E402
from phalanx import layers  # noqa: E402
from phalanx.errors import LayerArgumentError, LayerShapeError  # noqa: E402

RNG = np.random.default_rng(0)


def _x(*shape):
    return RNG.normal(size=shape).astype(np.float32)


def _scalar(out):
    leaves = jax.tree.leaves(out)
    return sum(jnp.sum(jnp.sin(leaf) * (i + 1)) for i, leaf in enumerate(leaves))


def _ours_grads(layer, x, kwargs):
    graphdef, params, rest = nnx.split(layer, nnx.Param, ...)

    def f(p, x):
        return _scalar(nnx.merge(graphdef, p, rest)(x, **kwargs))

    grads, dx = jax.grad(f, argnums=(0, 1))(params, jnp.asarray(x))
    twin = nnx.merge(graphdef, grads, rest)  # read the gradients in Keras's weight order
    return twin.get_weights(), dx


def _keras_grads(layer, x, kwargs):
    trainable = [v.value for v in layer.trainable_variables]
    frozen = [v.value for v in layer.non_trainable_variables]

    def f(t, x):
        out, _ = layer.stateless_call(t, frozen, x, **kwargs)
        return _scalar(out)

    return jax.grad(f, argnums=(0, 1))(trainable, jnp.asarray(x))


def _same(ours, theirs, x, atol=2e-5, grads=True, **kwargs):
    """Builds both on ``x``, copies our weights into Keras's, compares outputs and gradients."""
    out = ours(x, **kwargs)
    theirs(x, **kwargs)
    weights = ours.get_weights()
    assert [w.shape for w in weights] == [tuple(w.shape) for w in theirs.weights]
    theirs.set_weights(weights)
    expected = theirs(x, **kwargs)
    out_leaves, exp_leaves = jax.tree.leaves(out), jax.tree.leaves(expected)
    assert len(out_leaves) == len(exp_leaves)
    for a, b in zip(out_leaves, exp_leaves, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=atol, rtol=1e-5)
    if grads:
        (gw, gx), (kw, kx) = _ours_grads(ours, x, kwargs), _keras_grads(theirs, x, kwargs)
        np.testing.assert_allclose(np.asarray(gx), np.asarray(kx), atol=1e-4, rtol=1e-4)
        assert len(gw) == len(kw)
        for a, b in zip(gw, kw, strict=True):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-4, rtol=1e-4)
    return out


OPTIONS = [
    {},
    dict(return_sequences=True, return_state=True, go_backwards=True),
    dict(unroll=True, return_sequences=True, return_state=True),
    dict(use_bias=False, activation="relu", go_backwards=True, unroll=True),
]


@pytest.mark.parametrize("options", OPTIONS)
@pytest.mark.parametrize("name", ["SimpleRNN", "LSTM", "GRU"])
def test_layer_matches_keras(name, options):
    x = _x(3, 5, 4)
    _same(getattr(layers, name)(6, **options), getattr(keras.layers, name)(6, **options), x)


def test_gru_reset_before_and_lstm_without_forget_bias_match_keras():
    x = _x(2, 4, 3)
    _same(layers.GRU(5, reset_after=False), keras.layers.GRU(5, reset_after=False), x)
    _same(
        layers.LSTM(5, unit_forget_bias=False, recurrent_activation="hard_sigmoid"),
        keras.layers.LSTM(5, unit_forget_bias=False, recurrent_activation="hard_sigmoid"),
        x,
    )


def test_weight_names_shapes_and_initial_bias_are_keras():
    lstm = layers.LSTM(3)
    lstm.build((5, 2))
    assert [w.path for w in lstm.weights] == [
        "lstm/lstm_cell/kernel",
        "lstm/lstm_cell/recurrent_kernel",
        "lstm/lstm_cell/bias",
    ]
    np.testing.assert_array_equal(lstm.get_weights()[2], [0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0])
    gru = layers.GRU(3)
    gru.build((5, 2))
    assert [w.shape for w in gru.get_weights()] == [(2, 9), (3, 9), (2, 9)]
    assert layers.GRU(3, use_bias=False).cell.bias is None
    # orthogonal recurrent kernel, as Keras's default
    rk = layers.SimpleRNN(4)
    rk.build((2, 3))
    q = rk.get_weights()[1]
    np.testing.assert_allclose(q @ q.T, np.eye(4), atol=1e-5)
    assert lstm.units == 3 and lstm.recurrent_activation == "sigmoid"


@pytest.mark.parametrize("name", ["SimpleRNN", "LSTM", "GRU"])
@pytest.mark.parametrize(
    "options", [dict(return_sequences=True), dict(go_backwards=True, unroll=True)]
)
def test_mask_matches_keras(name, options):
    x = _x(3, 6, 4)
    mask = np.ones((3, 6), bool)
    mask[0, 4:] = False  # padding at the end
    mask[1, :2] = False  # padding at the start
    mask[2, 3] = False  # a hole
    _same(
        getattr(layers, name)(5, return_state=True, **options),
        getattr(keras.layers, name)(5, return_state=True, **options),
        x,
        mask=mask,
    )


@pytest.mark.parametrize("name", ["SimpleRNN", "LSTM", "GRU"])
def test_initial_state_matches_keras(name):
    x = _x(2, 4, 3)
    n_states = 2 if name == "LSTM" else 1
    states = [_x(2, 5) for _ in range(n_states)]
    ours = getattr(layers, name)(5, return_sequences=True)
    theirs = getattr(keras.layers, name)(5, return_sequences=True)
    ours(x)
    theirs(x)
    theirs.set_weights(ours.get_weights())
    np.testing.assert_allclose(
        np.asarray(ours(x, initial_state=states)),
        np.asarray(theirs(x, initial_state=states)),
        atol=2e-5,
    )
    with pytest.raises(LayerShapeError, match="initial_state with 3"):
        ours(x, initial_state=states * 3 if n_states == 1 else states + states[:1])


@pytest.mark.parametrize(
    "merge_mode, options",
    [
        ("concat", dict(return_sequences=True)),
        ("mul", {}),
        (None, dict(return_sequences=True)),
        ("ave", dict(return_state=True)),
    ],
)
def test_bidirectional_matches_keras(merge_mode, options):
    x = _x(2, 5, 3)
    ours = layers.Bidirectional(layers.LSTM(4, **options), merge_mode=merge_mode)
    theirs = keras.layers.Bidirectional(keras.layers.LSTM(4, **options), merge_mode=merge_mode)
    _same(ours, theirs, x)
    assert ours.forward_layer.name == "forward_lstm" and ours.backward_layer.go_backwards


def test_bidirectional_gru_with_mask_and_initial_state_matches_keras():
    x = _x(3, 5, 3)
    mask = np.ones((3, 5), bool)
    mask[0, 3:] = False
    ours = layers.Bidirectional(layers.GRU(4, return_sequences=True))
    theirs = keras.layers.Bidirectional(keras.layers.GRU(4, return_sequences=True))
    _same(ours, theirs, x, mask=mask)
    states = [_x(3, 4), _x(3, 4)]
    np.testing.assert_allclose(
        np.asarray(ours(x, initial_state=states)),
        np.asarray(theirs(x, initial_state=states)),
        atol=2e-5,
    )


class MinimalCell(layers.Layer):
    """keras.layers.RNN's docstring cell, written as a phalanx layer."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.state_size = units

    def _build(self, input_shape, rngs):
        init = jax.nn.initializers.uniform(0.1)
        self.kernel = nnx.Param(init(rngs.params(), (input_shape[-1], self.units)))
        self.recurrent_kernel = nnx.Param(init(rngs.params(), (self.units, self.units)))

    def compute_output_shape(self, input_shape):
        return (self.units,)

    def call(self, inputs, states, *, training, rngs):
        h = inputs @ self.kernel.get_value()
        output = h + states[0] @ self.recurrent_kernel.get_value()
        return output, [output]


class KerasMinimalCell(keras.layers.Layer):
    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.state_size = units

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], self.units), name="kernel")
        self.recurrent_kernel = self.add_weight(
            shape=(self.units, self.units), name="recurrent_kernel"
        )

    def call(self, inputs, states):
        output = inputs @ self.kernel + states[0] @ self.recurrent_kernel
        return output, [output]


@pytest.mark.parametrize("cell", ["SimpleRNNCell", "LSTMCell", "GRUCell", "custom"])
def test_rnn_of_a_cell_matches_keras(cell):
    x = _x(2, 4, 3)
    if cell == "custom":
        ours_cell, their_cell = MinimalCell(5), KerasMinimalCell(5)
    else:
        ours_cell, their_cell = getattr(layers, cell)(5), getattr(keras.layers, cell)(5)
    _same(
        layers.RNN(ours_cell, return_sequences=True, return_state=True),
        keras.layers.RNN(their_cell, return_sequences=True, return_state=True),
        x,
    )


@pytest.mark.parametrize("name", ["SimpleRNNCell", "LSTMCell", "GRUCell"])
def test_cell_called_alone_matches_keras(name):
    x = _x(2, 3)
    n = 2 if name == "LSTMCell" else 1
    states = [_x(2, 4) for _ in range(n)]
    ours, theirs = getattr(layers, name)(4), getattr(keras.layers, name)(4)
    ours.build((3,))
    theirs.build((2, 3))
    theirs.set_weights(ours.get_weights())
    out, new = ours(x, states)
    k_out, k_new = theirs(x, states)
    np.testing.assert_allclose(np.asarray(out), np.asarray(k_out), atol=2e-5)
    for a, b in zip(new, k_new, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=2e-5)


@pytest.mark.parametrize("name", ["SimpleRNN", "LSTM", "GRU"])
def test_dropout_inference_is_keras_and_training_shares_the_mask_over_time(name):
    x = _x(2, 6, 3)
    options = dict(dropout=0.5, recurrent_dropout=0.3, return_sequences=True)
    ours = getattr(layers, name)(4, **options)
    _same(ours, getattr(keras.layers, name)(4, **options), x, grads=False)
    key = jax.random.key(1)
    a = ours(x, training=True, rngs=key)
    np.testing.assert_array_equal(a, ours(x, training=True, rngs=key))
    assert not np.allclose(a, ours(x, training=True, rngs=jax.random.key(2)))
    assert not np.allclose(a, ours(x))
    # Input dropout only, linear SimpleRNN without recurrence: the dropped input features are
    # the same at every step (Keras draws one mask per call).
    probe = layers.SimpleRNN(3, dropout=0.5, activation=None, return_sequences=True)
    probe.build((6, 8))
    _, rk, b = probe.get_weights()
    probe.set_weights([np.eye(8, 3, dtype=np.float32), np.zeros_like(rk), b])
    ones = np.ones((1, 6, 8), np.float32)
    out = np.asarray(probe(ones, training=True, rngs=jax.random.key(3)))
    assert set(np.unique(out).tolist()) <= {0.0, 2.0}
    np.testing.assert_array_equal(out[0], np.broadcast_to(out[0, :1], out[0].shape))


@pytest.mark.parametrize("name", ["SimpleRNN", "LSTM", "GRU"])
def test_stateful_continues_the_sequence_as_keras(name):
    x = _x(2, 6, 3)
    ours = getattr(layers, name)(4, stateful=True, return_sequences=True)
    whole = getattr(layers, name)(4, return_sequences=True)
    theirs = getattr(keras.layers, name)(4, stateful=True, return_sequences=True)
    first = ours(x[:, :3])
    whole(x)
    whole.set_weights(ours.get_weights())
    second = ours(x[:, 3:])
    np.testing.assert_allclose(
        np.concatenate([first, second], axis=1), whole(x), atol=2e-5, rtol=1e-5
    )
    theirs(x[:, :3])
    theirs.reset_states()
    theirs.set_weights(ours.get_weights())
    ours.reset_states()
    for part in (x[:, :3], x[:, 3:]):
        np.testing.assert_allclose(ours(part), theirs(part), atol=2e-5, rtol=1e-5)
    with pytest.raises(LayerShapeError, match="batches of 2, and received a batch of 3"):
        ours(_x(3, 2, 3))


def test_config_round_trip_and_keras_keys():
    for ours, theirs in [
        (layers.LSTM(7, dropout=0.25, return_sequences=True), keras.layers.LSTM(7, dropout=0.25)),
        (layers.GRU(3, reset_after=False, go_backwards=True), keras.layers.GRU(3)),
        (layers.SimpleRNN(2, activation="relu", unroll=True), keras.layers.SimpleRNN(2)),
    ]:
        config = ours.get_config()
        for key in ("units", "dropout", "recurrent_dropout", "return_sequences", "go_backwards"):
            assert key in theirs.get_config() and key in config
        again = type(ours).from_config(config)
        assert again.get_config() == config
    bi = layers.Bidirectional(layers.GRU(3, return_sequences=True), merge_mode="sum")
    again = layers.Bidirectional.from_config(bi.get_config())
    assert again.get_config() == bi.get_config()
    rnn = layers.RNN(layers.LSTMCell(4), return_state=True)
    assert layers.RNN.from_config(rnn.get_config()).get_config() == rnn.get_config()


def test_masking_matches_keras():
    x = _x(2, 5, 3)
    x[0, 3:] = 0.0
    x[1, 1] = 0.0
    ours, theirs = layers.Masking(), keras.layers.Masking()
    np.testing.assert_array_equal(ours(x), theirs(x))
    np.testing.assert_array_equal(ours.compute_mask(x), theirs.compute_mask(x))
    lstm, k_lstm = layers.LSTM(4), keras.layers.LSTM(4)
    lstm(x)
    k_lstm(x)
    k_lstm.set_weights(lstm.get_weights())
    np.testing.assert_allclose(
        lstm(ours(x), mask=ours.compute_mask(x)), k_lstm(theirs(x)), atol=2e-5
    )


def test_unsupported_arguments_and_bad_shapes_raise():
    with pytest.raises(ValueError, match="kernel_constraint=3"):
        layers.LSTM(3, kernel_constraint=3)
    with pytest.raises(LayerArgumentError, match="use_cudnn=True"):
        layers.GRU(3, use_cudnn=True)
    with pytest.raises(LayerArgumentError, match="StackedRNNCells"):
        layers.RNN([layers.LSTMCell(3), layers.LSTMCell(3)])
    with pytest.raises(LayerArgumentError, match="merge_mode"):
        layers.Bidirectional(layers.LSTM(3), merge_mode="max")
    with pytest.raises(LayerShapeError, match=r"rank 3 \(batch, timesteps, features\)"):
        layers.LSTM(3)(np.ones((2, 4), np.float32))
    lstm = layers.LSTM(3)
    lstm(np.ones((2, 4, 5), np.float32))
    assert lstm(np.ones((2, 9, 5), np.float32)).shape == (2, 3)  # any length, as Keras
    with pytest.raises(LayerShapeError, match="was built for inputs of shape"):
        lstm(np.ones((2, 4, 6), np.float32))


def _lstm_model():
    return phalanx.Sequential(
        [
            layers.Input((6,), dtype="int32"),
            layers.Embedding(20, 8),
            layers.Bidirectional(layers.LSTM(5, return_sequences=True)),
            layers.GRU(4),
            layers.Dense(3),
        ]
    )


def test_fit_eight_replicas_equal_one():
    rng = np.random.default_rng(1)
    x = rng.integers(0, 20, (64, 6)).astype(np.int32)
    y = rng.integers(0, 3, (64,)).astype(np.int32)
    results = []
    for devices in (jax.devices()[:1], jax.devices()):
        strategy = phalanx.MirroredStrategy(devices=devices)
        with strategy.scope():
            phalanx.utils.set_random_seed(3)
            model = _lstm_model()
            model.compile(
                optimizer=phalanx.optimizers.SGD(0.1),
                loss=phalanx.losses.SparseCategoricalCrossentropy(from_logits=True),
            )
        history = model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
        results.append((history.history["loss"], model.get_weights()))
    (loss_1, w_1), (loss_8, w_8) = results
    np.testing.assert_allclose(loss_1, loss_8, rtol=1e-5)
    assert loss_1[1] < loss_1[0]
    for a, b in zip(w_1, w_8, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5, rtol=1e-5)


def test_functional_model_with_states_between_layers():
    """The NMT tutorial's wiring: an encoder's final state starts the decoder."""
    enc_in, dec_in = layers.Input((5, 3)), layers.Input((4, 2))
    _, h = layers.GRU(6, return_state=True)(enc_in)
    seq = layers.GRU(6, return_sequences=True)(dec_in, initial_state=h)
    model = phalanx.Model([enc_in, dec_in], layers.Dense(2)(seq))
    out = model.predict([_x(2, 5, 3), _x(2, 4, 2)], verbose=0)
    assert out.shape == (2, 4, 2)
