"""Bad inputs to every public checkpoint entry point, as a user would misuse them.

``Checkpoint`` and its ``save``/``write``/``restore``/``read``, ``CheckpointManager``
(each argument) and its ``save``, ``latest_checkpoint``, ``PreemptionCheckpointHandler``,
``TerminationConfig`` and ``BackupAndRestore``: each raises a phalanx error naming what was
expected and what was got, before anything is written (the folder is as it was), before a
signal handler is installed, and without moving the save counter.
"""

from __future__ import annotations

import functools
import os
import signal
from pathlib import Path

import numpy as np
import pytest
from catalog import Case

import phalanx
from phalanx import layers
from phalanx.callbacks import BackupAndRestore
from phalanx.checkpoint import (
    Checkpoint,
    CheckpointManager,
    PreemptionCheckpointHandler,
    TerminationConfig,
    latest_checkpoint,
)
from phalanx.errors import (
    CallbackArgumentError,
    CheckpointError,
    CheckpointNotFoundError,
    PhalanxError,
    UnknownProtocolError,
)


@functools.cache
def _ckpt() -> Checkpoint:
    model = phalanx.Sequential([layers.Input(shape=(3,)), layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    model.fit(np.ones((8, 3)), np.ones((8, 1)), batch_size=4, verbose=0)
    return Checkpoint(model=model)


def _manager(tmp_path, **kwargs):
    return CheckpointManager(tmp_path / "m", checkpoint=_ckpt(), **kwargs)


def _prepared(tmp_path):
    """What a user's folder holds: a file, a folder of notes, a checkpoint manager's folder."""
    (tmp_path / "afile").write_text("x")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("keep")


PATHS = {  # a bad path, the error, what the message says
    "None": (None, CheckpointError, r"expects a path \(str or os.PathLike\), got None"),
    "an int": (3, CheckpointError, r"expects a path .*got 3 of type int"),
    "bytes": (b"ckpt", CheckpointError, r"expects a path .*got b'ckpt' of type bytes"),
    "empty": ("", CheckpointError, r"expects a path .*got '' .*Pass a directory name"),
    "a list": (["a"], CheckpointError, r"expects a path .*got \['a'\] of type list"),
    "an unknown protocol": ("nope://bucket/ck", UnknownProtocolError, r"protocol 'nope'"),
}


def _path_cases():
    for how, (path, error, says) in PATHS.items():
        for method in ("save", "write", "restore", "read"):
            yield Case(
                f"Checkpoint.{method}({how})",
                lambda tmp_path, m=method, p=path: getattr(_ckpt(), m)(p),
                error,
                says,
            )
        yield Case(
            f"latest_checkpoint({how})", lambda tmp_path, p=path: latest_checkpoint(p), error, says
        )
        if path is not None:  # CheckpointManager(None) says a directory is needed (below)
            yield Case(
                f"CheckpointManager(directory={how})",
                lambda tmp_path, p=path: CheckpointManager(p, checkpoint=_ckpt()),
                error,
                says,
            )


CASES = [
    *_path_cases(),
    # -- Checkpoint objects --------------------------------------------------------
    Case("Checkpoint()", lambda tmp_path: Checkpoint(), CheckpointError, r"needs at least one"),
    Case(
        "Checkpoint(model=3)",
        lambda tmp_path: Checkpoint(model=3),
        CheckpointError,
        r"Checkpoint\(model=\.\.\.\) got int, which has no state .* Pass a phalanx Model",
    ),
    Case(
        "Checkpoint(model=None)",
        lambda tmp_path: Checkpoint(model=None),
        CheckpointError,
        r"got NoneType, which has no state",
    ),
    Case(
        "Checkpoint(model=[model])",
        lambda tmp_path: Checkpoint(model=[_ckpt()._objects["model"]]),
        CheckpointError,
        r"got list, which has no state",
    ),
    Case(
        "Checkpoint(iterator=a Python iterator)",
        lambda tmp_path: Checkpoint(model=_ckpt()._objects["model"], iterator=iter([1, 2])),
        CheckpointError,
        r"Checkpoint\(iterator=\.\.\.\) got list_iterator",
    ),
    Case(
        "Checkpoint(opt=optimizer) alone",
        lambda tmp_path: Checkpoint(opt=_ckpt()._objects["model"].optimizer),
        CheckpointError,
        r"without its model.*Pass the model too",
    ),
    Case(
        "Checkpoint(async_save=1)",
        lambda tmp_path: Checkpoint(model=_ckpt()._objects["model"], async_save=1),
        CheckpointError,
        r"async_save must be True or False, got 1",
    ),
    # -- paths that exist but are not what a save or restore needs -----------------
    Case(
        "Checkpoint.write(a file)",
        lambda tmp_path: _ckpt().write(tmp_path / "afile"),
        CheckpointError,
        r"'.*/afile': a file of that name exists.*give another path",
    ),
    Case(
        "Checkpoint.write(under a file)",
        lambda tmp_path: _ckpt().write(tmp_path / "afile" / "ck"),
        CheckpointError,
        r"'.*/afile' is a file, not a folder",
    ),
    Case(
        "Checkpoint.save(under a file)",
        lambda tmp_path: _ckpt().save(tmp_path / "afile" / "ck"),
        CheckpointError,
        r"'.*/afile' is a file, not a folder",
    ),
    Case(
        "Checkpoint.write(a folder of notes)",
        lambda tmp_path: _ckpt().write(tmp_path / "notes"),
        CheckpointError,
        r"holds files that are not a checkpoint \(\['a.txt'\]\).*delete the folder first",
    ),
    Case(
        "Checkpoint.restore(a file)",
        lambda tmp_path: _ckpt().restore(tmp_path / "afile"),
        CheckpointNotFoundError,
        r"No checkpoint at '.*/afile'.*Give a path that Checkpoint.save",
    ),
    Case(
        "Checkpoint.restore(a folder of notes)",
        lambda tmp_path: _ckpt().restore(tmp_path / "notes"),
        CheckpointNotFoundError,
        r"No checkpoint at '.*/notes'",
    ),
    Case(
        "Checkpoint.read(missing)",
        lambda tmp_path: _ckpt().read(tmp_path / "missing"),
        CheckpointNotFoundError,
        r"No checkpoint at '.*/missing'.*it does not exist",
    ),
    # -- CheckpointManager's arguments ----------------------------------------------
    Case(
        "CheckpointManager(directory=None)",
        lambda tmp_path: CheckpointManager(None, checkpoint=_ckpt()),
        CheckpointError,
        r"CheckpointManager needs a directory",
    ),
    Case(
        "CheckpointManager(directory=a file)",
        lambda tmp_path: CheckpointManager(tmp_path / "afile", checkpoint=_ckpt()),
        CheckpointError,
        r"directory '.*/afile' is a file, not a folder",
    ),
    Case(
        "CheckpointManager without checkpoint",
        lambda tmp_path: CheckpointManager(tmp_path / "m"),
        CheckpointError,
        r"needs checkpoint=Checkpoint\(\.\.\.\) .*got NoneType",
    ),
    Case(
        "CheckpointManager(checkpoint=model)",
        lambda tmp_path: CheckpointManager(tmp_path / "m", checkpoint=_ckpt()._objects["model"]),
        CheckpointError,
        r"needs checkpoint=Checkpoint\(\.\.\.\) .*got Sequential",
    ),
    Case(
        "CheckpointManager(directory, checkpoint) positionally",
        lambda tmp_path: CheckpointManager(tmp_path / "m", _ckpt()),
        CheckpointError,
        r"got a Checkpoint as max_to_keep.*Pass checkpoint= by keyword",
    ),
    Case(
        "CheckpointManager: four positional arguments",
        lambda tmp_path: CheckpointManager(_ckpt(), tmp_path / "m", 2, 4),
        CheckpointError,
        r"takes 3 positional arguments, got 4",
    ),
    Case(
        "CheckpointManager: checkpoint twice",
        lambda tmp_path: CheckpointManager(_ckpt(), tmp_path / "m", checkpoint=_ckpt()),
        CheckpointError,
        r"got checkpoint twice",
    ),
    *[
        Case(
            f"CheckpointManager({name}={value!r})",
            lambda tmp_path, n=name, v=value: _manager(tmp_path, **{n: v}),
            CheckpointError,
            rf"{name} must be a positive int or None, got {value!r} \({type(value).__name__}\)",
        )
        for name in ("max_to_keep", "keep_every_n_steps", "save_interval_steps")
        for value in (0, -1, True, False, 1.5, "3")
    ],
    *[
        Case(
            f"CheckpointManager(async_save={value!r})",
            lambda tmp_path, v=value: _manager(tmp_path, async_save=v),
            CheckpointError,
            rf"async_save must be True or False, got {value!r}",
        )
        for value in (1, "yes", None)
    ],
    *[
        Case(
            f"CheckpointManager(checkpoint_name={value!r})",
            lambda tmp_path, v=value: _manager(tmp_path, checkpoint_name=v),
            CheckpointError,
            rf"checkpoint_name must be a simple name such as 'ckpt' .*got {value!r}",
        )
        for value in ("", "a.b", "ckpt-x", "../x", 3, None)
    ],
    Case(
        "CheckpointManager(init_fn=3)",
        lambda tmp_path: _manager(tmp_path, init_fn=3),
        CheckpointError,
        r"init_fn must be a function of no arguments .*got 3 \(int\)",
    ),
    *[
        Case(
            f"CheckpointManager.save({value!r})",
            lambda tmp_path, v=value: _manager(tmp_path).save(v),
            CheckpointError,
            rf"checkpoint_number must be a non-negative int .*got {value!r}",
        )
        for value in (-1, True, 1.5, "3")
    ],
    Case(
        "CheckpointManager.save(check_interval='no')",
        lambda tmp_path: _manager(tmp_path).save(check_interval="no"),
        CheckpointError,
        r"check_interval must be True or False, got 'no'",
    ),
    *[
        Case(
            f"latest_checkpoint(checkpoint_name={value!r})",
            lambda tmp_path, v=value: latest_checkpoint(tmp_path, checkpoint_name=v),
            CheckpointError,
            rf"checkpoint_name must be the prefix .*got {value!r}",
        )
        for value in ("", 3, None, "a/b")
    ],
    # -- PreemptionCheckpointHandler and TerminationConfig -----------------------------
    Case(
        "PreemptionCheckpointHandler(None)",
        lambda tmp_path: PreemptionCheckpointHandler(None),
        CheckpointError,
        r"needs a CheckpointManager, or a Checkpoint and checkpoint_dir=; got NoneType",
    ),
    Case(
        "PreemptionCheckpointHandler(checkpoint) without checkpoint_dir",
        lambda tmp_path: PreemptionCheckpointHandler(_ckpt()),
        CheckpointError,
        r"got Checkpoint and checkpoint_dir=None",
    ),
    Case(
        "PreemptionCheckpointHandler(checkpoint_dir=3)",
        lambda tmp_path: PreemptionCheckpointHandler(_ckpt(), checkpoint_dir=3),
        CheckpointError,
        r"checkpoint_dir expects a path .*got 3",
    ),
    Case(
        "PreemptionCheckpointHandler(checkpoint_dir=a file)",
        lambda tmp_path: PreemptionCheckpointHandler(_ckpt(), checkpoint_dir=tmp_path / "afile"),
        CheckpointError,
        r"checkpoint_dir '.*/afile' is a file, not a folder",
    ),
    Case(
        "PreemptionCheckpointHandler(termination_config=3)",
        lambda tmp_path: PreemptionCheckpointHandler(_manager(tmp_path), termination_config=3),
        CheckpointError,
        r"must be a phalanx.checkpoint.TerminationConfig, got 3 \(int\)",
    ),
    Case(
        "PreemptionCheckpointHandler(termination_config=the class)",
        lambda tmp_path: PreemptionCheckpointHandler(
            _manager(tmp_path), termination_config=TerminationConfig
        ),
        CheckpointError,
        r"must be a phalanx.checkpoint.TerminationConfig, got <class",
    ),
    *[
        Case(
            f"PreemptionCheckpointHandler(exit_code={value!r})",
            lambda tmp_path, v=value: PreemptionCheckpointHandler(_manager(tmp_path), exit_code=v),
            CheckpointError,
            rf"exit_code must be a process exit status, an int in \[0, 255\], got {value!r}",
        )
        for value in (True, "42", -1, 300)
    ],
    Case(
        "PreemptionCheckpointHandler(exit_fn=3)",
        lambda tmp_path: PreemptionCheckpointHandler(_manager(tmp_path), exit_fn=3),
        CheckpointError,
        r"exit_fn must be a function of the exit code, got 3",
    ),
    Case(
        "PreemptionCheckpointHandler: exit_fn twice",
        lambda tmp_path: PreemptionCheckpointHandler(
            _manager(tmp_path),
            exit_fn=lambda code: None,
            termination_config=TerminationConfig(exit_fn=lambda: None),
        ),
        CheckpointError,
        r"got exit_fn= and termination_config.exit_fn: give one",
    ),
    *[
        Case(
            f"PreemptionCheckpointHandler(timeout_s={value!r})",
            lambda tmp_path, v=value: PreemptionCheckpointHandler(_manager(tmp_path), timeout_s=v),
            CheckpointError,
            rf"timeout_s must be a positive number of seconds .*got {value!r}",
        )
        for value in ("x", -1, 0, True, float("inf"))
    ],
    *[
        Case(
            f"PreemptionCheckpointHandler(signals={value!r})",
            lambda tmp_path, v=value: PreemptionCheckpointHandler(_manager(tmp_path), signals=v),
            CheckpointError,
            says,
        )
        for value, says in (
            ("SIGFOO", r"'SIGFOO' is not a signal of this platform"),
            (9, r"SIGKILL cannot be caught"),
            (3.5, r"3.5 is not a signal"),
            (99999, r"99999 is not a signal"),
        )
    ],
    *[
        Case(
            f"TerminationConfig({kwargs})",
            lambda tmp_path, k=kwargs: TerminationConfig(**k),
            CheckpointError,
            says,
        )
        for kwargs, says in (
            ({"grace_period": -1}, r"grace_period=\.\.\.\) must be a finite number of seconds"),
            ({"grace_period": "30"}, r"grace_period=.*got '30' \(str\)"),
            ({"grace_period": True}, r"grace_period=.*got True \(bool\)"),
            ({"grace_period": float("nan")}, r"grace_period=.*got nan"),
            ({"exit_fn": 3}, r"exit_fn=\.\.\.\) must be a function of no arguments, got 3"),
            ({"save_fn": "save"}, r"save_fn=\.\.\.\) must be a function"),
            ({"termination_watcher_fn": 1}, r"termination_watcher_fn=\.\.\.\) must be a function"),
        )
    ],
    # -- BackupAndRestore ----------------------------------------------------------------
    Case(
        "BackupAndRestore(3)",
        lambda tmp_path: BackupAndRestore(3),
        CallbackArgumentError,
        r"backup_dir must be a folder .*received 3 \(int\)",
    ),
    Case(
        "BackupAndRestore(b'x')",
        lambda tmp_path: BackupAndRestore(b"x"),
        CallbackArgumentError,
        r"backup_dir must be a folder .*received b'x' \(bytes\)",
    ),
    Case(
        "BackupAndRestore(a file)",
        lambda tmp_path: BackupAndRestore(tmp_path / "afile"),
        CallbackArgumentError,
        r"backup_dir '.*/afile' is a file, not a folder",
    ),
    Case(
        "BackupAndRestore(an unknown protocol)",
        lambda tmp_path: BackupAndRestore("nope://bucket/b"),
        UnknownProtocolError,
        r"protocol 'nope'",
    ),
    *[
        Case(
            f"BackupAndRestore(save_freq={value!r})",
            lambda tmp_path, v=value: BackupAndRestore(tmp_path / "b", save_freq=v),
            CallbackArgumentError,
            rf"save_freq must be 'epoch' or a positive number of steps; received save_freq={value!r}",
        )
        for value in (0, -2, True, 2.0, "batch", None)
    ],
    *[
        Case(
            f"BackupAndRestore({name}={value!r})",
            lambda tmp_path, n=name, v=value: BackupAndRestore(tmp_path / "b", **{n: v}),
            CallbackArgumentError,
            rf"BackupAndRestore: {name} must be True or False; received {value!r}",
        )
        for name in ("delete_checkpoint", "async_save", "save_before_preemption")
        for value in ("no", None, 1)
    ],
    Case(
        "BackupAndRestore(termination_config=3)",
        lambda tmp_path: BackupAndRestore(tmp_path / "b", termination_config=3),
        CheckpointError,
        r"BackupAndRestore\(termination_config=\.\.\.\) must be a phalanx.checkpoint.TerminationConfig",
    ),
]


def _snapshot(root) -> dict:
    out = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            out[os.path.relpath(path, root)] = None if name in dirs else Path(path).read_bytes()
    return out


@pytest.mark.parametrize("case", [c.param() for c in CASES])
def test_bad_checkpoint_input(case, tmp_path):
    ckpt = _ckpt()
    _prepared(tmp_path)
    before = _snapshot(tmp_path)
    handler = signal.getsignal(signal.SIGTERM)
    counter = ckpt.save_counter
    with pytest.raises(case.error, match=case.match) as info:
        case.call(tmp_path)
    assert isinstance(info.value, PhalanxError), f"{type(info.value).__name__}: {info.value}"
    after = _snapshot(tmp_path)
    if case.id.startswith(("CheckpointManager.save", "PreemptionCheckpointHandler")):
        after.pop("m", None)  # the (valid) manager's folder these cases make first
    assert after == before, "a bad input changed the folder"
    assert signal.getsignal(signal.SIGTERM) is handler, "a signal handler was installed"
    assert ckpt.save_counter == counter, "the save counter moved"


def test_what_tensorflow_accepts_stays_accepted(tmp_path):
    """numpy integers as checkpoint numbers, paths as pathlib.Path, checkpoint names with a dot
    in latest_checkpoint (Checkpoint.save('dir/model.ckpt') writes model.ckpt-1)."""
    ckpt = _ckpt()
    manager = CheckpointManager(tmp_path / "m", max_to_keep=2, checkpoint=ckpt)
    assert manager.save(np.int64(7)) == str(tmp_path / "m" / "ckpt_7")
    path = ckpt.save(tmp_path / "model.ckpt")
    assert latest_checkpoint(tmp_path, "model.ckpt") == path
    assert PreemptionCheckpointHandler(manager, exit_code=0, timeout_s=1).close() is None
    assert BackupAndRestore(tmp_path / "b", async_save=np.True_).async_save is True
