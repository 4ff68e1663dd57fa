"""phalanx's one-file checkpoint format (``checkpoint/_file.py``) beside orbax's.

Arrays whole on the host are written as one file; arrays split over processes
(simulated here by ``host_arrays`` returning None) by orbax. Restores read
both, a manager keeps numbering and deleting across both (a directory written
by an earlier phalanx, with orbax), and a damaged file is an error that names
it, never garbage weights.
"""

from __future__ import annotations

import os

import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import phalanx
from phalanx import layers
from phalanx.checkpoint import Checkpoint, CheckpointManager, _background, _file, latest_checkpoint
from phalanx.errors import CheckpointError, CheckpointNotFoundError

X = np.random.default_rng(0).normal(size=(64, 6)).astype(np.float32)
Y = (np.abs(X[:, :4]).argmax(1)).astype(np.int32)


def _model():
    model = phalanx.Sequential(
        [
            layers.Input(shape=(6,)),
            layers.Dense(8, activation="relu"),
            layers.Dropout(0.3),
            layers.Dense(4, activation="softmax"),
        ]
    )
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def _trained(epochs=1):
    model = _model()
    model.fit(X, Y, batch_size=16, epochs=epochs, verbose=0)
    return model


def _same(a, b):
    for u, v in zip(a.get_weights(), b.get_weights(), strict=True):
        np.testing.assert_array_equal(u, v)


@pytest.fixture
def orbax_writes(monkeypatch):
    """Saves take orbax's path, as when arrays are split over processes."""
    monkeypatch.setattr(_background, "host_arrays", lambda arrays: None)


def test_every_dtype_and_shape_round_trips_bit_exactly(tmp_path):
    arrays = {
        "a": {
            "f32": np.arange(12, dtype=np.float32).reshape(3, 4),
            "bf16": np.array([1.5, -2.25, 3e38], dtype=ml_dtypes.bfloat16),
            "f16": np.array([np.inf, -0.0, np.nan], dtype=np.float16),
            "u32": np.array([0, 2**32 - 1], dtype=np.uint32),
            "scalar": np.int64(-7),
            "empty": np.zeros((0, 5), np.float32),
            "strided": np.arange(20.0)[::3],
            "bool": np.array([True, False]),
        },
        "b": {"jax": jnp.ones((2, 2), jnp.bfloat16)},
    }
    _file.write(str(tmp_path / "c"), arrays, {"format": "x", "n": [1, 2]})
    assert os.listdir(tmp_path) == ["c"] and os.listdir(tmp_path / "c") == [_file.FILE]
    assert _file.read_meta(str(tmp_path / "c")) == {"format": "x", "n": [1, 2]}
    got = _file.read_arrays(str(tmp_path / "c"), ["a", "b"])
    for name, tree in arrays.items():
        for key, want in tree.items():
            want = np.asarray(want)
            assert got[name][key].dtype == want.dtype and got[name][key].shape == want.shape
            np.testing.assert_array_equal(got[name][key], want)


def test_a_host_copyable_model_is_saved_as_one_file_and_restores_bit_exactly(tmp_path):
    model = _trained()
    path = Checkpoint(model=model).save(tmp_path / "ckpt")
    assert os.listdir(path) == [_file.FILE]
    fresh = _model()
    Checkpoint(model=fresh).restore(path)
    _same(model, fresh)
    for m in (model, fresh):
        m.fit(X, Y, batch_size=16, epochs=2, initial_epoch=1, verbose=0)
    _same(model, fresh)


def test_checkpoints_written_by_orbax_still_restore_and_a_manager_continues_them(
    tmp_path, monkeypatch
):
    """A directory of an earlier phalanx (orbax's format): restored, numbered on, and its old
    checkpoints deleted by max_to_keep once newer one-file checkpoints are committed."""
    model = _trained()
    with monkeypatch.context() as patch:
        patch.setattr(_background, "host_arrays", lambda arrays: None)
        old = CheckpointManager(tmp_path, max_to_keep=2, checkpoint=Checkpoint(model=model))
        for _ in range(2):
            old.save()
        old.close()
    assert os.path.isdir(tmp_path / "ckpt_2" / "meta")  # orbax's composite folder

    fresh = _model()
    manager = CheckpointManager(tmp_path, max_to_keep=2, checkpoint=Checkpoint(model=fresh))
    assert manager.restore_or_initialize() == str(tmp_path / "ckpt_2")
    _same(model, fresh)
    assert manager.save() == str(tmp_path / "ckpt_3")
    assert sorted(os.listdir(tmp_path)) == ["ckpt_2", "ckpt_3"]
    manager.save()
    assert sorted(os.listdir(tmp_path)) == ["ckpt_3", "ckpt_4"]
    assert os.listdir(tmp_path / "ckpt_4") == [_file.FILE]


