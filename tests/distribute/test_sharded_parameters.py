"""Sharded parameters (ZeRO-3 / FSDP): ``shard_parameters=True`` trains as replicated.

Each device stores 1/N of every large parameter and of its optimizer state;
``fit``, ``evaluate``, ``predict``, custom loops, weights and checkpoints give
the results of replicated training (within 1e-5, float32).
"""

import logging

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from mlp_custom_loop import custom_loop

import phalanx
from phalanx import layers

GLOBAL_BATCH = 32


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(192, 24)).astype(np.float32)
    y = rng.integers(0, 8, size=192).astype(np.int32)
    return x, y


def _model(strategy, *, steps_per_execution=1, optimizer=None):
    with strategy.scope():
        model = phalanx.Sequential(
            [
                layers.Input(shape=(24,)),
                layers.Dense(64, activation="relu"),  # 24x64 kernel: split on its 64
                layers.BatchNormalization(),
                layers.Dropout(0.25),
                layers.Dense(128, activation="relu"),  # 64x128: split on 128
                layers.Dense(8),  # 128x8 = 1024 elements: split on 128; bias whole
            ]
        )
        model.compile(
            optimizer=optimizer or phalanx.optimizers.Adam(1e-2, global_clipnorm=1.0),
            loss=phalanx.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
            steps_per_execution=steps_per_execution,
            seed=3,
        )
    return model


def _mirrored(n, **kwargs):
    return phalanx.MirroredStrategy(jax.devices()[:n], **kwargs)


def _fit(strategy, data, **kwargs):
    x, y = data
    model = _model(strategy, **kwargs)
    history = model.fit(
        x, y, batch_size=GLOBAL_BATCH, epochs=3, validation_data=(x[:64], y[:64]), verbose=0
    )
    return model, history.history


def _assert_same(model_a, hist_a, model_b, hist_b):
    assert hist_a.keys() == hist_b.keys()
    for key in hist_a:
        np.testing.assert_allclose(hist_a[key], hist_b[key], rtol=1e-5, atol=1e-5, err_msg=key)
    for a, b in zip(model_a.get_weights(), model_b.get_weights(), strict=True):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, atol=1e-5)


@pytest.mark.parametrize("n", [1, 2, 8])
@pytest.mark.parametrize("spe", [1, 3])
def test_fit_equals_replicated(data, n, spe):
    replicated, h_rep = _fit(_mirrored(n), data, steps_per_execution=spe)
    sharded, h_sh = _fit(_mirrored(n, shard_parameters=True), data, steps_per_execution=spe)
    _assert_same(replicated, h_rep, sharded, h_sh)
    assert h_sh["loss"][-1] < h_sh["loss"][0]  # it trained
    x, _ = data
    np.testing.assert_allclose(
        sharded.predict(x, batch_size=GLOBAL_BATCH, verbose=0),
        replicated.predict(x, batch_size=GLOBAL_BATCH, verbose=0),
        atol=1e-5,
    )


