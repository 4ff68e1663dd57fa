"""Checkpoint writes at the edges: what a save may replace, a commit that fails half-way,
a full disk or a folder not writable, files beside a manager's checkpoints, symbolic links,
relative paths and odd characters in paths.

Each test drives the public API (``Checkpoint``, ``CheckpointManager``, ``latest_checkpoint``,
``BackupAndRestore``); failures of the file system are simulated with monkeypatch.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import phalanx
from phalanx import layers
from phalanx.checkpoint import Checkpoint, CheckpointManager, _file, latest_checkpoint
from phalanx.errors import CheckpointError, CheckpointWriteError

X = np.random.default_rng(0).normal(size=(32, 3)).astype(np.float32)
Y = X.sum(1, keepdims=True)


def _model():
    model = phalanx.Sequential([layers.Input(shape=(3,)), layers.Dense(2), layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    return model


def _trained(epochs=1):
    model = _model()
    model.fit(X, Y, batch_size=8, epochs=epochs, verbose=0)
    return model


def _same(a, b):
    for u, v in zip(a.get_weights(), b.get_weights(), strict=True):
        np.testing.assert_array_equal(u, v)


def _restores_to(path, model):
    fresh = _model()
    Checkpoint(model=fresh).restore(path)
    _same(model, fresh)


def test_write_refuses_a_folder_of_other_files_and_leaves_it(tmp_path):
    """orbax's force=True deleted whatever folder was at the path: a user's folder too."""
    folder = tmp_path / "results"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "notes.txt").write_text("keep me")
    with pytest.raises(CheckpointError, match=r"holds files that are not a checkpoint"):
        Checkpoint(model=_trained()).write(folder)
    assert (folder / "sub" / "notes.txt").read_text() == "keep me"
    assert sorted(os.listdir(tmp_path)) == ["results"]  # no temporary folder either


def test_write_replaces_a_checkpoint_and_an_empty_folder(tmp_path):
    model = _trained()
    (tmp_path / "empty").mkdir()
    Checkpoint(model=model).write(tmp_path / "empty")
    _restores_to(tmp_path / "empty", model)
    model.fit(X, Y, batch_size=8, verbose=0)
    Checkpoint(model=model).write(tmp_path / "empty")  # a checkpoint there: replaced
    _restores_to(tmp_path / "empty", model)
    assert sorted(os.listdir(tmp_path)) == ["empty"]


@pytest.mark.parametrize("async_save", [False, True])
def test_a_file_at_or_above_the_path_is_a_clear_error_before_any_write(tmp_path, async_save):
    (tmp_path / "f").write_text("x")
    ckpt = Checkpoint(model=_trained(), async_save=async_save)
    with pytest.raises(CheckpointError, match=r"'.*/f': a file of that name exists"):
        ckpt.write(tmp_path / "f")
    with pytest.raises(CheckpointError, match=r"'.*/f' is a file, not a folder"):
        ckpt.write(tmp_path / "f" / "deeper" / "ckpt")
    ckpt.close()
    assert sorted(os.listdir(tmp_path)) == ["f"] and (tmp_path / "f").read_text() == "x"


def test_a_symbolic_link_is_refused_and_what_it_points_to_kept(tmp_path):
    model = _trained()
    real = Checkpoint(model=model).write(tmp_path / "real")
    os.symlink(real, tmp_path / "link")
    _restores_to(tmp_path / "link", model)  # reading through a link is fine
    model.fit(X, Y, batch_size=8, verbose=0)
    with pytest.raises(CheckpointError, match=r"'.*/link': it is a symbolic link"):
        Checkpoint(model=model).write(tmp_path / "link")
    assert os.path.islink(tmp_path / "link") and _file.is_file_checkpoint(real)


def test_a_commit_whose_rename_fails_puts_the_previous_checkpoint_back(tmp_path, monkeypatch):
    """The old checkpoint was deleted before the new one's rename: a failed rename lost both."""
    model = _trained()
    ckpt = Checkpoint(model=model)
    path = ckpt.write(tmp_path / "c")
    saved = _model()
    Checkpoint(model=saved).restore(path)
    model.fit(X, Y, batch_size=8, verbose=0)
    rename = os.rename

    def failing(src, dst):
        if _file.TMP in str(src) and "old-" not in str(src):  # the new checkpoint's rename
            raise OSError(5, "Input/output error")
        rename(src, dst)

    monkeypatch.setattr(os, "rename", failing)
    with pytest.raises(CheckpointWriteError, match=r"'.*/c' was not written .*Input/output"):
        ckpt.write(path)
    monkeypatch.undo()
    assert sorted(os.listdir(tmp_path)) == ["c"]
    _restores_to(path, saved)


