"""``model.summary()`` reports bytes per device after Keras's lines: parameters, optimizer
state, and XLA's memory analysis of the compiled training step."""

import re

import jax
import numpy as np
import pytest

import phalanx
from phalanx import layers
from phalanx.errors import FitInputError
from phalanx.models._memory import readable_size

# Dense(64 -> 256) and Dense(256 -> 10), float32: 19,210 parameters.
KERNEL_1, BIAS_1, KERNEL_2, BIAS_2 = 64 * 256 * 4, 256 * 4, 256 * 10 * 4, 10 * 4
WHOLE = KERNEL_1 + BIAS_1 + KERNEL_2 + BIAS_2
# On 2 sharded devices each kernel is split on its axis of 256; the biases (under 1024
# elements) stay whole on each device.
SHARDED_2 = KERNEL_1 // 2 + BIAS_1 + KERNEL_2 // 2 + BIAS_2


def _model(devices: int, shard: bool, *, compiled: bool = True):
    strategy = phalanx.MirroredStrategy(jax.devices()[:devices], shard_parameters=shard)
    with strategy.scope():
        model = phalanx.Sequential(
            [layers.Input(shape=(64,)), layers.Dense(256, activation="relu"), layers.Dense(10)]
        )
        if compiled:
            model.compile(
                optimizer="adam", loss="sparse_categorical_crossentropy", steps_per_execution=2
            )
    return model


def _data(n: int = 128):
    rng = np.random.default_rng(0)
    return rng.normal(size=(n, 64)).astype(np.float32), rng.integers(0, 10, n)


def _summary(model, **kwargs) -> str:
    lines = []
    model.summary(print_fn=lines.append, **kwargs)
    assert len(lines) == 1  # one call, as before: the table and the memory lines together
    return lines[0]


def _line(text: str, label: str) -> str:
    return next(line for line in text.splitlines() if line.strip().startswith(label))


def _kib(text: str, label: str) -> tuple[float, float]:
    """(per device, whole) KB of a "Parameters: X KB of Y KB" line."""
    per, whole = re.findall(r"([\d.]+) KB", _line(text, label))[:2]
    return float(per), float(whole)


def test_keras_lines_stay_and_memory_follows_them():
    text = _summary(_model(1, False, compiled=False))
    lines = text.splitlines()
    assert lines[0] == 'Model: "sequential"'
    at = lines.index(" Non-trainable params: 0 (0.00 B)")
    assert lines[at - 2] == f" Total params: 19,210 ({readable_size(WHOLE)})"
    assert (
        lines[at + 1] == " Memory per device (MirroredStrategy, 1 device, parameters replicated):"
    )
    assert lines[at + 2] == (
        f"   Parameters: {readable_size(WHOLE)} of {readable_size(WHOLE)} (computed from shapes)"
    )
    assert lines[at + 3] == "   Optimizer state: none until compile()"
    assert "Training step: not compiled yet" in lines[at + 4]


def test_parameters_are_count_times_4_replicated_and_split_over_2_sharded_devices():
    replicated = _summary(_model(2, False))
    assert f"Parameters: {readable_size(WHOLE)} of {readable_size(WHOLE)} (computed" in replicated
    sharded = _summary(_model(2, True))
    assert "2 devices, parameters sharded" in sharded
    assert f"Parameters: {readable_size(SHARDED_2)} of {readable_size(WHOLE)} (computed" in sharded
    per, whole = _kib(sharded, "Parameters:")
    assert 0.45 < per / whole < 0.55


def test_optimizer_state_is_adams_two_moments_and_splits_alike():
    rep_per, rep_whole = _kib(_summary(_model(2, False)), "Optimizer state:")
    sh_per, sh_whole = _kib(_summary(_model(2, True)), "Optimizer state:")
    assert rep_per == rep_whole == sh_whole
    assert 2 * WHOLE / 1024 <= rep_whole < 2 * WHOLE / 1024 + 0.1  # mu, nu and a step count
    assert 0.45 < sh_per / sh_whole < 0.55


