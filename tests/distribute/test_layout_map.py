"""Model-parallel layouts: ``ModelParallelStrategy(LayoutMap(DeviceMesh(...)))`` trains as one device.

The batch is split over the mesh's "data" axis and the weights by the layout
map (attention heads and MLP units over "model"); ``fit``, ``evaluate``,
``predict``, custom loops, weights and checkpoints give the results of one
device (within 1e-5, float32) on (4, 2), (2, 4) and (1, 8) meshes of the 8
simulated CPU devices.
"""

import logging

import jax
import numpy as np
import pytest
from mlp_custom_loop import custom_loop

import phalanx
from phalanx import layers
from phalanx.distribute import DeviceMesh, LayoutMap, ModelParallelStrategy
from phalanx.errors import LayoutError

GLOBAL_BATCH = 32
MESHES = [(4, 2), (2, 4), (1, 8)]
SEQ, D_MODEL, HEADS = 6, 16, 8  # 8 heads: split over up to 8 model devices


@pytest.fixture(scope="module")
def mlp_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(128, 24)).astype(np.float32)
    y = rng.integers(0, 8, size=128).astype(np.int32)
    return x, y


@pytest.fixture(scope="module")
def seq_data():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(96, SEQ, D_MODEL)).astype(np.float32)
    y = rng.integers(0, 4, size=96).astype(np.int32)
    return x, y


def _strategy(shape, specs=None):
    layout_map = LayoutMap(DeviceMesh(shape, ("data", "model")))
    for key, spec in (specs or _MLP_SPECS).items():
        layout_map[key] = spec
    return ModelParallelStrategy(layout_map, batch_dim_name="data")


_MLP_SPECS = {
    "dense(_1)?/kernel": (None, "model"),  # column-split: each device computes some units
    "dense(_1)?/bias": ("model",),
    "dense_2/kernel": ("model", None),  # row-split: XLA sums the pieces (an all-reduce)
}

_TRANSFORMER_SPECS = {
    ".*attention/(query|key|value)/kernel": (None, "model", None),  # heads over "model"
    ".*attention/(query|key|value)/bias": ("model", None),
    ".*attention/attention_output/kernel": ("model", None, None),
    "mlp_in/kernel": (None, "model"),
    "mlp_in/bias": ("model",),
    "mlp_out/kernel": ("model", None),
}


def _compile(model, steps_per_execution=1):
    model.compile(
        optimizer=phalanx.optimizers.Adam(1e-2, global_clipnorm=1.0),
        loss=phalanx.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
        steps_per_execution=steps_per_execution,
        seed=3,
    )
    return model


def _mlp(strategy):
    with strategy.scope():
        model = phalanx.Sequential(
            [
                layers.Input(shape=(24,)),
                layers.Dense(64, activation="relu", name="dense"),
                layers.Dense(32, activation="relu", name="dense_1"),
                layers.Dense(8, name="dense_2"),
            ]
        )
        return _compile(model)


def _transformer(strategy):
    """One pre-norm transformer block (attention + MLP, residuals) and a classifier."""
    with strategy.scope():
        inputs = layers.Input(shape=(SEQ, D_MODEL))
        h = layers.LayerNormalization(name="norm_1")(inputs)
        h = layers.MultiHeadAttention(num_heads=HEADS, key_dim=4, name="attention")(h, h)
        x = layers.Add()([inputs, h])
        h = layers.LayerNormalization(name="norm_2")(x)
        h = layers.Dense(64, activation="relu", name="mlp_in")(h)
        h = layers.Dense(D_MODEL, name="mlp_out")(h)
        x = layers.Add()([x, h])
        out = layers.Dense(4, name="head")(layers.GlobalAveragePooling1D()(x))
        return _compile(phalanx.Model(inputs, out))


def _fit(model, data, epochs=2):
    x, y = data
    history = model.fit(
        x, y, batch_size=GLOBAL_BATCH, epochs=epochs, validation_data=(x[:64], y[:64]), verbose=0
    )
    return history.history