def test_a_kill_while_the_old_checkpoint_is_deleted_leaves_no_half_folder(tmp_path, monkeypatch):
    """The new checkpoint is in place before the old one's delete starts."""
    model = _trained()
    ckpt = Checkpoint(model=model)
    path = ckpt.write(tmp_path / "c")
    model.fit(X, Y, batch_size=8, verbose=0)
    seen = []

    def killed(folder, *args, **kwargs):
        seen.append((str(folder), _file.is_file_checkpoint(path)))
        raise KeyboardInterrupt  # what a kill mid-delete looks like here

    monkeypatch.setattr(_file.shutil, "rmtree", killed)
    with pytest.raises(KeyboardInterrupt):
        ckpt.write(path)
    monkeypatch.undo()
    assert seen and f"{_file.TMP}old-" in seen[0][0] and seen[0][1]  # new one already there
    _restores_to(path, model)
    assert latest_checkpoint(tmp_path) is None  # 'c' is no numbered checkpoint: nothing listed


@pytest.mark.parametrize("async_save", [False, True])
def test_a_full_disk_is_a_checkpoint_write_error_and_nothing_moves(
    tmp_path, monkeypatch, async_save
):
    model = _trained()
    ckpt = Checkpoint(model=model, async_save=async_save)
    manager = CheckpointManager(tmp_path, max_to_keep=2, checkpoint=ckpt, async_save=async_save)
    first = manager.save()
    manager.wait_until_finished()

    def full(fd):  # where a full disk shows, on many file systems
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(CheckpointWriteError, match=r"ckpt_2' was not written .*No space left"):
        manager.save()
        manager.wait_until_finished()
    monkeypatch.undo()
    assert isinstance(CheckpointWriteError("x"), OSError)
    assert ckpt.save_counter == (2 if async_save else 1)  # async: the save had returned
    assert manager.latest_checkpoint == first and sorted(os.listdir(tmp_path)) == ["ckpt_1"]
    # The next save works (async: number 2 was given to the save that failed).
    assert manager.save() == str(tmp_path / ("ckpt_3" if async_save else "ckpt_2"))
    manager.close()


def test_a_folder_that_cannot_be_written_is_a_checkpoint_write_error(tmp_path, monkeypatch):
    model = _trained()

    def denied(path, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(_file.os, "mkdir", denied)
    ckpt = Checkpoint(model=model)
    with pytest.raises(CheckpointWriteError, match=r"not written \(PermissionError.*writ"):
        ckpt.save(tmp_path / "ckpt")
    assert ckpt.save_counter == 0


def test_files_beside_a_managers_checkpoints_are_never_deleted_or_renamed(tmp_path):
    """Everything named <name>_<n>.* was the manager's: ckpt_1.txt went with ckpt_1."""
    notes = {"ckpt_1.txt": "a", "ckpt_1.json": "b", "ckpt_2-notes": "c"}
    for name, text in notes.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "ckpt_1.d").mkdir()  # a user's folder, named alike
    manager = CheckpointManager(tmp_path, max_to_keep=1, checkpoint=Checkpoint(model=_trained()))
    for _ in range(3):
        manager.save()
    assert sorted(os.listdir(tmp_path)) == sorted(["ckpt_3", "ckpt_1.d", *notes])
    for name, text in notes.items():
        assert (tmp_path / name).read_text() == text


def test_leftovers_of_a_killed_save_and_a_killed_delete_are_cleaned(tmp_path):
    manager = CheckpointManager(tmp_path, max_to_keep=1, checkpoint=Checkpoint(model=_trained()))
    manager.save()
    for leftover in (
        f"ckpt_1{_file.TMP}old-1234",  # a replace killed before its delete
        "ckpt_2.orbax-checkpoint-tmp-1700000000",  # orbax (older phalanx) killed mid-write
        f"ckpt_2{_file.TMP}abcd",
    ):
        (tmp_path / leftover).mkdir()
    assert manager.checkpoints == [str(tmp_path / "ckpt_1")]
    assert manager.save() == str(tmp_path / "ckpt_2")
    manager.save()
    assert sorted(os.listdir(tmp_path)) == ["ckpt_3"]