def test_a_split_save_is_written_by_orbax_and_restores(tmp_path, orbax_writes):
    model = _trained()
    for async_save in (False, True):
        ckpt = Checkpoint(model=model, async_save=async_save)
        path = ckpt.write(tmp_path / f"split-{async_save}")
        ckpt.close()
        assert os.path.isdir(os.path.join(path, "meta"))
        fresh = _model()
        Checkpoint(model=fresh).restore(path)
        _same(model, fresh)


def test_a_save_killed_before_its_rename_is_ignored_then_deleted(tmp_path):
    model = _trained()
    manager = CheckpointManager(tmp_path, max_to_keep=1, checkpoint=Checkpoint(model=model))
    first = manager.save()
    # What a process killed mid-write leaves: a temporary folder with part of a file.
    leftover = tmp_path / f"ckpt_2{_file.TMP}dead"
    leftover.mkdir()
    (leftover / _file.FILE).write_bytes(_file.MAGIC)
    assert latest_checkpoint(tmp_path) == first
    again = CheckpointManager(tmp_path, max_to_keep=1, checkpoint=Checkpoint(model=_model()))
    assert again.latest_checkpoint == first and again.checkpoints == [first]
    assert again.save() == str(tmp_path / "ckpt_2")  # the number the dead save had
    assert sorted(os.listdir(tmp_path)) == ["ckpt_2", leftover.name]
    again.save()
    assert sorted(os.listdir(tmp_path)) == ["ckpt_3"]  # the leftover went with its number


def _damage(path, how):
    file = os.path.join(path, _file.FILE)
    with open(file, "rb") as f:
        data = f.read()
    if how == "truncated":
        data = data[:-5]
    elif how == "magic":
        data = b"NOTPHALX" + data[8:]
    elif how == "header":
        data = data[:16] + b"}" + data[17:]
    elif how == "longer":
        data += b"\0"
    with open(file, "wb") as f:
        f.write(data)


@pytest.mark.parametrize("how", ["truncated", "magic", "header", "longer"])
def test_a_damaged_file_is_an_error_naming_it_before_any_weight_changes(tmp_path, how):
    model = _trained()
    path = Checkpoint(model=model).save(tmp_path / "ckpt")
    _damage(path, how)
    target = _trained(epochs=2)
    before = target.get_weights()
    with pytest.raises(CheckpointError, match=r"state\.phalanx' is damaged: .* restore an earlier"):
        Checkpoint(model=target).restore(path)
    for u, v in zip(target.get_weights(), before, strict=True):
        np.testing.assert_array_equal(u, v)


def test_an_empty_checkpoint_folder_is_not_a_checkpoint(tmp_path):
    (tmp_path / "ckpt-1").mkdir()
    assert latest_checkpoint(tmp_path) is None
    with pytest.raises(CheckpointNotFoundError, match="No checkpoint at"):
        Checkpoint(model=_model()).restore(tmp_path / "ckpt-1")


def test_a_write_that_fails_leaves_the_checkpoint_there_whole(tmp_path, monkeypatch):
    model = _trained()
    ckpt = Checkpoint(model=model)
    path = ckpt.write(tmp_path / "c")
    saved = model.get_weights()
    model.fit(X, Y, batch_size=16, verbose=0)

    def full_disk(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_file, "commit", full_disk)
    with pytest.raises(OSError, match="No space left"):
        ckpt.write(path)
    assert os.listdir(tmp_path) == ["c"]  # no temporary folder left behind
    fresh = _model()
    Checkpoint(model=fresh).restore(path)
    for u, v in zip(fresh.get_weights(), saved, strict=True):
        np.testing.assert_array_equal(u, v)


def _with_table(path, table):
    """Rewrites the checkpoint's array table (as a hostile file would have it: its header's
    CRC32C recomputed, so that only the table's checks can refuse it)."""
    import json

    import crc32c

    file = os.path.join(path, _file.FILE)
    with open(file, "rb") as f:
        raw = f.read()
    length = int.from_bytes(raw[8:16], "little")
    header = json.loads(raw[20 : 20 + length])
    data = raw[-header["data_bytes"] :]
    encoded = json.dumps(dict(header, arrays={"m": table})).encode()
    size = len(encoded).to_bytes(8, "little")
    crc = crc32c.crc32c(size + encoded).to_bytes(4, "little")
    padding = b"\0" * (-(20 + len(encoded)) % 64)
    with open(file, "wb") as f:
        f.write(raw[:8] + size + crc + encoded + padding + data)


