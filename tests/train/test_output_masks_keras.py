"""A model output's Keras mask weighs the compiled loss and metrics, as Keras 3.

Keras 3 attaches the mask a network carries (``Embedding(mask_zero=True)``,
``Masking``, through ``LSTM(return_sequences=True)`` and ``Dense``) to its output,
and ``Loss.__call__`` / ``MeanMetricWrapper.update_state`` merge it into the sample
weights (``losses.loss.apply_mask``): the loss is ``sum(loss * sw * mask) /
sum(mask)``, an accuracy ``sum(acc * mask) / sum(mask)`` (``metrics=``) or
``sum(acc * sw * mask) / sum(sw * mask)`` (``weighted_metrics=``), in ``evaluate``
and in ``fit`` (as TensorFlow's Keras; Keras 3's JAX train step loses ``y_pred``'s mask
through ``jax.value_and_grad`` and masks only its loss). Each case builds
the same model in phalanx and Keras from the same weights (``set_weights``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import phalanx

keras = pytest.importorskip("keras")

T, VOCAB, CLASSES = 5, 10, 3


def _data(n=8, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(1, VOCAB, (n, T)).astype("int32")
    lengths = rng.integers(1, T + 1, n)
    x[np.arange(T)[None, :] >= lengths[:, None]] = 0  # padded timesteps
    y = rng.integers(0, CLASSES, (n, T)).astype("int32")
    sw = rng.uniform(0.5, 2.0, n).astype("float32")
    return x, y, sw


def _embedding_lstm(lib):
    inputs = lib.Input(shape=(T,), dtype="int32")
    h = lib.layers.Embedding(VOCAB, 4, mask_zero=True)(inputs)
    h = lib.layers.LSTM(3, return_sequences=True)(h)
    return lib.Model(inputs, lib.layers.Dense(CLASSES, activation="softmax")(h))


def _masking_gru(lib):
    return lib.Sequential(
        [
            lib.layers.Input(shape=(T, 2)),
            lib.layers.Masking(0.0),
            lib.layers.GRU(4, return_sequences=True),
            lib.layers.Dense(CLASSES, activation="softmax"),
        ]
    )


def _float_data(n=8, seed=1):
    x, y, sw = _data(n, seed)
    rng = np.random.default_rng(seed)
    feats = rng.normal(size=(n, T, 2)).astype("float32") * (x[..., None] != 0)
    return feats, y, sw


def _compile(model, lib=phalanx, **kwargs):
    model.compile(
        optimizer=kwargs.pop("optimizer", "sgd"),
        loss=kwargs.pop("loss", "sparse_categorical_crossentropy"),
        metrics=["accuracy"],
        weighted_metrics=[lib.metrics.SparseCategoricalAccuracy(name="weighted_acc")],
        **kwargs,
    )
    return model


def _pair(build, **kwargs):
    ours = _compile(build(phalanx), **kwargs)
    keras.utils.set_random_seed(0)
    theirs = _compile(build(keras), keras, **kwargs)
    ours.set_weights(theirs.get_weights())
    return ours, theirs


def _per_step(kw):
    """Keras 3's weights for phalanx's per-example ones: one per timestep (Keras 3 refuses
    a ``[batch]`` sample_weight against a ``[batch, time]`` mask: "Incompatible shapes")."""
    if not isinstance(kw, dict):
        kw = {"sample_weight": kw}
    return {k: np.repeat(v[:, None], T, axis=1) for k, v in kw.items()}


def _close(ours: dict, theirs: dict):
    assert sorted(ours) == sorted(theirs)
    for key in theirs:
        np.testing.assert_allclose(ours[key], theirs[key], rtol=2e-5, atol=1e-6, err_msg=key)


@pytest.mark.parametrize(
    "build, data", [(_embedding_lstm, _data), (_masking_gru, _float_data)], ids=["emb", "masking"]
)
@pytest.mark.parametrize("weighted", [False, True], ids=["plain", "sample_weight"])
def test_evaluate_weighs_by_the_output_mask(build, data, weighted):
    x, y, sw = data()
    ours, theirs = _pair(build)
    kw = {"sample_weight": sw} if weighted else {}
    got = ours.evaluate(x, y, batch_size=4, verbose=0, return_dict=True, **kw)
    want = theirs.evaluate(x, y, batch_size=4, verbose=0, return_dict=True, **_per_step(kw))
    _close(got, want)
    # the mask counts: not the mean over every timestep
    p = theirs.predict(x, verbose=0)
    ce = -np.log(np.take_along_axis(p, y[..., None], -1)[..., 0])
    assert abs(got["loss"] - ce[:4].mean() / 2 - ce[4:].mean() / 2) > 1e-6


@pytest.mark.parametrize(
    "build, data", [(_embedding_lstm, _data), (_masking_gru, _float_data)], ids=["emb", "masking"]
)
def test_two_sgd_steps_match_keras(build, data):
    """The weights and the loss as Keras 3's; the metrics masked as in ``evaluate`` (and
    as TensorFlow's Keras, whose ``fit`` keeps the mask on ``y_pred``: Keras 3's JAX
    train step loses it through ``jax.value_and_grad`` and counts padded timesteps)."""
    x, y, sw = data()
    ours, theirs = _pair(build)
    got = ours.fit(x, y, sample_weight=sw, batch_size=4, epochs=1, shuffle=False, verbose=0)
    losses, hits, weights, masks = [], [], [], []
    for b in (slice(0, 4), slice(4, 8)):  # Keras's fit, one batch at a time
        p = np.asarray(theirs.predict_on_batch(x[b]))
        masks.append((x[b] != 0) if x.ndim == 2 else np.any(x[b] != 0, axis=-1))
        hits.append(np.argmax(p, axis=-1) == y[b])
        weights.append(np.repeat(sw[b, None], T, axis=1))
        losses.append(theirs.train_on_batch(x[b], y[b], sample_weight=weights[-1])[0])
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    hit, w, m = (np.concatenate(v).astype(np.float64) for v in (hits, weights, masks))
    want = {
        "loss": np.mean(losses),
        "accuracy": np.sum(hit * m) / np.sum(m),
        "weighted_acc": np.sum(hit * w * m) / np.sum(w * m),
    }
    _close({k: v[0] for k, v in got.history.items()}, want)
    assert abs(want["accuracy"] - hit.mean()) > 1e-3  # the mask counts here


def test_sum_reduction_and_a_custom_loss_match_keras():
    x, y, _ = _data()

    def squared(y_true, y_pred):
        onehot = keras.ops.one_hot(keras.ops.cast(y_true, "int32"), CLASSES)
        return keras.ops.mean(keras.ops.square(onehot - y_pred), axis=-1)

    for loss in (squared, "sum"):
        if loss == "sum":
            ours_loss = phalanx.losses.SparseCategoricalCrossentropy(reduction="sum")
            their_loss = keras.losses.SparseCategoricalCrossentropy(reduction="sum")
        else:
            ours_loss = their_loss = loss
        ours = _compile(_embedding_lstm(phalanx), loss=ours_loss)
        keras.utils.set_random_seed(0)
        theirs = _compile(_embedding_lstm(keras), keras, loss=their_loss)
        ours.set_weights(theirs.get_weights())
        got = ours.evaluate(x, y, batch_size=8, verbose=0, return_dict=True)
        _close(got, theirs.evaluate(x, y, batch_size=8, verbose=0, return_dict=True))


def _fit_weights(strategy, steps_per_execution=1):
    x, y, sw = _data(16)
    keras.utils.set_random_seed(0)
    weights = _embedding_lstm(keras).get_weights()
    with strategy.scope() if strategy else _null():
        model = _compile(_embedding_lstm(phalanx), steps_per_execution=steps_per_execution)
    model.set_weights(weights)
    history = model.fit(x, y, sample_weight=sw, batch_size=8, epochs=1, shuffle=False, verbose=0)
    return model.get_weights(), {k: v[0] for k, v in history.history.items()}


class _null:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def test_two_replicas_and_steps_per_execution_equal_one_device():
    one = _fit_weights(None)
    two = _fit_weights(phalanx.distribute.MirroredStrategy(devices=jax.devices()[:2]))
    fused = _fit_weights(None, steps_per_execution=2)
    for other in (two, fused):
        for a, b in zip(one[0], other[0], strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        _close(other[1], one[1])


def _lowered(model, kind, x, y):
    adapter = model._adapter(x, y, None, batch_size=8, steps=None, shuffle=False, class_weight=None)
    ex = next(iter(model._prepared(adapter, 0, where=None)))
    return model._program(kind, ex.data is not None).lower(model._state, ex.data, ex.xs, ex.steps)


def _plain_call(module, x, return_logits, **kwargs):
    """The step's call before output masks: no record, no mask."""
    if return_logits:
        return (*module(x, return_logits=True, **kwargs), None)
    return module(x, **kwargs), None, None


