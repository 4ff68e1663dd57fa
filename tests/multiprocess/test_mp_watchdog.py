"""The fit loop beats the watchdog, and the job ends naming the process that stalled.

With every deadline running out within a second of the others (a waiting process
beats its next step just after the stalled one's last beat), which watchdog fired
first, and so whom the launcher named, was a race at any deadline (the issue's run
with 120 s named the healthy waiting process 0). Now a waiting process gives the one
it waits for ``BLAME_GRACE_S`` to fire first, and when that one cannot (its loop
stopped), its report names it and the launcher names it too. The deadline is set by
``PHALANX_WATCHDOG_TIMEOUT``, the same path the default of 120 s takes.
"""

import re
import time

import pytest
from mp_procs import SCRIPTS, Launcher, _env

from phalanx.cluster._watchdog import BLAME_GRACE_S, EXIT_CODE


def _stall(mode: str, deadline: int = 4):
    launcher = Launcher(
        "-n", "2", "--devices-per-process", "1", "--timeout", "90", "--grace", "2", "--",
        str(SCRIPTS / "stall.py"), mode, env=_env(PHALANX_WATCHDOG_TIMEOUT=str(deadline)),
    )  # fmt: skip
    launcher.wait_for(r"^\[1\] stalling in ", timeout=60)
    stalled = time.monotonic()
    code, out, err, _ = launcher.finish(timeout=60)
    seconds = time.monotonic() - stalled
    print(f"stall.py {mode}: stalled -> launcher exit {seconds:.1f} s (deadline {deadline} s)")
    return code, out, err


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_process_stalled_in_a_fit_callback_is_the_one_named():
    """Process 1 sleeps in on_train_batch_end of step 3; process 0 waits in step 4."""
    code, out, err = _stall("batch")
    assert code == EXIT_CODE, out + err
    assert re.search(
        r"\[1\] phalanx watchdog: process 1 has waited [\d.]+ s \(deadline 4 s\) in step 3, "
        r"phase 'train'",
        out,
    ), out
    assert re.search(r"\[1\]   process 0: step 4, phase 'train', [\d.]+ s ago, waiting", out), out
    assert "process 1 exited with code 3 (its watchdog fired" in err, err
    assert "failed: process 1 " in err and "failed: process 0" not in err, err
    assert "fit ended" not in out


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_a_process_stalled_outside_any_step_is_named_by_the_one_waiting_for_it():
    """Process 1 sleeps in on_epoch_end (its watchdog stopped with the epoch's loop): only
    process 0's watchdog can fire; the old launcher then named process 0, every time."""
    code, out, err = _stall("epoch")
    assert code == EXIT_CODE, out + err
    waited = re.search(r"\[0\] phalanx watchdog: process 0 has waited ([\d.]+) s", out)
    assert waited and float(waited.group(1)) >= 4 + BLAME_GRACE_S - 1, out
    assert re.search(
        r"\[0\]   process 1: step 7, stopped \(not in a step\).*holding the job up", out
    )
    assert re.search(
        r"process 1 is holding the job up \(outside any step after step 7: its loop stopped\): "
        r"process 0 waited for it until its deadline and exited with code 3",
        err,
    ), err
    assert "failed: process 1 stalled; process 0 waited for it." in err, err
    assert "fit ended" not in out
