"""TensorBoard(profile_batch=...) traces steps with the JAX profiler; write_graph writes the config."""

import glob
import json
import os

import numpy as np
import pytest
from real_fit import X, Y
from tb_events import read_events

import phalanx
from phalanx import layers
from phalanx.callbacks import Callback, TensorBoard


class StepsSeen(Callback):
    """Records, at each execution's end, whether a profiler trace directory exists yet."""

    def __init__(self, log_dir):
        super().__init__()
        self.log_dir = log_dir
        self.traces = []

    def on_train_batch_end(self, batch, logs=None):
        self.traces.append(len(_trace_files(self.log_dir)))


def _trace_files(log_dir):
    return glob.glob(os.path.join(log_dir, "train", "plugins", "profile", "*", "*.xplane.pb"))


def _model(steps_per_execution=1):
    model = phalanx.Sequential([layers.Input(shape=(3,)), layers.Dense(2, activation="softmax")])
    model.compile(
        optimizer="sgd",
        loss="sparse_categorical_crossentropy",
        steps_per_execution=steps_per_execution,
    )
    return model


@pytest.mark.parametrize(
    ("profile_batch", "spe", "stopped_after"),
    [((3, 5), 1, 5), (4, 1, 4), ((3, 5), 2, 6)],
)
def test_profile_batch_writes_a_trace_of_those_steps(tmp_path, profile_batch, spe, stopped_after):
    log_dir = str(tmp_path)
    seen = StepsSeen(log_dir)
    board = TensorBoard(log_dir=log_dir, profile_batch=profile_batch)
    # 2 epochs of 4 steps: steps 1..8 across epochs, as Keras counts them.
    _model(spe).fit(X, Y, batch_size=len(X) // 4, epochs=2, callbacks=[board, seen], verbose=0)
    files = _trace_files(log_dir)
    assert len(files) == 1 and os.path.getsize(files[0]) > 0  # TensorBoard's profile plugin
    assert glob.glob(os.path.join(log_dir, "train", "plugins", "profile", "*", "*.trace.json.gz"))
    # The trace was written when the execution holding the last profiled step ended.
    steps_done = [spe * (i + 1) for i in range(len(seen.traces))]
    first_with_trace = steps_done[seen.traces.index(1)]
    assert first_with_trace == stopped_after


def test_a_trace_still_running_at_train_end_is_stopped(tmp_path):
    board = TensorBoard(log_dir=str(tmp_path), profile_batch=(2, 100))
    _model().fit(X, Y, batch_size=len(X) // 4, epochs=1, callbacks=[board], verbose=0)
    assert len(_trace_files(str(tmp_path))) == 1


@pytest.mark.parametrize("bad", [-1, (5, 2), (0, 3), "x", (1, 2, 3), 1.5, True])
def test_bad_profile_batch_is_refused(bad):
    with pytest.raises(ValueError, match="profile_batch must be 0 \\(off\\), a positive step N"):
        TensorBoard(profile_batch=bad)


def test_profile_batch_keras_forms():
    for value in (0, 7, (2, 4), [2, 4], "2,4"):
        TensorBoard(profile_batch=value)


def _texts(directory):
    out = {}
    for event in read_events(directory):
        for value in event.summary.value:
            if value.metadata.plugin_data.plugin_name == "text":
                out[value.tag] = value.tensor.string_val[0].decode()
    return out


def test_write_graph_writes_the_functional_model_config_as_text(tmp_path):
    inputs = phalanx.Input(shape=(3,), name="features")
    hidden = layers.Dense(4, activation="relu", name="hidden")(inputs)
    out = layers.Dense(2, activation="softmax")(layers.Concatenate()([hidden, inputs]))
    model = phalanx.Model(inputs, out)
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    model.fit(X, Y, batch_size=8, callbacks=[TensorBoard(log_dir=str(tmp_path))], verbose=0)
    texts = _texts(os.path.join(tmp_path, "train"))
    text = next(v for k, v in texts.items() if k.startswith("model_config"))
    config = json.loads(text.strip("`\n"))
    assert config["class_name"] == "Functional"
    by_name = {layer["name"]: layer for layer in config["config"]["layers"]}
    assert by_name["hidden"]["config"]["units"] == 4
    assert by_name["hidden"]["config"]["activation"] == "relu"
    # Keras 3's to_json: each call's args with the tensors' keras_history
    (node,) = by_name["concatenate"]["inbound_nodes"]
    histories = [t["config"]["keras_history"] for t in node["args"][0]]
    assert histories == [["hidden", 0, 0], ["features", 0, 0]]


def test_write_graph_false_writes_no_config(tmp_path):
    model = _model()
    board = TensorBoard(log_dir=str(tmp_path), write_graph=False)
    model.fit(X, Y, batch_size=8, callbacks=[board], verbose=0)
    assert not _texts(os.path.join(tmp_path, "train"))
    assert np.isfinite(model.evaluate(X, Y, verbose=0))


def test_the_trace_reaches_a_remote_log_dir():
    log_dir = "memory://tensorboard_profile_test"
    board = TensorBoard(log_dir=log_dir, profile_batch=(2, 3))
    _model().fit(X, Y, batch_size=8, epochs=1, callbacks=[board], verbose=0)
    uploaded = phalanx.io.gfile.glob(f"{log_dir}/train/plugins/profile/*/*.xplane.pb")
    assert len(uploaded) == 1