def test_a_manager_directory_that_is_a_file_is_refused_before_anything(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(CheckpointError, match=r"directory '.*/f' is a file, not a folder"):
        CheckpointManager(tmp_path / "f", checkpoint=Checkpoint(model=_model()))
    assert (tmp_path / "f").read_text() == "x"


def test_relative_paths_are_resolved_once_and_odd_characters_work(tmp_path, monkeypatch):
    model = _trained()
    monkeypatch.chdir(tmp_path)
    odd = "a b/ü%20[x]{y}#-_1"
    path = Checkpoint(model=model).save(f"{odd}/ck")
    assert path == str(tmp_path / odd / "ck-1")
    monkeypatch.chdir("/")  # the path returned does not depend on the working directory
    _restores_to(path, model)
    assert latest_checkpoint(tmp_path / odd, "ck") == path
    manager = CheckpointManager(tmp_path / odd, max_to_keep=1, checkpoint=Checkpoint(model=model))
    assert manager.save() == str(tmp_path / odd / "ckpt_1")
    assert latest_checkpoint(tmp_path / odd) == manager.latest_checkpoint


def test_a_backup_whose_last_async_save_failed_raises_and_stops_its_thread(tmp_path, monkeypatch):
    from phalanx import _threads

    model = _model()
    backup = phalanx.callbacks.BackupAndRestore(tmp_path / "b", save_freq=2, async_save=True)

    def full(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_file, "commit", full)
    with pytest.raises(CheckpointError, match="No space left"):
        model.fit(X, Y, batch_size=8, epochs=1, callbacks=[backup], verbose=0)
    assert not [t for t in _threads.live_threads() if t.name == "phalanx-checkpoint-write"]


def test_a_checkpoint_written_by_orbax_is_replaced_but_a_folder_named_meta_is_not(
    tmp_path, monkeypatch
):
    from phalanx.checkpoint import _background

    model = _trained()
    with monkeypatch.context() as patch:  # an earlier phalanx: orbax's composite folder
        patch.setattr(_background, "host_arrays", lambda arrays: None)
        old = Checkpoint(model=model).write(tmp_path / "old")
    assert os.path.isdir(os.path.join(old, "meta"))
    model.fit(X, Y, batch_size=8, verbose=0)
    Checkpoint(model=model).write(old)
    assert os.listdir(old) == [_file.FILE]
    _restores_to(old, model)
    (tmp_path / "mine" / "meta").mkdir(parents=True)
    with pytest.raises(CheckpointError, match=r"holds files that are not a checkpoint"):
        Checkpoint(model=model).write(tmp_path / "mine")
    assert os.path.isdir(tmp_path / "mine" / "meta")


@pytest.mark.parametrize("step", ["remove", "marker"])
def test_process_0s_failed_remote_step_is_agreed_so_the_others_do_not_wait(monkeypatch, step):
    """Process 0 of 2 clears the URL and writes the marker; when either failed it raised
    without answering the agreement, so the other processes waited for its deadline
    (10 minutes) instead of raising its error at once."""
    import secrets

    from phalanx.checkpoint import _remote
    from phalanx.cluster import _agree

    answers = []
    all_have = _agree.all_have

    def recorded(tag, mine, *, timeout_s):
        answers.append((tag.rsplit("/", 1)[-1], mine))
        return all_have(tag, mine, timeout_s=timeout_s)

    def broken(*args):
        raise OSError(5, f"the store refused the {step}")

    monkeypatch.setattr(_agree, "all_have", recorded)
    monkeypatch.setattr(_remote, "_processes", lambda: (0, 2))
    monkeypatch.setattr(_remote, "remove" if step == "remove" else "_write_marker", broken)
    url = f"memory://edges-{secrets.token_hex(4)}/c"
    with pytest.raises(CheckpointError, match=rf"processes \[0\] failed.*refused the {step}"):
        Checkpoint(model=_trained()).write(url)
    agreed = "cleared" if step == "remove" else "committed"
    assert (agreed, False) in answers
    assert not _remote.is_committed(url)


def test_a_finished_backup_deletes_its_checkpoints_not_the_files_beside_them(tmp_path):
    """BackupAndRestore("ckpts") beside ModelCheckpoint("ckpts/best.weights.h5"): the end of
    fit deleted the whole folder, the best weights with it (Keras 3 does; tf_keras does not)."""
    model = _model()
    folder = tmp_path / "ckpts"
    best = phalanx.callbacks.ModelCheckpoint(str(folder / "best.weights.h5"))
    backup = phalanx.callbacks.BackupAndRestore(folder, save_freq=2)
    model.fit(X, Y, batch_size=8, epochs=2, callbacks=[best, backup], verbose=0)
    assert os.listdir(folder) == ["best.weights.h5"]
    alone = tmp_path / "alone"  # a folder of its own goes, as in Keras
    model.fit(X, Y, batch_size=8, callbacks=[phalanx.callbacks.BackupAndRestore(alone)], verbose=0)
    assert not alone.exists()


def test_a_folder_holding_a_meta_folder_is_not_taken_for_an_orbax_checkpoint(tmp_path):
    """It was listed by latest_checkpoint and its restore raised orbax's FileNotFoundError."""
    from phalanx.errors import CheckpointNotFoundError

    (tmp_path / "ckpt-1" / "meta").mkdir(parents=True)
    assert latest_checkpoint(tmp_path) is None
    with pytest.raises(CheckpointNotFoundError, match=r"No checkpoint at '.*ckpt-1'"):
        Checkpoint(model=_model()).restore(tmp_path / "ckpt-1")


@pytest.mark.parametrize("where", ["local", "memory"])
def test_old_checkpoints_that_cannot_be_deleted_do_not_fail_the_committed_save(
    tmp_path, monkeypatch, caplog, where
):
    """The deletion after a commit raised on process 0 alone: a committed save reported as
    failed ("before its commit"), and with async_save at process 0's next save only."""
    import secrets

    from phalanx.checkpoint import _remote, _steps

    directory = tmp_path if where == "local" else f"memory://edges-{secrets.token_hex(4)}/m"
    manager = CheckpointManager(directory, max_to_keep=1, checkpoint=Checkpoint(model=_trained()))
    first = manager.save()

    numbered = _remote.numbered

    def refused(*args, **kwargs):  # the listing of every entry, which only the deletion makes
        if kwargs.get("committed_only", True) is False:
            raise PermissionError(13, "Permission denied")
        return numbered(*args, **kwargs)

    if where == "local":
        monkeypatch.setattr(_steps, "_remove", _denied)
    else:
        monkeypatch.setattr(_remote, "numbered", refused)
    with caplog.at_level("WARNING", logger="phalanx"):
        second = manager.save()
    assert "could not delete old ones" in caplog.text and "Permission denied" in caplog.text
    monkeypatch.undo()
    assert manager.latest_checkpoint == second and first in manager.checkpoints
    manager.save()  # the next save deletes both
    assert len(manager.checkpoints) == 1


def _denied(path):
    raise PermissionError(13, "Permission denied", path)


def test_a_url_holding_other_objects_is_refused_and_kept(tmp_path):
    """A save clears its URL first: Checkpoint.write('memory://bucket/data') deleted the data."""
    import secrets

    from phalanx.io import gfile

    root = f"memory://edges-{secrets.token_hex(4)}"
    with gfile.GFile(f"{root}/data/part-0.csv", "w") as f:
        f.write("a,b\n")
    with gfile.GFile(f"{root}/object", "w") as f:
        f.write("x")
    model = _trained()
    with pytest.raises(CheckpointError, match=r"holds objects that are not a checkpoint's"):
        Checkpoint(model=model).write(f"{root}/data")
    with pytest.raises(CheckpointError, match=r"an object \(a file\) of that name exists"):
        Checkpoint(model=model).write(f"{root}/object")
    assert gfile.exists(f"{root}/data/part-0.csv") and gfile.exists(f"{root}/object")
    # An uncommitted leftover (no marker) and a committed checkpoint are replaced.
    with gfile.GFile(f"{root}/ckpt/{_file.FILE}", "w") as f:
        f.write("a killed upload")
    path = Checkpoint(model=model).write(f"{root}/ckpt")
    Checkpoint(model=model).write(path)
    _restores_to(path, model)


def test_a_split_save_to_a_path_with_a_bracket_is_refused_before_orbax_writes(
    tmp_path, monkeypatch
):
    """orbax globbed '[x]' as a pattern, merged no process's arrays and committed a checkpoint
    whose restore failed (tensorstore NOT_FOUND)."""
    from phalanx.checkpoint import _background

    model = _trained()
    monkeypatch.setattr(_background, "host_arrays", lambda arrays: None)  # split over processes
    with pytest.raises(CheckpointError, match=r"orbax cannot write a path with '\['"):
        Checkpoint(model=model).write(tmp_path / "run[1]" / "ck")
    assert os.listdir(tmp_path) == []
    path = Checkpoint(model=model).write(tmp_path / "run(1) ü%" / "ck")  # others are fine
    _restores_to(path, model)


def test_an_async_save_that_fails_as_the_script_ends_is_not_silent(tmp_path):
    """The script ends after an asynchronous save without close(): its error was dropped."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        f"""
        import os
        import numpy as np, phalanx
        from phalanx import layers
        model = phalanx.Sequential([layers.Input(shape=(3,)), layers.Dense(1)])
        model.compile(optimizer="sgd", loss="mse")
        model.fit(np.ones((8, 3)), np.ones((8, 1)), batch_size=4, verbose=0)
        def full(fd):
            raise OSError(28, "No space left on device")
        os.fsync = full
        ckpt = phalanx.checkpoint.Checkpoint(model=model, async_save=True)
        print("saving", ckpt.save({str(tmp_path / "ckpt")!r}))
        """
    )
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env
    )
    assert "saving" in done.stdout, done.stderr
    assert "an asynchronous checkpoint save failed" in done.stderr, done.stderr
    assert "No space left on device" in done.stderr
    assert not os.path.exists(tmp_path / "ckpt-1")
