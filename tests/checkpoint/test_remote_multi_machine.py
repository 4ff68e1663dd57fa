"""Checkpoints on s3:// written by 2 processes that share no staging folder (separate machines).

``scripts/remote_own_staging.py`` runs under ``phalanx launch -n 2``: each process stages its
saves in its own folder (``PHALANX_CHECKPOINT_STAGING=<root>/process_<i>``), as on machines
with their own disks, and ``BackupAndRestore`` backs ``fit`` up to a local moto s3 server. The
run stops mid-training, a relaunch resumes from the bucket, and must end bit-identical to an
uninterrupted run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from remote_support import s3_env

from phalanx.checkpoint import _remote
from phalanx.io import _fs, gfile
from tests_support import child_xla_flags, run_once

SCRIPT = Path(__file__).parent / "scripts" / "remote_own_staging.py"


def _env():
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("PHALANX_", "TF_CONFIG"))}
    return {**keep, "JAX_PLATFORMS": "cpu", "XLA_FLAGS": child_xla_flags(), **s3_env()}


def _launch(out, url, staging, *extra, timeout=240):
    """``phalanx launch -n 2`` of the script; returns the finished process."""
    out.mkdir(exist_ok=True)
    argv = [sys.executable, "-m", "phalanx.cli", "launch", "-n", "2", "--devices-per-process"]
    argv += ["1", "--timeout", "150", "--grace", "2", "--"]
    argv += [str(SCRIPT), str(out), url, str(staging), *map(str, extra)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=_env())


def _results(out):
    results = []
    for p in range(2):
        with np.load(out / f"{p}.npz") as f:
            results.append(dict(f))
    return results


def _same_weights(got, want):
    keys = [k for k in want if k.startswith("weight_")]
    assert keys
    for key in keys:
        np.testing.assert_array_equal(got[key], want[key], err_msg=key)


def _replicated_reference(tmp_path_factory, s3):
    """The uninterrupted run of replicated variables, each process staging in its own folder:
    its results, once a session (the sync and async tests compare with it: the weights do not
    depend on how the backups are written)."""

    def make(folder):
        ref = _launch(folder / "ref", f"{s3}/own-staging-ref", folder / "staging")
        assert ref.returncode == 0, ref.stdout + ref.stderr
        for p in range(2):  # every save of the finished run removed its staging folder
            assert os.listdir(folder / "staging" / f"process_{p}") == []

    want = _results(run_once(tmp_path_factory, {"script": str(SCRIPT), "flags": []}, make) / "ref")
    assert [int(r["first_step"]) for r in want] == [0, 0]
    return want


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("async_save", [False, True], ids=["sync", "async"])
def test_replicated_weights_back_up_from_own_staging_folders_and_resume(
    s3, tmp_path, tmp_path_factory, async_save
):
    """Replicated variables: process 0 holds every byte, so the other process needs nothing of its
    staging folder; the stopped run's relaunch resumes from s3:// bit-identical."""
    extra = ["--async-save"] if async_save else []
    url = f"{s3}/own-staging-{'async' if async_save else 'sync'}"
    stopped = _launch(
        tmp_path / "kill", f"{url}/kill", tmp_path / "staging", "--stop-at-step", 13, *extra
    )
    assert stopped.returncode != 0 and "stopped at step 13" in stopped.stdout, stopped.stderr
    assert gfile.exists(f"{url}/kill")  # the backup stays for the relaunch
    resumed = _launch(tmp_path / "kill", f"{url}/kill", tmp_path / "staging", *extra)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "resuming from s3://" in resumed.stdout
    want, got = _replicated_reference(tmp_path_factory, s3), _results(tmp_path / "kill")
    first = [int(r["first_step"]) for r in got]
    assert first[0] == first[1] and 5 < first[0] <= 13, first  # from the backup of step 10
    for result in want[1:] + got:
        assert int(result["steps"]) == 36
        _same_weights(result, want[0])
    for p in range(2):  # every save of the finished run removed its staging folder
        assert os.listdir(tmp_path / "staging" / f"process_{p}") == []


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_split_weights_with_own_staging_folders_raise_and_commit_nothing(s3, tmp_path):
    """Variables split over the processes need one staging folder that every process sees: with
    separate ones, the first save raises a CheckpointError on every process saying what to do,
    and nothing is committed at the URL."""
    url = f"{s3}/own-staging-split"
    done = _launch(tmp_path / "out", url, tmp_path / "staging", "--shard-parameters")
    assert done.returncode != 0
    for p in range(2):
        error = (tmp_path / "out" / f"{p}.error").read_text()
        assert error.startswith("CheckpointError: Checkpoint"), error
        assert (
            "split over processes" in error and "do not see the file that process 0 wrote" in error
        )
        assert "[1]" in error and "PHALANX_CHECKPOINT_STAGING" in error
    loc = _fs.locate(url)
    committed = [f for f in loc.fs.find(loc.path) if f.endswith(_remote.MARKER)]
    assert committed == []
    assert os.listdir(tmp_path / "staging" / "process_0") == []  # process 0 removed its folder


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_split_weights_with_a_shared_staging_folder_resume_bit_identical(s3, tmp_path):
    """With one staging folder for all (NFS on separate machines), split variables are saved and
    the relaunch resumes bit-identical to an uninterrupted run."""
    url = f"{s3}/shared-staging-split"
    flags = ("--shard-parameters", "--shared-staging")
    ref = _launch(tmp_path / "ref", f"{url}/ref", tmp_path / "staging", *flags)
    assert ref.returncode == 0, ref.stdout + ref.stderr
    stopped = _launch(
        tmp_path / "kill", f"{url}/kill", tmp_path / "staging", *flags, "--stop-at-step", 13
    )
    assert stopped.returncode != 0 and "stopped at step 13" in stopped.stdout, stopped.stderr
    resumed = _launch(tmp_path / "kill", f"{url}/kill", tmp_path / "staging", *flags)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    want, got = _results(tmp_path / "ref"), _results(tmp_path / "kill")
    first = [int(r["first_step"]) for r in got]
    assert first[0] == first[1] and 5 < first[0] <= 13, first  # from the backup of step 10
    for result in want[1:] + got:
        _same_weights(result, want[0])
