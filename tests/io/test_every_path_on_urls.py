"""Every public function that takes a path, run on ``memory://`` (issue 27 item 7).

``_path_functions()`` finds them by their arguments' names in every public module,
so a new one without a runner here fails ``test_every_path_function_has_a_runner``.
Each runner writes or reads at a ``memory://`` URL through the public API and checks the
result is there; the working directory stays empty (``save_weights("memory://b/w.weights.h5")``
wrote a local folder named ``memory:`` before, and ``model.save`` raised).
"""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import uuid

import numpy as np
import pytest
from io_support import data, model

import phalanx
from phalanx import callbacks, checkpoint
from phalanx import data as pdata
from phalanx.errors import DatasetArgumentError, ExportError, UtilsArgumentError
from phalanx.io import gfile

# Argument names that hold a file or folder path.
_PATH_ARGUMENTS = {
    "path", "filepath", "filename", "filenames", "file_pattern", "pattern", "directory",
    "backup_dir", "checkpoint_dir", "file_prefix", "save_path", "log_dir", "src", "dst", "top",
    "name_or_path",
}  # fmt: skip

# Found by name but not file paths, or local by design (with the reason).
_NOT_URLS = {
    "phalanx.distribute._layout.LayoutMap.get": "a weight's path in the model",
    "phalanx.distribute._layout.LayoutMap.match": "a weight's path in the model",
    "phalanx.distribute._layout.LayoutMap.resolve": "a weight's path in the model",
    "phalanx.io.gfile.join": "joins strings; touches no file",
}


def _path_functions() -> set[str]:
    """``module.qualname`` of each public function, method or class taking a path."""
    found, seen = set(), set()
    modules = ["phalanx"] + [
        m.name
        for m in pkgutil.walk_packages(phalanx.__path__, "phalanx.")
        if not any(part.startswith("_") for part in m.name.split(".")[1:])
    ]
    for name in modules:
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", []):
            obj = getattr(module, attr, None)
            if inspect.isclass(obj):
                members = [(obj, obj.__init__)] + [
                    (f, f)
                    for klass in obj.__mro__
                    if klass.__module__.startswith("phalanx")
                    for a, f in ((a, getattr(f, "__func__", f)) for a, f in vars(klass).items())
                    if not a.startswith("_") and inspect.isfunction(f)
                ]
            elif inspect.isfunction(obj):
                members = [(obj, obj)]
            else:
                continue
            for owner, f in members:
                if id(owner) in seen:
                    continue
                seen.add(id(owner))
                try:
                    parameters = inspect.signature(f).parameters
                except (TypeError, ValueError):
                    continue
                if _PATH_ARGUMENTS & set(parameters):
                    found.add(f"{owner.__module__}.{owner.__qualname__}")
    return found


@pytest.fixture
def base(tmp_path, monkeypatch):
    """A fresh ``memory://`` folder; the working directory must stay empty."""
    monkeypatch.chdir(tmp_path)
    url = f"memory://phalanx-every-{uuid.uuid4().hex}"
    yield url
    assert os.listdir(tmp_path) == [], "a URL was written as a local path"
    if gfile.exists(url):
        gfile.rmtree(url)


def _weights_files(base):
    m = model()
    for name in ("w.weights.h5", "w.npz"):
        m.save_weights(f"{base}/{name}")
        other = model()
        other.load_weights(f"{base}/{name}")
        for a, b in zip(other.get_weights(), m.get_weights(), strict=True):
            np.testing.assert_array_equal(a, b)


def _keras_file(base):
    x, y = data()
    m = model()
    m.fit(x, y, batch_size=8, epochs=1, verbose=0)
    m.save(f"{base}/m.keras")
    loaded = phalanx.models.load_model(f"{base}/m.keras")
    assert int(loaded.optimizer.iterations) == 4
    for a, b in zip(loaded.get_weights(), m.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)


def _export(base):
    m = model()
    try:
        m.export(f"{base}/m.jax")
    except ExportError as e:  # JAX serializes with flatbuffers, an optional package
        assert "pip install flatbuffers" in str(e) and not gfile.exists(f"{base}/m.jax")
    else:
        assert gfile.exists(f"{base}/m.jax")


def _fit_callbacks(base):
    x, y = data()
    m = model()
    cbs = [
        callbacks.ModelCheckpoint(f"{base}/ckpt/e{{epoch}}.weights.h5"),
        callbacks.BackupAndRestore(f"{base}/backup", delete_checkpoint=False),
        callbacks.CSVLogger(f"{base}/log.csv"),
        callbacks.TensorBoard(f"{base}/tb"),
    ]
    m.fit(x, y, batch_size=8, epochs=2, verbose=0, callbacks=cbs)
    assert gfile.exists(f"{base}/ckpt/e2.weights.h5")
    assert gfile.listdir(f"{base}/backup")
    with gfile.GFile(f"{base}/log.csv") as f:
        assert f.read().count("\n") == 3
    assert gfile.glob(f"{base}/tb/train/events.out.tfevents.*")


