"""``phalanx run [--devices N] script.py [args]``: one's own script on N simulated devices.

Driven as a user types it: the real command in a subprocess, a script of one's own in a fresh
folder. Before, ``phalanx --devices 8 train.py`` and ``phalanx info --devices 4`` were refused
and only ``PHALANX_CPU_DEVICES=4 python train.py`` worked (and only if the script built a
strategy before asking JAX for its devices).
"""

from __future__ import annotations

import json
import textwrap

from cli_support import phalanx

SCRIPT = textwrap.dedent(
    """
    import sys

    import jax  # asked first, before phalanx: the devices must already be there

    print("devices", len(jax.devices()), "args", sys.argv[1:])
    import phalanx

    print("replicas", phalanx.MirroredStrategy().num_replicas_in_sync)
    """
)


def test_run_gives_the_script_its_devices_and_arguments(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT)
    done = phalanx("run", "--devices", "4", "train.py", "--epochs", "3", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    # The script's own lines, unprefixed (launch prefixes [i]); its options are its own.
    assert "devices 4 args ['--epochs', '3']\nreplicas 4\n" in done.stdout, done.stdout
    done = phalanx("--devices", "2", "run", "train.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "devices 2 args []\nreplicas 2\n" in done.stdout, done.stdout


def test_run_returns_the_scripts_status_and_restarts_it(tmp_path):
    (tmp_path / "fails.py").write_text(
        "import pathlib, sys\n"
        "runs = pathlib.Path('runs')\n"
        "runs.write_text(runs.read_text() + 'x' if runs.exists() else 'x')\n"
        "sys.exit(3)\n"
    )
    done = phalanx("run", "--max-restarts", "1", "fails.py", cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert (tmp_path / "runs").read_text() == "xx"
    assert "fails.py ended with status 3; restarting it (1 of 1)." in done.stderr
    (tmp_path / "sleeps.py").write_text("import time\ntime.sleep(60)\n")
    done = phalanx("run", "--timeout", "1", "sleeps.py", cwd=tmp_path)
    assert done.returncode == 124, done.stderr
    assert "sleeps.py ran past --timeout 1 s; ending it." in done.stderr


def test_mistakes_are_refused_saying_what_to_type(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT)
    done = phalanx("--devices", "8", "train.py", cwd=tmp_path)
    assert done.returncode == 2
    assert "'train.py' is not a command. Run a script with: phalanx run [--devices N] " in (
        done.stderr
    )
    done = phalanx("run", "-n", "2", "train.py", cwd=tmp_path)
    assert done.returncode == 2
    assert "-n 2 describes a job of several processes; phalanx run runs one." in done.stderr
    assert "phalanx launch -n N" in done.stderr
    done = phalanx("run", "--devices", "4", "missing.py", cwd=tmp_path)
    assert done.returncode == 2
    assert "cannot run 'missing.py': no such file." in done.stderr
    assert "devices" not in done.stdout


def test_info_takes_devices():
    done = phalanx("info", "--devices", "4", "--json")
    assert done.returncode == 0, done.stderr
    facts = json.loads(done.stdout)
    assert facts["global_device_count"] == 4
    assert facts["strategy"] == "MirroredStrategy" and facts["num_replicas_in_sync"] == 4
    done = phalanx("info", "--devices", "0")
    assert done.returncode == 2
    assert "--devices must be >= 1, got 0." in done.stderr