@pytest.mark.parametrize("kind", ["train", "eval"])
def test_an_unmasked_models_step_has_no_mask_arithmetic(monkeypatch, kind):
    """Without an output mask the traced step is the one of a step that knows no masks."""
    from phalanx.train import _step

    x, y, _ = _float_data()

    def text(build):
        return _lowered(_compile(build(phalanx)), kind, x, y).as_text()

    def unmasked(lib):
        return lib.Sequential(
            [lib.layers.Input(shape=(T, 2)), lib.layers.Dense(CLASSES, activation="softmax")]
        )

    with_masks = text(unmasked), text(_masking_gru)
    monkeypatch.setattr(_step.layers, "call_with_mask", _plain_call)
    assert text(unmasked) == with_masks[0]
    assert text(_masking_gru) != with_masks[1]  # a masked model's step does change


def _binary(lib):
    inputs = lib.Input(shape=(T,), dtype="int32")
    h = lib.layers.Embedding(VOCAB, 4, mask_zero=True)(inputs)
    h = lib.layers.LSTM(3, return_sequences=True)(h)
    return lib.Model(inputs, lib.layers.Dense(1, activation="sigmoid")(h))


def test_only_the_mean_metrics_read_the_mask():
    """Keras 3: "mse" (a MeanMetricWrapper) is masked; Precision and RMSE are not."""
    x, y, _ = _data()
    y = (y[..., None] > 0).astype("float32")
    models = []
    for lib in (phalanx, keras):
        keras.utils.set_random_seed(0)
        model = _binary(lib)
        metrics = [
            lib.metrics.Precision(name="precision"),
            lib.metrics.RootMeanSquaredError(),
            "mse",
        ]
        model.compile(optimizer="sgd", loss="binary_crossentropy", metrics=metrics)
        models.append(model)
    models[0].set_weights(models[1].get_weights())
    got, want = (m.evaluate(x, y, batch_size=8, verbose=0, return_dict=True) for m in models)
    _close(got, want)


