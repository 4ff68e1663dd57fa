"""compile/fit/evaluate/predict: equivalences that prove the distributed and fused paths."""

import logging

import jax
import numpy as np
import pytest

import phalanx
from phalanx import layers

N_TRAIN, N_TEST, FEATURES, CLASSES = 200, 75, 12, 4


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    centers = rng.normal(size=(CLASSES, FEATURES)) * 2
    y = rng.integers(0, CLASSES, N_TRAIN + N_TEST).astype(np.int32)
    x = (centers[y] + rng.normal(size=(len(y), FEATURES))).astype(np.float32)
    return (x[:N_TRAIN], y[:N_TRAIN]), (x[N_TRAIN:], y[N_TRAIN:])


def _weights0():
    model = phalanx.Sequential(
        [
            layers.Input(shape=(FEATURES,)),
            layers.Dense(16, activation="relu"),
            layers.Dense(CLASSES, activation="softmax"),
        ]
    )
    model.build()
    return model.get_weights()


WEIGHTS0 = None


def _model(strategy, *, steps_per_execution=1, metrics=("accuracy",), optimizer="adam"):
    global WEIGHTS0
    if WEIGHTS0 is None:
        WEIGHTS0 = _weights0()
    with strategy.scope():
        model = phalanx.Sequential(
            [
                layers.Input(shape=(FEATURES,)),
                layers.Dense(16, activation="relu"),
                layers.Dense(CLASSES, activation="softmax"),
            ]
        )
        model.build()
        model.set_weights(WEIGHTS0)
        model.compile(
            optimizer=optimizer,
            loss="sparse_categorical_crossentropy",
            metrics=list(metrics),
            steps_per_execution=steps_per_execution,
        )
    return model


def _assert_same(a_model, b_model, a_hist, b_hist, atol=1e-5):
    assert a_hist.history.keys() == b_hist.history.keys()
    for key in a_hist.history:
        np.testing.assert_allclose(a_hist.history[key], b_hist.history[key], atol=atol, err_msg=key)
    for wa, wb in zip(a_model.get_weights(), b_model.get_weights(), strict=True):
        np.testing.assert_allclose(wa, wb, atol=atol)


FIT = dict(batch_size=32, epochs=3, verbose=0, shuffle=True)


def test_mirrored_8_equals_one_device(data):
    (x, y), (xt, yt) = data
    one = _model(phalanx.OneDeviceStrategy())
    many = _model(phalanx.MirroredStrategy())
    h1 = one.fit(x, y, validation_data=(xt, yt), **FIT)
    h8 = many.fit(x, y, validation_data=(xt, yt), **FIT)
    _assert_same(one, many, h1, h8)
    assert h1.history["loss"][-1] < h1.history["loss"][0]


@pytest.mark.parametrize("spe", [3, 7, 50])
def test_steps_per_execution_equals_unfused(data, spe):
    (x, y), (xt, yt) = data
    base = _model(phalanx.MirroredStrategy(jax.devices()[:2]))
    fused = _model(phalanx.MirroredStrategy(jax.devices()[:2]), steps_per_execution=spe)
    h1 = base.fit(x, y, validation_data=(xt, yt), **FIT)
    hn = fused.fit(x, y, validation_data=(xt, yt), **FIT)
    _assert_same(base, fused, h1, hn)
    np.testing.assert_allclose(base.predict(xt, verbose=0), fused.predict(xt, verbose=0), atol=1e-5)


def test_callbacks_see_every_step_once_per_execution(data):
    (x, y), _ = data
    seen = []
    cb = phalanx.callbacks.LambdaCallback(on_train_batch_end=lambda batch, logs: seen.append(batch))
    model = _model(phalanx.OneDeviceStrategy(), steps_per_execution=3)
    model.fit(x, y, batch_size=32, epochs=1, verbose=0, callbacks=[cb])
    # 200 examples / 32 = 7 steps in executions of 3, 3 and 1; as Keras 3, each batch-end
    # index is first + steps_per_execution - 1, the last one's too (e734f88).
    assert seen == [2, 5, 8]
    assert int(model._state.step) == 7