def _assert_same(model_a, hist_a, model_b, hist_b):
    assert hist_a.keys() == hist_b.keys()
    for key in hist_a:
        np.testing.assert_allclose(hist_a[key], hist_b[key], rtol=1e-5, atol=1e-5, err_msg=key)
    paths = [w.path for w in model_a.weights]
    for path, a, b in zip(paths, model_a.get_weights(), model_b.get_weights(), strict=True):
        assert a.shape == b.shape
        if path.endswith("key/bias"):
            # its gradient is zero (a softmax does not see a shift of every score): its value
            # is rounding noise that Adam scales up, different for each layout of the sums
            np.testing.assert_allclose(a, b, atol=1e-4, err_msg=path)
            continue
        np.testing.assert_allclose(a, b, atol=1e-5, err_msg=path)


def _local_shape(array):
    return array.addressable_shards[0].data.shape


def _params(model):
    """The model's placed parameters by Keras path."""
    views = {w._nnx_path: w.path for w in model.weights}
    flat = jax.tree_util.tree_leaves_with_path(model._state.params)
    out = {}
    for path, leaf in flat:
        keys = tuple(
            getattr(k, "key", getattr(k, "name", getattr(k, "idx", k)))
            for k in path
            if getattr(k, "name", None) != "value"
        )
        out[views[keys]] = leaf
    return out


@pytest.fixture(scope="module")
def one_device_mlp(mlp_data):
    model = _mlp(phalanx.OneDeviceStrategy())
    return model, _fit(model, mlp_data)


