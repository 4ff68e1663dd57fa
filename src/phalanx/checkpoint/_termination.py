"""Termination notices: how a process learns it is about to be stopped, per platform.

TensorFlow's ``tf.distribute.experimental.TerminationConfig`` for phalanx's
``PreemptionCheckpointHandler``: a ``termination_watcher_fn`` polled in a
background thread, an ``exit_fn`` run after the save, a ``grace_period``
(seconds between the notice and the kill) and a ``save_fn``. Without a
watcher, the handler watches what the platform provides:

- signals (``termination_signals``): SIGTERM everywhere (what Kubernetes
  sends a pod's processes, then SIGKILL after the pod's
  ``terminationGracePeriodSeconds``, 30 s by default; what ``phalanx
  launch`` and most schedulers send); under Slurm (``SLURM_JOB_ID`` set) also
  SIGUSR1, the signal of ``sbatch --signal=USR1@<seconds>``;
- Google Compute Engine: the metadata server's ``instance/preempted``
  (``TRUE`` once a Spot or preemptible VM is being stopped) and
  ``instance/maintenance-event`` (``TERMINATE_ON_HOST_MAINTENANCE``), polled
  by ``gce_termination_watcher``. It runs only on GCE, which is told from
  the environment alone (``GCE_METADATA_HOST`` set, as the google libraries
  read it, or the machine's DMI product name, "Google Compute Engine"), so
  start-up never waits on the network; each poll has a short timeout.
"""

from __future__ import annotations

import logging
import math
import numbers
import os
import signal
import threading
import urllib.request
from collections.abc import Callable, Iterable
from typing import Any

from .._threads import start_thread
from ..errors import CheckpointError

log = logging.getLogger("phalanx")

#: Seconds between two calls of a termination watcher.
WATCH_INTERVAL_S = 1.0
#: The timeout of one request to the GCE metadata server.
GCE_REQUEST_TIMEOUT_S = 1.0
_GCE_DEFAULT_HOST = "metadata.google.internal"
_DMI_PRODUCT = "/sys/class/dmi/id/product_name"


class TerminationConfig:
    """How ``PreemptionCheckpointHandler`` learns of a termination, saves and exits.

    TensorFlow's ``tf.distribute.experimental.TerminationConfig``. Every field
    is optional; what is left out takes the platform's default (see
    ``docs/checkpoints.md``, "Preemption").

    Args:
      termination_watcher_fn: a function of no arguments that returns True once
        this process is about to be terminated. It is called every
        ``WATCH_INTERVAL_S`` (1 s) in a background thread, so it must be quick
        and must not block. Default: the GCE metadata watcher on Google
        Compute Engine, none elsewhere (signals still count).
      exit_fn: a function of no arguments run after the checkpoint is saved,
        instead of ``sys.exit(42)`` (a platform with its own restart code).
      grace_period: seconds between the notice and the kill. 0 (default): save
        at the next step boundary and exit. More: save at the next boundary,
        train on, and save again and exit when the time left is about three
        times what one save and one step take (TensorFlow's rule).
      save_fn: a function of no arguments that saves the checkpoint instead of
        the handler's checkpoint or manager.

    Raises:
      CheckpointError: a field that is not callable, or a grace period that is
        not a finite number of seconds >= 0.

    Examples:
      >>> import phalanx
      >>> config = phalanx.checkpoint.TerminationConfig(
      ...     termination_watcher_fn=lambda: False, grace_period=30)
      >>> config.grace_period
      30.0
    """

    def __init__(
        self,
        termination_watcher_fn: Callable[[], bool] | None = None,
        exit_fn: Callable[[], Any] | None = None,
        grace_period: float | None = None,
        save_fn: Callable[[], Any] | None = None,
    ) -> None:
        for name, fn in (
            ("termination_watcher_fn", termination_watcher_fn),
            ("exit_fn", exit_fn),
            ("save_fn", save_fn),
        ):
            if fn is not None and not callable(fn):
                raise CheckpointError(
                    f"TerminationConfig({name}=...) must be a function of no arguments, got "
                    f"{fn!r} ({type(fn).__name__}). Pass the function itself, not its result."
                )
        self.termination_watcher_fn = termination_watcher_fn
        self.exit_fn = exit_fn
        self.grace_period = _check_grace_period(grace_period)
        self.save_fn = save_fn

    def __repr__(self) -> str:
        return (
            f"TerminationConfig(termination_watcher_fn={self.termination_watcher_fn!r}, "
            f"exit_fn={self.exit_fn!r}, grace_period={self.grace_period!r}, "
            f"save_fn={self.save_fn!r})"
        )


def _check_grace_period(value: Any) -> float:
    if value is None:
        return 0.0
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)  # numpy's too
    if not ok or not math.isfinite(value) or value < 0:
        raise CheckpointError(
            "TerminationConfig(grace_period=...) must be a finite number of seconds >= 0 (the "
            f"time between the notice and the kill), got {value!r} ({type(value).__name__})."
        )
    return float(value)