def test_a_masked_output_of_a_multi_output_model_is_refused():
    inputs = phalanx.Input(shape=(T,), dtype="int32")
    h = phalanx.layers.Embedding(VOCAB, 4, mask_zero=True)(inputs)
    seq = phalanx.layers.Dense(1)(phalanx.layers.LSTM(3, return_sequences=True)(h))
    pooled = phalanx.layers.Dense(1)(phalanx.layers.GlobalAveragePooling1D()(seq))
    model = phalanx.Model(inputs, [seq, pooled])
    model.compile(optimizer="sgd", loss=["mse", "mse"])
    x, _, _ = _data()
    with pytest.raises(phalanx.errors.ModelStructureError, match="only for a model of one output"):
        model.evaluate(x, [np.zeros((8, T, 1)), np.zeros((8, 1))], verbose=0)
    assert model.predict(x, verbose=0)[0].shape == (8, T, 1)  # predict needs no mask


def test_a_loss_that_reduces_the_masked_axis_is_refused():
    model = _compile(_embedding_lstm(phalanx), loss=lambda t, p: jnp.mean(p, axis=(1, 2)))
    x, y, _ = _data()
    with pytest.raises(phalanx.errors.LossArgumentError, match="reduces the masked axes"):
        model.evaluate(x, y, verbose=0)


class _Pooled(phalanx.Model):
    """A masked Sequential inside a subclassed model whose output is pooled."""

    def __init__(self):
        super().__init__()
        self.seq = phalanx.Sequential(
            [
                phalanx.layers.Input(shape=(T,), dtype="int32"),
                phalanx.layers.Embedding(VOCAB, 4, mask_zero=True),
                phalanx.layers.LSTM(3, return_sequences=True),
            ]
        )
        self.head = phalanx.layers.Dense(CLASSES, activation="softmax")

    def call(self, inputs):
        return self.head(jnp.mean(self.seq(inputs), axis=1))


def test_an_inner_networks_mask_is_not_the_models():
    """Only the called model's own output mask counts (a subclassed call carries none)."""
    x, y, _ = _data()
    model = _Pooled()
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    logs = model.evaluate(x, y[:, 0], batch_size=8, verbose=0, return_dict=True)
    p = np.asarray(model.predict(x, verbose=0))
    want = -np.log(p[np.arange(8), y[:, 0]]).mean()
    np.testing.assert_allclose(logs["loss"], want, rtol=1e-5)


def _nested_encoder(lib):
    encoder = lib.Sequential(
        [
            lib.layers.Input(shape=(T,), dtype="int32"),
            lib.layers.Embedding(VOCAB, 4, mask_zero=True),
            lib.layers.LSTM(3, return_sequences=True),
        ]
    )
    inputs = lib.Input(shape=(T,), dtype="int32")
    return lib.Model(inputs, lib.layers.Dense(CLASSES, activation="softmax")(encoder(inputs)))


def _nested_head(lib, sequential):
    if sequential:
        head = lib.Sequential(
            [
                lib.layers.Input(shape=(T, 4)),
                lib.layers.LSTM(3, return_sequences=True),
                lib.layers.Dense(CLASSES, activation="softmax"),
            ]
        )
    else:
        i = lib.Input(shape=(T, 4))
        seq = lib.layers.LSTM(3, return_sequences=True)(i)
        head = lib.Model(i, lib.layers.Dense(CLASSES, activation="softmax")(seq))
    inputs = lib.Input(shape=(T,), dtype="int32")
    return lib.Model(inputs, head(lib.layers.Embedding(VOCAB, 4, mask_zero=True)(inputs)))


@pytest.mark.parametrize(
    "build",
    [
        _nested_encoder,
        lambda lib: _nested_head(lib, True),
        lambda lib: _nested_head(lib, False),
    ],
    ids=["mask-out-of-a-nested-model", "mask-into-a-sequential", "mask-into-a-functional"],
)
def test_masks_flow_through_nested_models(build):
    """Keras 3: a nested model passes the mask it is given to its layers, and its own
    output mask to the layers after it."""
    x, y, _ = _data()
    ours, theirs = _pair(build)
    np.testing.assert_allclose(ours.predict(x, verbose=0), theirs.predict(x, verbose=0), atol=1e-6)
    got = ours.evaluate(x, y, batch_size=8, verbose=0, return_dict=True)
    _close(got, theirs.evaluate(x, y, batch_size=8, verbose=0, return_dict=True))