def test_fit_from_a_dataset_equals_replicated(data):
    """A Dataset, and batches streamed from a generator (not resident on the devices)."""
    x, y = data
    dataset = phalanx.data.Dataset.from_tensor_slices((x, y)).batch(GLOBAL_BATCH)

    def batches():
        return ((x[i : i + GLOBAL_BATCH], y[i : i + GLOBAL_BATCH]) for i in range(0, 192, 32))

    results = []
    for shard in (False, True):
        model = _model(_mirrored(8, shard_parameters=shard), steps_per_execution=2)
        history = model.fit(dataset, epochs=2, verbose=0).history
        streamed = model.fit(batches(), epochs=1, verbose=0).history
        history = {k: v + streamed[k] for k, v in history.items()}
        logs = model.evaluate(batches(), verbose=0, return_dict=True)
        out = model.predict((b[0] for b in batches()), verbose=0)
        assert ("train", False) in model._programs  # the streamed program ran
        results.append((model, history, logs, out))
    (rep, h_rep, l_rep, p_rep), (sh, h_sh, l_sh, p_sh) = results
    _assert_same(rep, h_rep, sh, h_sh)
    for key in l_rep:
        np.testing.assert_allclose(l_sh[key], l_rep[key], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(p_sh, p_rep, atol=1e-5)


def _local_shape(array):
    return array.addressable_shards[0].data.shape


def test_parameters_and_optimizer_state_are_split(data):
    strategy = _mirrored(8, shard_parameters=True)
    model, _ = _fit(strategy, data)
    params = model._state.params
    kernels = [leaf for leaf in jax.tree.leaves(params) if leaf.ndim == 2]
    assert [k.shape for k in kernels] == [(24, 64), (64, 128), (128, 8)]
    assert [_local_shape(k) for k in kernels] == [(24, 8), (64, 16), (16, 8)]
    for bias in (leaf for leaf in jax.tree.leaves(params) if leaf.ndim == 1):
        assert _local_shape(bias) == bias.shape  # small: whole on every device
    moments = [leaf for leaf in jax.tree.leaves(model._state.opt_state) if np.ndim(leaf) == 2]
    assert sorted(_local_shape(m) for m in moments) == sorted(
        [(24, 8), (64, 16), (16, 8)] * 2  # Adam's mu and nu, split like their parameters
    )
    stored = sum(
        leaf.addressable_shards[0].data.nbytes
        for leaf in jax.tree.leaves((params, model._state.opt_state))
    )
    whole = sum(leaf.nbytes for leaf in jax.tree.leaves((params, model._state.opt_state)))
    assert stored < whole / 4  # per device; the rest is small biases and counters


def test_plain_mirrored_keeps_parameters_whole(data):
    model, _ = _fit(_mirrored(8), data)
    for leaf in jax.tree.leaves(model._state.params):
        assert _local_shape(leaf) == leaf.shape
    assert not model.distribute_strategy.shard_parameters


def test_multi_worker_strategy_shards_too(data):
    replicated, h_rep = _fit(phalanx.MultiWorkerMirroredStrategy(), data)
    strategy = phalanx.MultiWorkerMirroredStrategy(shard_parameters=True)
    assert strategy.shard_parameters
    sharded, h_sh = _fit(strategy, data)
    _assert_same(replicated, h_rep, sharded, h_sh)


def test_tpu_strategy_shards_too(data):
    def tpu(shard):
        return phalanx.TPUStrategy(
            experimental_simulate_on_cpu=True, compute_dtype="float32", shard_parameters=shard
        )

    replicated, h_rep = _fit(tpu(False), data)
    sharded, h_sh = _fit(tpu(True), data)
    _assert_same(replicated, h_rep, sharded, h_sh)


def test_optimizers_with_norms_and_momentum_equal_replicated(data):
    for make in (
        lambda: phalanx.optimizers.SGD(0.1, momentum=0.9, clipnorm=0.5),
        lambda: phalanx.optimizers.AdamW(1e-2, weight_decay=0.1),
        lambda: optax.chain(optax.clip_by_global_norm(0.3), optax.sgd(0.1)),
    ):
        rep, h_rep = _fit(_mirrored(8), data, optimizer=make())
        sh, h_sh = _fit(_mirrored(8, shard_parameters=True), data, optimizer=make())
        _assert_same(rep, h_rep, sh, h_sh)


class _CompileLog(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.names = []

    def emit(self, record):
        message = record.getMessage()
        if message.startswith("Finished XLA compilation of"):
            self.names.append(message.split()[4])


def test_no_recompilation_and_learning_rate_set_keeps_the_split(data):
    x, y = data
    model = _model(_mirrored(8, shard_parameters=True), steps_per_execution=2)
    handler = _CompileLog()
    logger = logging.getLogger("jax")
    logger.addHandler(handler)
    try:
        with jax.log_compiles(True):
            model.fit(x, y, batch_size=GLOBAL_BATCH, epochs=1, verbose=0, validation_data=(x, y))
            first = list(handler.names)
            model.optimizer.learning_rate = 0.005  # written into the split optimizer state
            model.set_weights(model.get_weights())  # placed back split
            model.fit(x, y, batch_size=GLOBAL_BATCH, epochs=2, verbose=0, validation_data=(x, y))
    finally:
        logger.removeHandler(handler)
    assert any("body" in n for n in first)
    later = [n for n in handler.names[len(first) :] if "body" in n]
    assert later == [], f"recompiled after the first epoch: {later}"
    assert model.optimizer.learning_rate == pytest.approx(0.005)
    kernel = next(leaf for leaf in jax.tree.leaves(model._state.params) if leaf.ndim == 2)
    assert _local_shape(kernel) == (24, 8)


def test_weights_are_whole_arrays_and_round_trip(data, tmp_path):
    sharded, _ = _fit(_mirrored(8, shard_parameters=True), data)
    weights = sharded.get_weights()
    assert all(isinstance(w, np.ndarray) for w in weights)
    path = tmp_path / "w.npz"
    sharded.save_weights(path)
    one = _model(phalanx.OneDeviceStrategy())
    one.load_weights(path)
    x, _ = data
    np.testing.assert_allclose(
        one.predict(x, verbose=0), sharded.predict(x, batch_size=GLOBAL_BATCH, verbose=0), atol=1e-5
    )
    again = _model(_mirrored(8, shard_parameters=True))
    again.build((24,))
    again.load_weights(path)
    for a, b in zip(again.get_weights(), weights, strict=True):
        np.testing.assert_array_equal(a, b)


def _continue(model, data, epochs=2):
    x, y = data
    model.fit(x, y, batch_size=GLOBAL_BATCH, epochs=epochs, verbose=0)
    return model.get_weights()


@pytest.mark.parametrize(
    ("save_on", "restore_on"), [("sharded", "replicated"), ("replicated", "sharded")]
)
def test_checkpoint_restores_across_sharding(data, tmp_path, save_on, restore_on):
    make = {
        "sharded": lambda: _mirrored(8, shard_parameters=True),
        "replicated": lambda: _mirrored(8),
    }
    saved, _ = _fit(make[save_on](), data)
    path = phalanx.checkpoint.Checkpoint(model=saved).save(str(tmp_path / "ckpt"))
    restored = _model(make[restore_on]())
    phalanx.checkpoint.Checkpoint(model=restored).restore(path)
    for a, b in zip(saved.get_weights(), restored.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    # The optimizer state came across too: training on from here agrees.
    for a, b in zip(_continue(saved, data), _continue(restored, data), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)
    if restore_on == "sharded":
        kernel = next(leaf for leaf in jax.tree.leaves(restored._state.params) if leaf.ndim == 2)
        assert _local_shape(kernel) == (24, 8)


@pytest.mark.parametrize("n", [2, 8])
def test_custom_loop_equals_one_device_and_stays_split(n):
    one_params, _, one_losses = custom_loop(phalanx.OneDeviceStrategy())
    strategy = _mirrored(n, shard_parameters=True)
    params, opt_state, losses = custom_loop(strategy)
    np.testing.assert_allclose(losses, one_losses, rtol=1e-5)
    for k in one_params:
        np.testing.assert_allclose(np.asarray(params[k]), np.asarray(one_params[k]), atol=1e-5)
    # A sharded variable is not a batch: fn saw it whole, and it comes back split.
    assert _local_shape(params["w1"]) == (20, 128 // n)
    assert _local_shape(params["w2"]) == (128 // n, 16)
    assert _local_shape(params["b1"]) == (128,)
    assert _local_shape(opt_state[0].mu["w2"]) == (128 // n, 16)


def test_distribute_variables_without_sharding_replicates():
    strategy = _mirrored(2)
    w = strategy.distribute_variables(np.ones((64, 32), np.float32))
    assert w.sharding == strategy.replicated_sharding
    assert strategy.variable_sharding(w) == strategy.replicated_sharding


def test_layout_rule():
    strategy = _mirrored(8, shard_parameters=True)

    def local(shape):
        sharding = strategy.variable_sharding(jax.ShapeDtypeStruct(shape, jnp.float32))
        return sharding.shard_shape(shape)

    assert local((784, 128)) == (98, 128)  # the largest divisible axis
    assert local((30, 1000)) == (30, 125)
    assert local((100, 30)) == (100, 30)  # no axis divides by 8
    assert local((10,)) == (10,)  # too small
    assert local(()) == ()


@pytest.mark.parametrize("bad", ["yes", 1, None])
def test_shard_parameters_must_be_a_bool(bad):
    with pytest.raises(TypeError, match="shard_parameters must be True or False"):
        phalanx.MirroredStrategy(shard_parameters=bad)