def termination_signals(names: Any = None) -> tuple[int, ...]:
    """The signals that mean "about to be terminated", as numbers.

    Args:
      names: signals as numbers, ``signal.Signals`` or names (``"SIGUSR1"``,
        ``"USR1"``); None: SIGTERM, and SIGUSR1 too under Slurm (``sbatch
        --signal=USR1@<seconds>``).

    Raises:
      CheckpointError: a name that is not a signal of this platform, or a signal
        that cannot be caught (SIGKILL, SIGSTOP).

    Examples:
      >>> termination_signals(["SIGTERM", "USR2"]) == (signal.SIGTERM, signal.SIGUSR2)
      True
    """
    if names is None:
        names = [signal.SIGTERM]
        if os.environ.get("SLURM_JOB_ID"):
            names.append(signal.SIGUSR1)
    if isinstance(names, str | int) or not isinstance(names, Iterable):
        names = [names]  # one signal; _signal_of refuses what is not one
    out = []
    for name in names:
        sig = _signal_of(name)
        if sig in (signal.SIGKILL, signal.SIGSTOP):
            raise CheckpointError(
                f"signals: {sig.name} cannot be caught, so no checkpoint can follow it. Use "
                "SIGTERM, SIGUSR1 or SIGUSR2 (Slurm: sbatch --signal=USR1@120)."
            )
        if sig not in out:
            out.append(sig)
    return tuple(out)


def _signal_of(name: Any) -> signal.Signals:
    try:
        if isinstance(name, str):
            upper = name.upper()
            return signal.Signals[upper if upper.startswith("SIG") else "SIG" + upper]
        if isinstance(name, int) and not isinstance(name, bool):
            return signal.Signals(name)
    except (KeyError, ValueError):
        pass
    raise CheckpointError(
        f"signals: {name!r} is not a signal of this platform; give names such as 'SIGTERM', "
        "'SIGUSR1' or numbers (signal.SIGUSR1)."
    )


def gce_metadata_url(path: str) -> str:
    """``http://<host>/computeMetadata/v1/<path>``; the host is ``GCE_METADATA_HOST`` (else
    ``GCE_METADATA_ROOT``, else ``metadata.google.internal``), as google-auth reads it."""
    host = os.environ.get("GCE_METADATA_HOST") or os.environ.get("GCE_METADATA_ROOT")
    host = (host or _GCE_DEFAULT_HOST).removeprefix("http://").rstrip("/")
    return f"http://{host}/computeMetadata/v1/{path}"


def on_gce() -> bool:
    """Whether this process runs on Google Compute Engine, from the environment only (no
    request): ``GCE_METADATA_HOST`` is set, or the DMI product name says Google."""
    if os.environ.get("GCE_METADATA_HOST"):
        return True
    try:
        with open(_DMI_PRODUCT, encoding="utf-8") as f:
            return f.read().strip().startswith("Google")
    except OSError:
        return False


def _gce_get(path: str) -> str:
    request = urllib.request.Request(gce_metadata_url(path), headers={"Metadata-Flavor": "Google"})
    with urllib.request.urlopen(request, timeout=GCE_REQUEST_TIMEOUT_S) as response:
        return response.read().decode("utf-8", "replace").strip()


def gce_termination_watcher() -> Callable[[], bool]:
    """A termination watcher for Google Compute Engine: True once the metadata server says
    ``instance/preempted`` is ``TRUE`` or ``instance/maintenance-event`` is
    ``TERMINATE_ON_HOST_MAINTENANCE``.

    A request that fails (timeout, no server) counts as "no notice"; the first
    failure is logged.

    Examples:
      >>> watch = gce_termination_watcher()
      >>> callable(watch)
      True
    """
    failed = []

    def watch() -> bool:
        try:
            if _gce_get("instance/preempted").upper() == "TRUE":
                return True
            return _gce_get("instance/maintenance-event") == "TERMINATE_ON_HOST_MAINTENANCE"
        except (OSError, ValueError) as e:  # urllib's URLError is an OSError
            if not failed:
                failed.append(e)
                log.warning(
                    "phalanx: the GCE metadata server (%s) did not answer (%s); preemption "
                    "notices are not read from it until it does.",
                    gce_metadata_url(""),
                    e,
                )
            return False

    return watch


def default_watcher() -> Callable[[], bool] | None:
    """The platform's termination watcher: GCE's on Google Compute Engine, else None."""
    return gce_termination_watcher() if on_gce() else None


class Watch:
    """Calls ``watcher`` every ``interval_s`` in a background thread until it returns True,
    then calls ``notify`` once. ``stop()`` ends it."""

    def __init__(self, watcher: Callable[[], bool], notify: Callable[[], None], interval_s: float):
        self._stop = threading.Event()
        self._thread = start_thread(
            self._loop,
            (watcher, notify, interval_s),
            name="phalanx-termination-watcher",
            stop=self._stop,
        )

    def _loop(self, watcher, notify, interval_s) -> None:
        failures = 0
        while not self._stop.is_set():
            try:
                if watcher():
                    notify()
                    return
            except Exception as e:  # a user's watcher failing must not end the training
                failures += 1  # polled every second: warn once, not once a second
                log.log(
                    logging.WARNING if failures == 1 else logging.DEBUG,
                    "phalanx: the termination watcher raised %r; watching on (further "
                    "failures are logged at DEBUG level).",
                    e,
                )
            self._stop.wait(interval_s)

    def stop(self) -> None:
        """Ends the thread (it finishes the call in progress, if any)."""
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=2 * GCE_REQUEST_TIMEOUT_S + 1)