def _checkpoints(base):
    ckpt = checkpoint.Checkpoint(model=model())  # compiled and built: a training state
    saved = ckpt.save(f"{base}/c/ckpt")
    written = ckpt.write(f"{base}/w/one")
    assert checkpoint.latest_checkpoint(f"{base}/c") == saved
    checkpoint.Checkpoint(model=model()).restore(saved).assert_consumed()
    checkpoint.Checkpoint(model=model()).read(written).assert_consumed()
    manager = checkpoint.CheckpointManager(ckpt, f"{base}/m", max_to_keep=1)
    assert manager.save() == manager.latest_checkpoint and gfile.exists(manager.latest_checkpoint)
    exits = []
    handler = checkpoint.PreemptionCheckpointHandler(ckpt, f"{base}/p", exit_fn=exits.append)
    try:
        handler.notify()  # a termination notice: save at the next boundary, then exit
        handler.run(lambda: None)
    finally:
        handler.close()
    assert exits == [42] and checkpoint.latest_checkpoint(f"{base}/p") is not None


def _records_and_files(base):
    with pdata.TFRecordWriter(f"{base}/a.tfrecord") as w:
        w.write(b"one")
    pdata.experimental.TFRecordWriter(f"{base}/b.tfrecord").write(
        pdata.Dataset.from_tensor_slices(np.array([b"two"]))
    )
    assert list(pdata.tf_record_iterator(f"{base}/a.tfrecord")) == [b"one"]
    files = pdata.Dataset.list_files(f"{base}/*.tfrecord", shuffle=False)
    assert [r.item() for r in pdata.TFRecordDataset(files)] == [b"one", b"two"]
    with gfile.GFile(f"{base}/t.txt", "w") as f:
        f.write("line\n")
    assert [r.item() for r in pdata.TextLineDataset(f"{base}/t.txt")] == [b"line"]
    with gfile.GFile(f"{base}/f.bin", "wb") as f:
        f.write(b"abcd")
    assert [r.item() for r in pdata.FixedLengthRecordDataset(f"{base}/f.bin", 2)] == [b"ab", b"cd"]
    pdata.Dataset.range(3).save(f"{base}/saved")
    assert [int(x) for x in pdata.Dataset.load(f"{base}/saved")] == [0, 1, 2]
    cached = pdata.Dataset.range(3).cache(f"{base}/cache/c")
    assert list(cached) == list(cached) == [0, 1, 2]
    assert gfile.glob(f"{base}/cache/c*")


def _readers_and_snapshot(base):
    with pdata.TFRecordWriter(f"{base}/r.tfrecord") as w:
        w.write(b"one")
        w.write(b"two")
    batches = pdata.experimental.make_tf_record_dataset(
        f"{base}/r.tfrecord", 2, num_epochs=1, shuffle=False
    )
    assert [b.tolist() for b in batches] == [[b"one", b"two"]]
    snap = pdata.Dataset.range(3).snapshot(f"{base}/snap")
    assert [int(x) for x in snap] == [0, 1, 2]  # written
    assert [int(x) for x in snap] == [0, 1, 2]  # read back
    assert gfile.glob(f"{base}/snap/*")


def _csv_readers(base):
    with gfile.GFile(f"{base}/t.csv", "w") as f:
        f.write('a,b\n1,"x\ny"\n2,z\n')
    rows = pdata.experimental.CsvDataset(f"{base}/t.csv", [[0], [""]], header=True)
    assert [(int(a), b.item()) for a, b in rows] == [(1, b"x\ny"), (2, b"z")]
    batches = pdata.experimental.make_csv_dataset(
        f"{base}/*.csv", 2, label_name="b", num_epochs=1, shuffle=False
    )
    ((features, label),) = list(batches)
    assert features["a"].tolist() == [1, 2] and label.tolist() == [b"x\ny", b"z"]


def _experimental_spellings(base):
    pdata.experimental.save(pdata.Dataset.range(3), f"{base}/x-saved")
    assert [int(x) for x in pdata.experimental.load(f"{base}/x-saved")] == [0, 1, 2]
    snap = pdata.Dataset.range(3).apply(pdata.experimental.snapshot(f"{base}/x-snap"))
    assert [int(x) for x in snap] == [0, 1, 2]
    assert gfile.glob(f"{base}/x-snap/*")


def _gfile(base):
    gfile.makedirs(f"{base}/g/deep")
    gfile.mkdir(f"{base}/g/other")
    with gfile.GFile(f"{base}/g/x", "wb") as f:
        f.write(b"x")
    gfile.copy(f"{base}/g/x", f"{base}/g/y")
    gfile.rename(f"{base}/g/y", f"{base}/g/z")
    assert gfile.exists(f"{base}/g/z") and gfile.isdir(f"{base}/g")
    assert gfile.stat(f"{base}/g/z").length == 1
    assert sorted(gfile.glob(f"{base}/g/*"))[-2:] == [f"{base}/g/x", f"{base}/g/z"]
    assert "x" in gfile.listdir(f"{base}/g")
    assert any("x" in files for _, _, files in gfile.walk(f"{base}/g"))
    gfile.remove(f"{base}/g/x")
    gfile.rmtree(f"{base}/g")
    assert not gfile.exists(f"{base}/g/z")


