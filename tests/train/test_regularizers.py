"""Regularizers as Keras: the penalties, ``model.losses``, fit's loss on 1/2/8 replicas, custom loops."""

import flax.nnx as nnx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import phalanx
from phalanx import layers
from phalanx.errors import RegularizerError, ReplicaContextError

FEATURES, HIDDEN, CLASSES = 6, 8, 3
LR = 0.1
L2_HIDDEN, L1_ACTIVITY, L1_BIAS = 0.01, 0.001, 0.02


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, FEATURES)).astype(np.float32)
    y = rng.integers(0, CLASSES, 40).astype(np.int32)
    return x, y


def _model(strategy=None, *, steps_per_execution=1):
    """The user's model: a regularized kernel, an activity penalty, a name-given one."""
    strategy = strategy or phalanx.OneDeviceStrategy()
    with strategy.scope():
        model = phalanx.Sequential(
            [
                layers.Input(shape=(FEATURES,)),
                layers.Dense(
                    HIDDEN,
                    activation="relu",
                    kernel_regularizer=phalanx.regularizers.L2(L2_HIDDEN),
                    activity_regularizer=phalanx.regularizers.L1(L1_ACTIVITY),
                ),
                layers.Dense(
                    CLASSES,
                    kernel_regularizer="l2",
                    bias_regularizer=phalanx.regularizers.l1(L1_BIAS),
                ),
            ]
        )
        model.compile(
            optimizer=phalanx.optimizers.SGD(learning_rate=LR),
            loss=phalanx.losses.SparseCategoricalCrossentropy(from_logits=True),
            steps_per_execution=steps_per_execution,
        )
    return model


def _hand_loss(w, xb, yb):
    """One device, by hand: mean cross-entropy + the penalties, as Keras defines them.

    Returns (loss, logged): the loss differentiated, and Keras's logged loss times the batch.
    """
    k1, b1, k2, b2 = w
    hidden = jax.nn.relu(xb @ k1 + b1)
    logits = hidden @ k2 + b2
    data = optax.softmax_cross_entropy_with_integer_labels(logits, yb).mean()
    activity = L1_ACTIVITY * jnp.sum(jnp.abs(hidden)) / len(xb)  # Keras: / batch size
    weights = L2_HIDDEN * jnp.sum(k1**2) + 0.01 * jnp.sum(k2**2) + L1_BIAS * jnp.sum(jnp.abs(b2))
    loss = data + activity + weights
    return loss, loss * len(xb)


def _hand_fit(w, x, y, batch, epochs):
    """SGD over the batches in order (the last one short); Keras's per-epoch logged loss."""
    grad = jax.jit(jax.value_and_grad(_hand_loss, has_aux=True))
    history = []
    for _ in range(epochs):
        total = 0.0
        for start in range(0, len(x), batch):
            (_, logged), g = grad(w, x[start : start + batch], y[start : start + batch])
            w = [wi - LR * gi for wi, gi in zip(w, g, strict=True)]
            total += float(logged)
        history.append(total / len(x))
    return w, history


# -- the regularizers -------------------------------------------------------------------


def test_regularizers_have_keras_defaults_values_and_configs():
    r = phalanx.regularizers
    assert (r.L1().l1, r.L2().l2) == (0.01, 0.01)
    assert r.L1L2().get_config() == {"l1": 0.0, "l2": 0.0}
    x = jnp.array([[1.0, -2.0], [3.0, 0.0]])
    assert float(r.L1(0.1)(x)) == pytest.approx(0.6)
    assert float(r.L2(0.1)(x)) == pytest.approx(1.4)
    assert float(r.L1L2(l1=0.1, l2=0.1)(x)) == pytest.approx(2.0)
    assert r.get("l1") == r.L1(0.01) and r.get("l2") == r.L2(0.01)
    assert r.get("l1_l2") == r.L1L2() and r.get("L2") == r.L2()
    for reg in (r.L1(0.3), r.L2(0.003), r.L1L2(l1=0.1, l2=0.2)):
        assert type(reg).from_config(reg.get_config()) == reg
        assert r.deserialize(r.serialize(reg)) == reg
    assert float(r.get(lambda w: jnp.sum(w))(x)) == 2.0


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: phalanx.regularizers.get("l3"), "Unknown regularizer 'l3'.*'l1', 'l2', 'l1_l2'"),
        (lambda: phalanx.regularizers.L2(-0.01), "l2: expected a non-negative float.*-0.01"),
        (lambda: phalanx.regularizers.L1(float("nan")), "l1: expected a non-negative float"),
        (lambda: phalanx.regularizers.L1L2(l1="big"), "l1: expected a non-negative float"),
        (lambda: layers.Dense(3, kernel_regularizer="l3"), "Unknown regularizer 'l3'"),
        (lambda: layers.Dense(3, kernel_regularizer=0.01), "Could not interpret regularizer"),
        (lambda: phalanx.regularizers.get({"config": {}}), "needs 'class_name'"),
    ],
)
def test_bad_regularizers_raise_saying_what_to_use(make, match):
    with pytest.raises(RegularizerError, match=match):
        make()