def test_evaluate_and_predict_count_each_example_once(data):
    _, (xt, yt) = data
    one = _model(
        phalanx.OneDeviceStrategy(), metrics=("accuracy", "sparse_top_k_categorical_accuracy")
    )
    many = _model(
        phalanx.MirroredStrategy(), metrics=("accuracy", "sparse_top_k_categorical_accuracy")
    )
    # 75 examples in batches of 16: the last batch has 11, padded and masked.
    r1 = one.evaluate(xt, yt, batch_size=16, verbose=0, return_dict=True)
    r8 = many.evaluate(xt, yt, batch_size=16, verbose=0, return_dict=True)
    for key in r1:
        np.testing.assert_allclose(r1[key], r8[key], atol=1e-6)
    p1, p8 = one.predict(xt, batch_size=16, verbose=0), many.predict(xt, batch_size=16, verbose=0)
    assert p1.shape == p8.shape == (N_TEST, CLASSES)
    np.testing.assert_allclose(p1, p8, atol=1e-6)
    # And they are the plain numbers over the 75 examples.
    np.testing.assert_allclose(r8["accuracy"], (p1.argmax(-1) == yt).mean(), atol=1e-6)
    manual_loss = -np.log(p1[np.arange(N_TEST), yt]).mean()
    np.testing.assert_allclose(r8["loss"], manual_loss, rtol=1e-5)


def test_auc_and_precision_across_replicas_equal_one_device(data):
    _, (xt, yt) = data
    ybt = (yt % 2).astype(np.float32)
    results = []
    for strategy in (phalanx.OneDeviceStrategy(), phalanx.MirroredStrategy()):
        with strategy.scope():
            model = phalanx.Sequential(
                [layers.Input(shape=(FEATURES,)), layers.Dense(1, activation="sigmoid")]
            )
            model.build()
            model.set_weights(
                [np.linspace(-1, 1, FEATURES)[:, None].astype(np.float32), np.zeros(1, np.float32)]
            )
            model.compile(
                optimizer="sgd",
                loss="binary_crossentropy",
                metrics=[phalanx.metrics.AUC(), phalanx.metrics.Precision(), "accuracy"],
            )
        results.append(model.evaluate(xt, ybt, batch_size=24, verbose=0, return_dict=True))
    for key in results[0]:
        np.testing.assert_allclose(results[0][key], results[1][key], atol=1e-6, err_msg=key)
    assert 0.0 < results[0]["auc"] < 1.0