def _mnist_refuses_urls(base):
    with pytest.raises(DatasetArgumentError, match="not from a URL. Copy it here first"):
        phalanx.datasets.mnist.load_data(f"{base}/mnist.npz")


def _text_dirs_refuse_urls(base):
    with pytest.raises(UtilsArgumentError, match="not from a URL. Copy it here first"):
        phalanx.utils.text_dataset_from_directory(f"{base}/texts")


def _saving_functions(base):
    m = model()
    phalanx.saving.save_model(m, f"{base}/s.keras")
    phalanx.saving.save_weights(m, f"{base}/s.weights.h5")
    for name in ("s.keras", "s.weights.h5"):
        phalanx.saving.load_weights(m, f"{base}/{name}")


RUNNERS = {
    "phalanx.models._model.Model.save_weights": _weights_files,
    "phalanx.models._model.Model.load_weights": _weights_files,
    "phalanx.models._model.Model.save": _keras_file,
    "phalanx.models._model.Model.export": _export,
    "phalanx.saving._saving_api.load_model": _keras_file,
    "phalanx.saving._saving_api.save_model": _saving_functions,
    "phalanx.saving._saving_api.save_weights": _saving_functions,
    "phalanx.saving._saving_api.load_weights": _saving_functions,
    "phalanx.callbacks._model_checkpoint.ModelCheckpoint": _fit_callbacks,
    "phalanx.callbacks._backup_and_restore.BackupAndRestore": _fit_callbacks,
    "phalanx.callbacks._csv_logger.CSVLogger": _fit_callbacks,
    "phalanx.callbacks._tensorboard.TensorBoard": _fit_callbacks,
    "phalanx.checkpoint._checkpoint.Checkpoint.save": _checkpoints,
    "phalanx.checkpoint._checkpoint.Checkpoint.write": _checkpoints,
    "phalanx.checkpoint._checkpoint.Checkpoint.restore": _checkpoints,
    "phalanx.checkpoint._checkpoint.Checkpoint.read": _checkpoints,
    "phalanx.checkpoint._manager.CheckpointManager": _checkpoints,
    "phalanx.checkpoint._manager.latest_checkpoint": _checkpoints,
    "phalanx.checkpoint._preemption.PreemptionCheckpointHandler": _checkpoints,
    "phalanx.io._tfrecord.TFRecordWriter": _records_and_files,
    "phalanx.data.experimental.TFRecordWriter": _records_and_files,
    "phalanx.io._tfrecord.tf_record_iterator": _records_and_files,
    "phalanx.data._dataset.Dataset.list_files": _records_and_files,
    "phalanx.data._dataset.Dataset.cache": _records_and_files,
    "phalanx.data._dataset.Dataset.save": _records_and_files,
    "phalanx.data._dataset.Dataset.load": _records_and_files,
    "phalanx.data._dataset.Dataset.snapshot": _readers_and_snapshot,
    "phalanx.data._readers.make_tf_record_dataset": _readers_and_snapshot,
    "phalanx.data._csv.CsvDataset": _csv_readers,
    "phalanx.data.experimental.save": _experimental_spellings,
    "phalanx.data.experimental.load": _experimental_spellings,
    "phalanx.data.experimental.snapshot": _experimental_spellings,
    "phalanx.data._csv.make_csv_dataset": _csv_readers,
    "phalanx.data._sources.FileSourceDataset": _records_and_files,
    "phalanx.data._record_datasets.TFRecordDataset": _records_and_files,
    "phalanx.data._record_datasets.TextLineDataset": _records_and_files,
    "phalanx.data._record_datasets.FixedLengthRecordDataset": _records_and_files,
    "phalanx.io.gfile.exists": _gfile,
    "phalanx.io.gfile.isdir": _gfile,
    "phalanx.io.gfile.glob": _gfile,
    "phalanx.io.gfile.makedirs": _gfile,
    "phalanx.io.gfile.mkdir": _gfile,
    "phalanx.io.gfile.listdir": _gfile,
    "phalanx.io.gfile.remove": _gfile,
    "phalanx.io.gfile.rmtree": _gfile,
    "phalanx.io.gfile.rename": _gfile,
    "phalanx.io.gfile.copy": _gfile,
    "phalanx.io.gfile.stat": _gfile,
    "phalanx.io.gfile.walk": _gfile,
    "phalanx.datasets.mnist.load_data": _mnist_refuses_urls,
    "phalanx.utils._text_dataset.text_dataset_from_directory": _text_dirs_refuse_urls,
}


def test_every_path_function_has_a_runner():
    found = _path_functions()
    missing = found - RUNNERS.keys() - _NOT_URLS.keys()
    assert not missing, f"public functions taking a path without a memory:// runner: {missing}"
    stale = (RUNNERS.keys() | _NOT_URLS.keys()) - found
    assert not stale, f"runners for names that are gone or renamed: {stale}"


@pytest.mark.parametrize(
    "runner", sorted(set(RUNNERS.values()), key=lambda f: f.__name__), ids=lambda f: f.__name__
)
def test_on_memory_urls(base, runner):
    runner(base)
