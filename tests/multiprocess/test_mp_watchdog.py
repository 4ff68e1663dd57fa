"""The fit loop beats the watchdog: a process stalled in a callback ends the job, named."""

import re
import time

import pytest
from mp_procs import SCRIPTS, Launcher, _env

from phalanx.cluster._watchdog import EXIT_CODE


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_a_process_stalled_in_a_fit_callback_is_reported_within_the_deadline():
    launcher = Launcher(
        "-n", "2", "--devices-per-process", "1", "--timeout", "75", "--grace", "2", "--",
        str(SCRIPTS / "stall.py"), env=_env(PHALANX_WATCHDOG_TIMEOUT="4"),
    )  # fmt: skip
    launcher.wait_for(r"^\[1\] stalling in on_train_batch_end of step 3", timeout=60)
    stalled = time.monotonic()
    code, out, err, _ = launcher.finish(timeout=40)
    seconds = time.monotonic() - stalled
    print(f"stalled callback -> launcher exit: {seconds:.1f} s (watchdog deadline 4 s)")
    assert code == EXIT_CODE, out + err
    assert seconds < 4 + 15, out + err
    # Whichever watchdog fires first (the stalled process in its callback, or the other
    # waiting in the next step's all-reduce) names its step and phase and the other's
    # last report; the launcher names the first process to exit with the watchdog's code.
    fired = re.search(
        r"\[(\d)\] phalanx watchdog: process \1 has waited [\d.]+ s \(deadline 4 s\) "
        r"in step (\d+), phase 'train'",
        out,
    )
    assert fired, out
    other = 1 - int(fired.group(1))
    assert re.search(rf"\[{fired.group(1)}\]   process {other}: step \d+, phase 'train'", out), out
    assert re.search(r"process \d exited with code 3 \(its watchdog fired", err), err
    assert "fit ended" not in out