class _CompileLog(logging.Handler):
    """Collects the names of the programs XLA compiles (jax_log_compiles)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.names = []

    def emit(self, record):
        message = record.getMessage()
        if message.startswith("Finished XLA compilation of"):
            self.names.append(message.split()[4])


def test_no_recompilation_after_first_epoch(data):
    (x, y), (xt, yt) = data
    model = _model(phalanx.MirroredStrategy(jax.devices()[:2]), steps_per_execution=4)
    handler = _CompileLog()
    logger = logging.getLogger("jax")
    logger.addHandler(handler)
    try:
        with jax.log_compiles(True):
            model.fit(x, y, validation_data=(xt, yt), batch_size=32, epochs=1, verbose=0)
            first = list(handler.names)
            model.fit(x, y, validation_data=(xt, yt), batch_size=32, epochs=3, verbose=0)
    finally:
        logger.removeHandler(handler)
    assert "jit(train_body)" in first and "jit(eval_body)" in first
    later = [n for n in handler.names[len(first) :] if "body" in n]
    assert later == [], f"recompiled after the first epoch: {later}"


def test_load_weights_saved_under_another_replica_count(data, tmp_path):
    (x, y), (xt, _) = data
    many = _model(phalanx.MirroredStrategy())
    many.fit(x, y, batch_size=32, epochs=1, verbose=0)
    path = tmp_path / "w.npz"
    many.save_weights(path)
    one = _model(phalanx.OneDeviceStrategy())
    one.load_weights(path)
    np.testing.assert_allclose(one.predict(xt, verbose=0), many.predict(xt, verbose=0), atol=1e-6)
    # The file is a plain npz: no pickle needed to read it.
    with np.load(path, allow_pickle=False) as archive:
        assert len(archive.files) == len(many.get_weights())


def test_dataset_generator_and_distributed_inputs_equal_arrays(data):
    (x, y), _ = data
    strategy = phalanx.MirroredStrategy(jax.devices()[:2])
    ref = _model(strategy)
    h_ref = ref.fit(x, y, batch_size=48, epochs=2, verbose=0, shuffle=False)
    ds = phalanx.data.Dataset.from_tensor_slices((x, y)).batch(48)

    def gen():
        for _ in range(2):
            for i in range(0, len(x), 48):
                yield x[i : i + 48], y[i : i + 48]

    inputs = {
        "dataset": dict(x=ds),
        "generator": dict(x=gen(), steps_per_epoch=5),
        "distributed": dict(x=strategy.experimental_distribute_dataset(ds)),
    }
    for kwargs in inputs.values():
        model = _model(strategy)
        h = model.fit(epochs=2, verbose=0, **kwargs)
        _assert_same(ref, model, h_ref, h)  # 200 = 4 x 48 + 8: a partial last batch


def test_sample_weight_and_class_weight(data):
    (x, y), _ = data
    cw = {0: 1.0, 1: 2.0, 2: 0.5, 3: 1.0}
    a = _model(phalanx.OneDeviceStrategy())
    b = _model(phalanx.OneDeviceStrategy())
    ha = a.fit(x, y, class_weight=cw, **FIT)
    hb = b.fit(x, y, sample_weight=np.array([cw[int(c)] for c in y], np.float32), **FIT)
    _assert_same(a, b, ha, hb)
    plain = _model(phalanx.OneDeviceStrategy())
    hp = plain.fit(x, y, **FIT)
    assert not np.allclose(hp.history["loss"], ha.history["loss"])  # the weights did act


def test_model_built_outside_scope_moves_onto_the_mesh(data):
    (x, y), _ = data
    model = phalanx.Sequential([layers.Input(shape=(FEATURES,)), layers.Dense(CLASSES)])
    strategy = phalanx.MirroredStrategy()
    with strategy.scope():
        model.compile(
            optimizer="sgd", loss=phalanx.losses.SparseCategoricalCrossentropy(from_logits=True)
        )
    assert model.distribute_strategy is strategy
    model.fit(x, y, batch_size=32, epochs=1, verbose=0)
    for leaf in jax.tree.leaves(model._state.params):
        assert leaf.sharding.is_equivalent_to(strategy.replicated_sharding, leaf.ndim)


def test_model_of_one_strategy_compiled_under_another_raises():
    with phalanx.OneDeviceStrategy().scope():
        model = phalanx.Sequential([layers.Dense(2)])
    with (
        phalanx.MirroredStrategy().scope(),
        pytest.raises(phalanx.errors.ScopeError, match="created under"),
    ):
        model.compile(optimizer="sgd", loss="mse")


def test_errors(data):
    (x, y), _ = data
    model = phalanx.Sequential([layers.Dense(2)])
    with pytest.raises(RuntimeError, match=r"must call compile\(\) before fit"):
        model.fit(x, y)
    m8 = _model(phalanx.MirroredStrategy())
    with pytest.raises(ValueError, match="steps_per_execution must be >= 1"):
        m8.compile(optimizer="adam", loss="mse", steps_per_execution=0)
    with pytest.raises(ValueError, match="same number of examples"):
        m8.fit(x, y[:10], batch_size=32, verbose=0)


def test_validation_split_takes_the_last_examples(data):
    (x, y), _ = data
    a = _model(phalanx.OneDeviceStrategy())
    b = _model(phalanx.OneDeviceStrategy())
    ha = a.fit(x, y, validation_split=0.25, **FIT)
    hb = b.fit(x[:150], y[:150], validation_data=(x[150:], y[150:]), **FIT)
    _assert_same(a, b, ha, hb)


def test_train_test_predict_on_batch(data):
    (x, y), _ = data
    model = _model(phalanx.MirroredStrategy(jax.devices()[:2]))
    loss, acc = model.test_on_batch(x[:10], y[:10])
    before = model.get_weights()
    model.train_on_batch(x[:10], y[:10])
    assert any(not np.allclose(a, b) for a, b in zip(before, model.get_weights(), strict=True))
    assert model.predict_on_batch(x[:10]).shape == (10, CLASSES)
    assert np.isfinite(loss) and 0 <= acc <= 1