@pytest.mark.parametrize("shape", MESHES)
def test_mlp_fit_equals_one_device(mlp_data, one_device_mlp, shape):
    one, h_one = one_device_mlp
    strategy = _strategy(shape)
    assert strategy.num_replicas_in_sync == shape[0]
    model = _mlp(strategy)
    history = _fit(model, mlp_data)
    _assert_same(one, h_one, model, history)
    assert history["loss"][-1] < history["loss"][0]  # it trained
    model_size = shape[1]
    params = _params(model)
    assert _local_shape(params["dense/kernel"]) == (24, 64 // model_size)
    assert _local_shape(params["dense_1/bias"]) == (32 // model_size,)
    assert _local_shape(params["dense_2/kernel"]) == (32 // model_size, 8)
    assert _local_shape(params["dense_2/bias"]) == (8,)  # unmatched: whole
    moments = [m for m in jax.tree.leaves(model._state.opt_state) if np.shape(m) == (24, 64)]
    assert [_local_shape(m) for m in moments] == [(24, 64 // model_size)] * 2  # Adam's mu, nu
    x, y = mlp_data
    np.testing.assert_allclose(
        model.predict(x, batch_size=GLOBAL_BATCH, verbose=0), one.predict(x, verbose=0), atol=1e-5
    )
    logs = model.evaluate(x, y, batch_size=GLOBAL_BATCH, verbose=0, return_dict=True)
    expected = one.evaluate(x, y, batch_size=GLOBAL_BATCH, verbose=0, return_dict=True)
    for key in expected:
        np.testing.assert_allclose(logs[key], expected[key], rtol=1e-5, atol=1e-6)


@pytest.fixture(scope="module")
def one_device_transformer(seq_data):
    model = _transformer(phalanx.OneDeviceStrategy())
    return model, _fit(model, seq_data)


@pytest.mark.parametrize("shape", MESHES)
def test_transformer_fit_equals_one_device(seq_data, one_device_transformer, shape):
    one, h_one = one_device_transformer
    model = _transformer(_strategy(shape, _TRANSFORMER_SPECS))
    history = _fit(model, seq_data)
    _assert_same(one, h_one, model, history)
    model_size = shape[1]
    params = _params(model)
    assert _local_shape(params["attention/query/kernel"]) == (D_MODEL, HEADS // model_size, 4)
    assert _local_shape(params["attention/attention_output/kernel"]) == (
        HEADS // model_size,
        4,
        D_MODEL,
    )
    assert _local_shape(params["mlp_in/kernel"]) == (D_MODEL, 64 // model_size)
    assert _local_shape(params["norm_1/gamma"]) == (D_MODEL,)
    x, _ = seq_data
    np.testing.assert_allclose(
        model.predict(x, batch_size=GLOBAL_BATCH, verbose=0), one.predict(x, verbose=0), atol=1e-5
    )


def test_variables_split_over_the_batch_axis_too(mlp_data, one_device_mlp):
    """A spec naming the batch axis splits a variable over the replicas as well (ZeRO-3)."""
    one, h_one = one_device_mlp
    specs = dict(_MLP_SPECS, **{"dense(_1)?/kernel": ("data", "model")})
    model = _mlp(_strategy((4, 2), specs))
    _assert_same(one, h_one, model, _fit(model, mlp_data))
    assert _local_shape(_params(model)["dense/kernel"]) == (24 // 4, 64 // 2)


class _CompileLog(logging.Handler):
    def __init__(self):
        super().__init__()
        self.names = []

    def emit(self, record):
        message = record.getMessage()
        if message.startswith("Finished XLA compilation of"):
            self.names.append(message.split()[4])


def test_no_recompilation_and_weights_round_trip(mlp_data, tmp_path):
    x, y = mlp_data
    model = _mlp(_strategy((2, 4)))
    handler = _CompileLog()
    logger = logging.getLogger("jax")
    logger.addHandler(handler)
    try:
        with jax.log_compiles(True):
            model.fit(x, y, batch_size=GLOBAL_BATCH, epochs=1, verbose=0)
            first = list(handler.names)
            model.optimizer.learning_rate = 0.005  # written into the split optimizer state
            model.set_weights(model.get_weights())  # placed back by the layout map
            model.fit(x, y, batch_size=GLOBAL_BATCH, epochs=2, verbose=0)
    finally:
        logger.removeHandler(handler)
    assert any("body" in n for n in first)
    later = [n for n in handler.names[len(first) :] if "body" in n]
    assert later == [], f"recompiled after the first epoch: {later}"
    assert _local_shape(_params(model)["dense/kernel"]) == (24, 16)
    weights = model.get_weights()
    assert all(isinstance(w, np.ndarray) for w in weights)
    model.save_weights(tmp_path / "w.npz")
    one = _mlp(phalanx.OneDeviceStrategy())
    one.load_weights(tmp_path / "w.npz")
    np.testing.assert_allclose(
        one.predict(x, verbose=0), model.predict(x, batch_size=GLOBAL_BATCH, verbose=0), atol=1e-5
    )


def _continue(model, data):
    x, y = data
    model.fit(x, y, batch_size=GLOBAL_BATCH, epochs=1, verbose=0)
    return model.get_weights()


@pytest.mark.parametrize(("save_on", "restore_on"), [("layout", "one"), ("one", "layout")])
def test_checkpoint_restores_across_layouts(mlp_data, tmp_path, save_on, restore_on):
    make = {"layout": lambda: _strategy((4, 2)), "one": phalanx.OneDeviceStrategy}
    saved = _mlp(make[save_on]())
    _fit(saved, mlp_data, epochs=1)
    path = phalanx.checkpoint.Checkpoint(model=saved).save(str(tmp_path / "ckpt"))
    restored = _mlp(make[restore_on]())
    phalanx.checkpoint.Checkpoint(model=restored).restore(path)
    for a, b in zip(saved.get_weights(), restored.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    # The optimizer state came across too: training on from here agrees.
    for a, b in zip(_continue(saved, mlp_data), _continue(restored, mlp_data), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)
    if restore_on == "layout":
        assert _local_shape(_params(restored)["dense_2/kernel"]) == (16, 8)


@pytest.mark.parametrize("shape", [(4, 2), (1, 8)])
def test_custom_loop_equals_one_device_and_stays_split(shape):
    one_params, _, one_losses = custom_loop(phalanx.OneDeviceStrategy())
    specs = {"w1": (None, "model"), "b1": ("model",), "w2": ("model", None)}
    strategy = _strategy(shape, specs)
    params, opt_state, losses = custom_loop(strategy)
    np.testing.assert_allclose(losses, one_losses, rtol=1e-5)
    for k in one_params:
        np.testing.assert_allclose(np.asarray(params[k]), np.asarray(one_params[k]), atol=1e-5)
    model_size = shape[1]
    # Returned by run as (params, opt_state, loss): '0/w1' and '1/0/mu/w1' follow 'w1'.
    assert _local_shape(params["w1"]) == (20, 128 // model_size)
    assert _local_shape(params["w2"]) == (128 // model_size, 16)
    assert _local_shape(params["b2"]) == (16,)
    assert _local_shape(opt_state[0].mu["w1"]) == (20, 128 // model_size)


def test_layout_map_matches_as_keras():
    layout_map = LayoutMap(DeviceMesh((4, 2), ("data", "model")))
    layout_map["dense.*kernel"] = (None, "model")
    layout_map["dense/bias"] = ("model",)
    layout_map[".*attention/(query|key)/kernel"] = (None, "model", None)
    assert layout_map["dense_1/kernel"] == (None, "model")  # re.fullmatch
    assert layout_map["dense/bias"] == ("model",)  # an equal key
    assert layout_map["my_dense/kernel"] is None  # fullmatch, not search
    assert layout_map["attention/value/kernel"] is None
    assert layout_map["block/attention/key/kernel"] == (None, "model", None)
    assert len(layout_map) == 3 and "dense/bias" in layout_map
    del layout_map["dense/bias"]
    assert layout_map.get("dense/bias", "whole") == "whole"
    layout_map["dense_1/.*"] = (None, None)
    with pytest.raises(LayoutError, match=r"'dense_1/kernel' matches several LayoutMap keys"):
        layout_map["dense_1/kernel"]
    with pytest.raises(LayoutError, match="already has the key"):
        layout_map["dense_1/.*"] = ("model", None)
    with pytest.raises(LayoutError, match=r"looks up variable paths \(str.*got 3 \(int\)"):
        layout_map[3]


def test_bad_meshes_and_maps_name_what_to_fix():
    with pytest.raises(
        LayoutError, match=r"shape \(4, 4\) holds 16 devices, but jax.devices\(\) has 8"
    ):
        DeviceMesh((4, 4), ("data", "model"))
    with pytest.raises(LayoutError, match=r"holds 16 devices, but devices= has 4"):
        DeviceMesh((4, 4), ("data", "model"), devices=jax.devices()[:4])
    for shape in ((0, 2), (True, 8), (2.0, 4), 8):
        with pytest.raises(LayoutError, match="non-empty tuple of positive ints"):
            DeviceMesh(shape, ("data", "model"))
    with pytest.raises(
        LayoutError, match=r"devices= must be a sequence of jax devices, got \[0, 1\]"
    ):
        DeviceMesh((2,), ("data",), devices=[0, 1])
    with pytest.raises(LayoutError, match="got a device twice"):
        DeviceMesh((2,), ("data",), devices=jax.devices()[:1] * 2)
    grid = np.array(jax.devices()).reshape(4, 2)  # a grid of devices is read flat
    assert DeviceMesh((4, 2), ("data", "model"), devices=grid).devices.tolist() == grid.tolist()
    with pytest.raises(LayoutError, match=r"has no axis 'batch'; use one of \('data', 'model'\)"):
        DeviceMesh((4, 2), ("data", "model")).axis_size("batch")
    with pytest.raises(LayoutError, match="one axis name per axis"):
        DeviceMesh((4, 2), ("data",))
    with pytest.raises(LayoutError, match="unique non-empty strings"):
        DeviceMesh((4, 2), ("data", "data"))
    layout_map = LayoutMap(DeviceMesh((4, 2), ("data", "model")))
    with pytest.raises(
        LayoutError, match=r"names the axis 'batch'.*Use one of \('data', 'model'\)"
    ):
        layout_map["dense/kernel"] = (None, "batch")
    with pytest.raises(LayoutError, match="splits over a mesh axis twice"):
        layout_map["dense/kernel"] = ("model", "model")
    layout_map["dense_9/kernel"] = ((), ("data", "model"))  # () splits over nothing, as None
    assert layout_map["dense_9/kernel"] == (None, ("data", "model"))
    with pytest.raises(LayoutError, match="not a regular expression"):
        layout_map["dense(/kernel"] = (None, "model")
    with pytest.raises(LayoutError, match="must be a tuple with one entry per axis"):
        layout_map["dense/kernel"] = "model"
    with pytest.raises(LayoutError, match="batch_dim_name 'batch' is not an axis"):
        ModelParallelStrategy(layout_map, batch_dim_name="batch")
    with pytest.raises(LayoutError, match="does not take shard_parameters"):
        ModelParallelStrategy(layout_map, shard_parameters=True)
    with pytest.raises(LayoutError, match="takes a phalanx.distribute.LayoutMap"):
        ModelParallelStrategy({"dense/kernel": (None, "model")})
    with pytest.raises(LayoutError, match="names an axis 'replica'"):
        ModelParallelStrategy(LayoutMap(DeviceMesh((4, 2), ("replica", "model"))))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (("model",), r"'dense/kernel' of shape \(24, 64\).*\('model',\): the spec has 1 entries"),
        ((None, None, "model"), r"'dense/kernel' of shape \(24, 64\).*the variable 2 axes"),
        (("model", None), None),  # 24 divides by 4: fine
        (("data", "model"), None),
    ],
)
def test_a_spec_that_does_not_fit_names_the_variable(mlp_data, spec, message):
    x, y = mlp_data
    model = _mlp(_strategy((2, 4), {"dense/kernel": spec}))
    if message is None:
        model.fit(x[:32], y[:32], batch_size=GLOBAL_BATCH, epochs=1, verbose=0)
        return
    with pytest.raises(LayoutError, match=message):
        model.fit(x[:32], y[:32], batch_size=GLOBAL_BATCH, epochs=1, verbose=0)


def test_a_key_that_matches_no_variable_is_warned_about_and_training_stays_whole(mlp_data):
    x, y = mlp_data
    strategy = _strategy((4, 2), {"Dense.*kernel": (None, "model"), "dense_2/kernel": (None, None)})
    model = _mlp(strategy)
    with pytest.warns(UserWarning, match=r"LayoutMap keys \['Dense\.\*kernel'\] match none of"):
        model.fit(x[:32], y[:32], batch_size=GLOBAL_BATCH, epochs=1, verbose=0)
    assert _local_shape(_params(model)["dense/kernel"]) == (24, 64)  # whole: nothing split


def test_an_axis_that_does_not_divide_names_the_variable(mlp_data):
    x, _ = mlp_data
    strategy = _strategy((2, 4), {"dense/kernel": (None, "model")})
    with strategy.scope():
        model = phalanx.Sequential([layers.Input(shape=(24,)), layers.Dense(10, name="dense")])
        model.compile(optimizer="sgd", loss="mse")
    with pytest.raises(
        LayoutError,
        match=r"'dense/kernel' of shape \(24, 10\) matched LayoutMap key 'dense/kernel' with "
        r"spec \(None, 'model'\): axis 1 has 10 elements, which do not split over the 4 devices",
    ):
        model.fit(x[:32], np.zeros((32, 10), np.float32), batch_size=GLOBAL_BATCH, verbose=0)


def test_dataset_and_streamed_batches_with_batch_norm_equal_mirrored(mlp_data):
    """The replicas are the "data" groups: BatchNormalization's statistics are averaged over
    them as MirroredStrategy over as many devices does; a Dataset, batches streamed from a
    generator (not resident), steps_per_execution=2."""
    x, y = mlp_data
    dataset = phalanx.data.Dataset.from_tensor_slices((x, y)).batch(GLOBAL_BATCH)

    def batches():
        return ((x[i : i + GLOBAL_BATCH], y[i : i + GLOBAL_BATCH]) for i in range(0, 128, 32))

    results = []
    for strategy in (phalanx.MirroredStrategy(jax.devices()[:4]), _strategy((4, 2))):
        with strategy.scope():
            model = phalanx.Sequential(
                [
                    layers.Input(shape=(24,)),
                    layers.Dense(64, activation="relu", name="dense"),
                    layers.BatchNormalization(),
                    layers.Dense(32, activation="relu", name="dense_1"),
                    layers.Dense(8, name="dense_2"),
                ]
            )
            _compile(model, steps_per_execution=2)
        history = model.fit(dataset, epochs=2, verbose=0).history
        streamed = model.fit(batches(), epochs=1, verbose=0).history
        history = {k: v + streamed[k] for k, v in history.items()}
        out = model.predict((b[0] for b in batches()), verbose=0)
        results.append((model, history, out))
    (mirrored, h_mirrored, p_mirrored), (layout, h_layout, p_layout) = results
    _assert_same(mirrored, h_mirrored, layout, h_layout)
    np.testing.assert_allclose(p_layout, p_mirrored, atol=1e-5)
    assert ("train", False) in layout._programs  # the streamed program ran


def _gathered_shapes(model, x, y):
    """The result shapes of the all-gathers in ``fit``'s compiled training step."""
    import re

    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    strategy = model.distribute_strategy
    stacked = NamedSharding(strategy.mesh, P(None, "replica"))
    ones = np.ones(GLOBAL_BATCH, np.float32)
    xs = tuple(
        jax.ShapeDtypeStruct((1, GLOBAL_BATCH, *a.shape[1:]), a.dtype, sharding=stacked)
        for a in (x[:GLOBAL_BATCH], y[:GLOBAL_BATCH], ones, ones)
    )
    steps = 1  # static since the programs compile one length each (the bare step at 1)
    text = model._program("train", False).lower(model._state, None, xs, steps).compile().as_text()
    shapes = set()
    for line in text.splitlines():
        if " all-gather(" in line or " all-gather-start(" in line:
            result = line.split("=", 1)[1].split("all-gather")[0]
            shapes |= {
                tuple(int(d) for d in s.split(",")) for s in re.findall(r"\[([\d,]+)\]", result)
            }
    return shapes


def test_xla_computes_with_the_pieces_not_gathered_kernels(mlp_data):
    """The model axis splits the matmuls: no kernel is gathered whole (activations are,
    between two column-split layers). A spec over "data" too is gathered over the replicas
    for the step, which the same check sees."""
    x, y = mlp_data
    model = _mlp(_strategy((2, 4)))
    model.fit(x[:32], y[:32], batch_size=GLOBAL_BATCH, verbose=0)
    gathered = _gathered_shapes(model, x, y)
    kernels = {(24, 64), (64, 32), (32, 8), (24, 16), (64, 8), (8, 8)}  # whole, or one piece
    assert not gathered & kernels, gathered
    specs = dict(_MLP_SPECS, **{"dense(_1)?/kernel": ("data", "model")})
    zero3 = _mlp(_strategy((2, 4), specs))
    zero3.fit(x[:32], y[:32], batch_size=GLOBAL_BATCH, verbose=0)
    assert (24, 16) in _gathered_shapes(zero3, x, y)  # dense/kernel: (12, 16) pieces gathered