def test_model_losses_are_keras_values(data):
    x, _ = data
    model = _model()
    k1, b1, k2, b2 = model.get_weights()
    weight_terms = [L2_HIDDEN * np.sum(k1**2), 0.01 * np.sum(k2**2), L1_BIAS * np.sum(np.abs(b2))]
    np.testing.assert_allclose(model.losses, weight_terms, rtol=1e-6)
    model(x[:5])  # an eager call adds the activity penalty of its output, / its batch
    activity = L1_ACTIVITY * np.sum(np.maximum(x[:5] @ k1 + b1, 0)) / 5
    np.testing.assert_allclose(model.losses, [activity, *weight_terms], rtol=1e-5)
    assert model.layers[1].losses == model.losses[2:]


def test_other_layers_take_their_keras_regularizers():
    conv = layers.Conv2D(2, 3, kernel_regularizer="l2", bias_regularizer="l1")
    conv.build((5, 5, 1))
    emb = layers.Embedding(10, 4, embeddings_regularizer=phalanx.regularizers.L1(0.5))
    emb.build((3,))
    norm = layers.BatchNormalization(gamma_regularizer="l2", beta_regularizer="l1")
    norm.build((4,))
    kernel = np.asarray(conv.conv.kernel.get_value())
    np.testing.assert_allclose(conv.losses, [0.01 * np.sum(kernel**2), 0.0], rtol=1e-6)
    table = np.asarray(emb.embed.embedding.get_value())
    np.testing.assert_allclose(emb.losses, [0.5 * np.sum(np.abs(table))], rtol=1e-6)
    np.testing.assert_allclose(norm.losses, [0.04, 0.0], rtol=1e-6)  # gamma = ones
    conv1d = layers.Conv1D(2, 3, kernel_regularizer="l2", activity_regularizer="l1")
    out = conv1d(jnp.ones((2, 5, 1)))
    kernel = np.asarray(conv1d.conv.kernel.get_value())
    np.testing.assert_allclose(
        conv1d.losses, [0.01 * np.sum(np.abs(out)) / 2, 0.01 * np.sum(kernel**2)], rtol=1e-5
    )


def test_multi_head_attention_penalizes_every_projection_and_all_outputs():
    mha = layers.MultiHeadAttention(
        2, 4, kernel_regularizer="l2", bias_regularizer="l1", activity_regularizer="l1"
    )
    query, value = jnp.ones((2, 3, 8)), jnp.full((2, 5, 8), 0.5)
    out, scores = mha(query, value, return_attention_scores=True)
    kernels = [np.asarray(p.kernel.get_value()) for p in mha.projections]
    activity = 0.01 * (np.sum(np.abs(out)) + np.sum(np.abs(scores))) / 2
    expected = [activity] + [x for k in kernels for x in (0.01 * np.sum(k**2), 0.0)]
    np.testing.assert_allclose(mha.losses, expected, rtol=1e-5)


# -- fit ---------------------------------------------------------------------------------


def test_fit_adds_the_penalties_as_a_hand_written_jax_loop(data):
    x, y = data
    model = _model()
    w0 = [jnp.asarray(w) for w in model.get_weights()]
    history = model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    w_hand, loss_hand = _hand_fit(w0, x, y, batch=16, epochs=2)
    for got, want in zip(model.get_weights(), w_hand, strict=True):
        np.testing.assert_allclose(got, want, atol=1e-5)
    np.testing.assert_allclose(history.history["loss"], loss_hand, rtol=1e-5)
    # evaluate's loss includes the penalties too, as Keras's.
    loss, _ = _hand_loss(w_hand, x, y)
    assert model.evaluate(x, y, batch_size=16, verbose=0) == pytest.approx(float(loss), rel=1e-5)


@pytest.fixture(scope="module")
def one_device_run(data):
    x, y = data
    model = _model()
    weights0 = model.get_weights()
    history = model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    evaluation = model.evaluate(x, y, batch_size=16, verbose=0)
    return weights0, model.get_weights(), history.history["loss"], evaluation