@pytest.mark.parametrize(
    "table, says",
    [
        ([["a0", "float64", [-1, -4], 0, 32, 0]], r"shape \[-1, -4\]"),
        ([["a0", "no-such-type", [4], 0, 32, 0]], "unknown dtype 'no-such-type'"),
        ([["a0", "float64", [4], 0, 32]], "array table is not phalanx's"),
        ([["a0", "float64", [5], 0, 40, 0]], "lies outside the data"),
        ([["a0", "float64", [4], 8, 32, 0]], "lies outside the data"),
        ([["a0", "float32", [4], 0, 32, 0]], r"32 bytes for shape \[4\] float32"),
        ([["a0", "object", [4], 0, 32, 0]], "dtype 'object', not one of numbers"),
        # 2**32 * 2**32 wraps to 0 in int64: the product is taken in Python's ints
        ([["a0", "float64", [2**32, 2**32, 0], 0, 0, 0]], "too large for any array"),
        ([["a0", "float64", [2**32, 2**32], 0, 0, 0]], "too large for any array"),
        (
            [["a0", "float64", [4], 0, 32, 123]],
            r"array m/a0 \(float64 \[4\]\) does not match its CRC32C",
        ),
        ("not a table", "array table is not phalanx's"),
    ],
)
def test_a_hostile_array_table_is_refused_before_reading(tmp_path, table, says):
    path = str(tmp_path / "c")
    _file.write(path, {"m": {"a0": np.arange(4.0)}}, {"format": "x"})
    _with_table(path, table)
    with pytest.raises(CheckpointError, match=says):
        _file.read_arrays(path, ["m"])


def _with_header_text(path, text):
    """Replaces the checkpoint's header by ``text`` (bytes), with a matching CRC32C."""
    import crc32c

    file = os.path.join(path, _file.FILE)
    size = len(text).to_bytes(8, "little")
    crc = crc32c.crc32c(size + text).to_bytes(4, "little")
    with open(file, "wb") as f:
        f.write(_file.MAGIC + size + crc + text + b"\0" * (-(20 + len(text)) % 64))


@pytest.mark.parametrize("deep", [600, 200_000])
def test_a_header_nested_too_deep_is_refused_not_a_recursion_error(tmp_path, deep):
    path = str(tmp_path / "c")
    _file.write(path, {}, {"format": "x"})
    nested = b"[" * deep + b"]" * deep
    _with_header_text(path, b'{"meta": {"x": ' + nested + b'}, "arrays": {}, "data_bytes": 0}')
    with pytest.raises(CheckpointError, match=r"state\.phalanx' is damaged: its header (nests|is)"):
        _file.read_meta(path)


@pytest.mark.parametrize(
    "text", [b"[]", b'"x"', b"null", b'{"meta": null, "arrays": {}, "data_bytes": 0}']
)
def test_a_header_of_another_shape_is_refused(tmp_path, text):
    path = str(tmp_path / "c")
    _file.write(path, {}, {"format": "x"})
    _with_header_text(path, text)
    with pytest.raises(CheckpointError, match="its header is not phalanx's"):
        _file.read_meta(path)


def test_a_file_of_the_first_version_without_crcs_still_reads(tmp_path):
    """phalanx before the CRCs wrote PHALANX\\x01, rows of 5 fields and no header CRC."""
    import json

    data = np.arange(4.0)
    header = json.dumps(
        {
            "meta": {"format": "x"},
            "arrays": {"m": [["a0", "float64", [4], 0, 32]]},
            "data_bytes": 32,
        }
    ).encode()
    head = _file.MAGIC_V1 + len(header).to_bytes(8, "little") + header
    head += b"\0" * (-len(head) % 64)
    os.makedirs(tmp_path / "c")
    (tmp_path / "c" / _file.FILE).write_bytes(head + data.tobytes())
    assert _file.read_meta(str(tmp_path / "c")) == {"format": "x"}
    np.testing.assert_array_equal(_file.read_arrays(str(tmp_path / "c"), ["m"])["m"]["a0"], data)