def test_after_fit_the_figures_come_from_the_placed_arrays_and_xla():
    x, y = _data()
    texts = {}
    for shard in (False, True):
        model = _model(2, shard)
        before = _summary(model)
        model.fit(x, y, batch_size=32, epochs=1, verbose=0)
        texts[shard] = text = _summary(model)
        # the arrays as placed agree with the shapes' prediction
        assert _kib(text, "Parameters:") == _kib(before, "Parameters:")
        assert _kib(text, "Optimizer state:") == _kib(before, "Optimizer state:")
        assert "(the placed arrays)" in _line(text, "Parameters:")
        assert "global batch 32, 2 steps per execution" in _line(text, "Training step")
    args = {k: float(re.search(r"arguments ([\d.]+) KB", t)[1]) for k, t in texts.items()}
    temp = {k: float(re.search(r"temporaries ([\d.]+) KB", t)[1]) for k, t in texts.items()}
    state = {
        k: sum(_kib(t, label)[0] for label in ("Parameters:", "Optimizer state:"))
        for k, t in texts.items()
    }
    for shard in (False, True):
        assert args[shard] >= state[shard]  # the state is among the program's arguments
        assert temp[shard] > 0
    assert args[True] < 0.7 * args[False]
    assert "gathered parameters" in texts[True] and "gathered parameters" not in texts[False]


def test_training_batch_compiles_the_step_before_fit():
    x, y = _data()
    model = _model(2, True)
    text = _summary(model, training_batch=(x[:16], y[:16]))
    assert "global batch 16, 2 steps per execution" in text
    assert "(the placed arrays)" in text
    before = model.get_weights()
    model.fit(x, y, batch_size=16, epochs=1, verbose=0)  # and fit trains from there as usual
    assert not np.allclose(before[0], model.get_weights()[0])


def test_training_batch_is_checked():
    x, y = _data()
    with pytest.raises(FitInputError, match=r"takes \(x, y\) or \(x, y, sample_weight\)"):
        _model(1, False).summary(training_batch=[x, y])
    for x_bad in ({}, 3.0):  # no arrays, no batch axis
        with pytest.raises(FitInputError, match=r"needs x with a batch axis"):
            _model(1, False).summary(training_batch=(x_bad, y))
    with pytest.raises(RuntimeError, match=r"compile\(\) before summary"):
        _model(1, False, compiled=False).summary(training_batch=(x, y))


def test_functional_transformer_block_keeps_its_connections_column():
    tokens = phalanx.Input(shape=(8,), dtype="int32")
    h = layers.Embedding(64, 32)(tokens)
    h = layers.LayerNormalization()(layers.Add()([h, layers.MultiHeadAttention(4, 8)(h, h)]))
    model = phalanx.Model(tokens, layers.Dense(4)(layers.GlobalAveragePooling1D()(h)))
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    x = np.random.default_rng(0).integers(0, 64, (32, 8)).astype(np.int32)
    model.fit(x, np.zeros(32, np.int32), batch_size=8, verbose=0)
    text = _summary(model)
    assert "Connected to" in text and "multi_head_attention" in text
    count = model.count_params()
    assert f"Parameters: {readable_size(4 * count)} of {readable_size(4 * count)}" in text
    assert "global batch 8, 1 step per execution" in text


def test_model_parallel_layout_is_named_and_kernels_split_over_the_model_axis():
    from phalanx.distribute import DeviceMesh, LayoutMap, ModelParallelStrategy

    mesh = DeviceMesh((1, 2), ("data", "model"), devices=jax.devices()[:2])
    layout_map = LayoutMap(mesh)
    layout_map["dense.*kernel"] = (None, "model")
    strategy = ModelParallelStrategy(layout_map, batch_dim_name="data")
    with strategy.scope():
        model = phalanx.Sequential(
            [layers.Input(shape=(64,)), layers.Dense(256, activation="relu"), layers.Dense(10)]
        )
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    before = _summary(model)  # computed from shapes, by the layout fit will place them with
    x, y = _data()
    model.fit(x, y, batch_size=32, epochs=1, verbose=0)
    text = _summary(model)
    header = _line(text, "Memory per device")
    assert "2 devices" in header
    assert "LayoutMap over a (1, 2) ('data', 'model') mesh" in header
    # Dense(256)'s kernel splits its 256 columns; Dense(10)'s 10 columns split in 2 too.
    per, whole = _kib(text, "Parameters:")
    assert whole == pytest.approx(WHOLE / 1024, abs=0.01)
    assert per == pytest.approx((KERNEL_1 // 2 + BIAS_1 + KERNEL_2 // 2 + BIAS_2) / 1024, abs=0.01)
    assert "(computed from shapes)" in _line(before, "Parameters:")
    for label in ("Parameters:", "Optimizer state:"):
        assert _kib(before, label) == _kib(text, label)