@pytest.mark.parametrize("replicas", [1, 2, 8])
def test_replicas_train_as_one_device(data, one_device_run, replicas):
    """A short last batch (8 of 16; padding on some replicas) included."""
    x, y = data
    weights0, weights1, losses1, evaluation1 = one_device_run
    strategy = phalanx.MirroredStrategy(devices=jax.devices()[:replicas])
    model = _model(strategy, steps_per_execution=2)
    model.set_weights(weights0)
    history = model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    for got, want in zip(model.get_weights(), weights1, strict=True):
        np.testing.assert_allclose(got, want, atol=1e-5)
    np.testing.assert_allclose(history.history["loss"], losses1, rtol=1e-5)
    assert model.evaluate(x, y, batch_size=16, verbose=0) == pytest.approx(evaluation1, rel=1e-5)


# -- custom loops -------------------------------------------------------------------------


def test_scale_regularization_loss_divides_by_the_replicas():
    strategy = phalanx.MirroredStrategy(devices=jax.devices()[:4])

    def fn():
        return phalanx.scale_regularization_loss([jnp.float32(1.0), jnp.float32(3.0)])

    assert float(strategy.experimental_local_results(strategy.run(fn))[0]) == 1.0
    assert float(phalanx.scale_regularization_loss(2.0)) == 2.0  # no strategy: 1 replica
    with strategy.scope(), pytest.raises(ReplicaContextError, match="given to strategy.run"):
        phalanx.scale_regularization_loss(2.0)


def test_custom_loop_with_scale_regularization_loss_equals_fit(data):
    """The seeds' loop: compute_average_loss + scale_regularization_loss(sum(model.losses))."""
    x, y = data
    x, y = x[:32], y[:32]
    strategy = phalanx.MirroredStrategy(devices=jax.devices()[:4])
    global_batch = 16
    fitted = _model(strategy)
    weights0 = fitted.get_weights()
    fitted.fit(x, y, batch_size=global_batch, epochs=2, shuffle=False, verbose=0)

    with strategy.scope():
        model = _model(strategy)
        model.set_weights(weights0)
        graphdef, params = nnx.split(model.module, nnx.Param)
        params = strategy.replicate(params)
        optimizer = optax.sgd(LR)
        opt_state = strategy.replicate(optimizer.init(params))

    def compute_loss(labels, predictions, model_losses):
        per_example_loss = optax.softmax_cross_entropy_with_integer_labels(predictions, labels)
        loss = phalanx.compute_average_loss(per_example_loss, global_batch_size=global_batch)
        if model_losses:
            loss += phalanx.scale_regularization_loss(sum(model_losses))
        return loss

    def train_step(params, opt_state, images, labels):
        def loss_fn(p):
            net = nnx.merge(graphdef, p)
            predictions = net(images, training=True)
            return compute_loss(labels, predictions, net.losses)

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    for _ in range(2):
        for start in range(0, len(x), global_batch):
            batch = strategy.shard_batch(
                (x[start : start + global_batch], y[start : start + global_batch])
            )
            params, opt_state, _ = strategy.run(train_step, args=(params, opt_state, *batch))
    nnx.update(model.module, jax.device_get(params))
    for got, want in zip(model.get_weights(), fitted.get_weights(), strict=True):
        np.testing.assert_allclose(got, want, atol=1e-5)


def test_a_frozen_layer_adds_no_weight_penalty():
    """Keras penalizes trainable weights only."""
    model = _model()
    _, _, k2, b2 = model.get_weights()
    model.layers[0].trainable = False
    np.testing.assert_allclose(
        model.losses, [0.01 * np.sum(k2**2), L1_BIAS * np.sum(np.abs(b2))], rtol=1e-6
    )


def test_a_functional_model_collects_and_trains_its_layers_penalties(data):
    x, y = data

    def make(replicas):
        strategy = phalanx.MirroredStrategy(devices=jax.devices()[:replicas])
        with strategy.scope():
            inputs = phalanx.Input(shape=(FEATURES,))
            hidden = layers.Dense(HIDDEN, activation="relu", activity_regularizer="l1")(inputs)
            outputs = layers.Dense(CLASSES, kernel_regularizer="l2")(hidden)
            model = phalanx.Model(inputs, outputs)
            model.compile(
                optimizer=phalanx.optimizers.SGD(learning_rate=LR),
                loss=phalanx.losses.SparseCategoricalCrossentropy(from_logits=True),
            )
        return model

    one, two = make(1), make(2)
    two.set_weights(one.get_weights())
    assert len(one.losses) == 1  # the kernel's; the activity penalty comes with a call
    one(x[:4])
    assert len(one.losses) == 2
    histories = [m.fit(x, y, batch_size=16, shuffle=False, verbose=0) for m in (one, two)]
    np.testing.assert_allclose(histories[0].history["loss"], histories[1].history["loss"], 1e-5)
    for a, b in zip(one.get_weights(), two.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)
