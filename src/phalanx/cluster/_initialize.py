"""``initialize()``: bring the processes of a cluster together, or say who is missing.

Around ``jax.distributed.initialize`` with three changes:

* short timeouts for interactive use (JAX's defaults wait 300 s for missing
  processes, 100 s to notice a dead one and 300 s in the shutdown barrier);
* a roll call in Python first (``_rendezvous``): a wrong address or a process
  that never starts becomes an exception naming the address and the missing
  ids, instead of JAX's abort (SIGABRT) with no names;
* JAX's "called after the backend started" error, rephrased with the fix.

The process-wide state is one ``_Runtime`` instance, as JAX's own
``jax._src.distributed.global_state``.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
import weakref
from dataclasses import dataclass

import jax
from jax._src import xla_bridge
from jax._src.distributed import global_state as g

from ..errors import BackendAlreadyStartedError, ClusterMismatchError
from ._cpu import cpu_device_count_from_env, set_cpu_device_count
from ._rendezvous import attend_roll_call, bind_host, host_roll_call, jax_bind_address
from ._resolve import resolve
from ._resolver import ClusterResolver, split_address
from ._watchdog import watchdog

DEFAULT_INITIALIZATION_TIMEOUT = 60.0
DEFAULT_HEARTBEAT_TIMEOUT = 15.0
DEFAULT_SHUTDOWN_TIMEOUT = 30.0


@dataclass
class _Runtime:
    """What ``initialize()`` set up in this process."""

    resolver: ClusterResolver | None = None
    owns_jax: bool = False  # True when phalanx called jax.distributed.initialize

    @property
    def key(self) -> tuple | None:
        r = self.resolver
        return None if r is None else (r.coordinator_address, r.num_processes, r.process_id)


_runtime = _Runtime()


def initialize(
    resolver: ClusterResolver | None = None,
    *,
    initialization_timeout: float = DEFAULT_INITIALIZATION_TIMEOUT,
    heartbeat_timeout: float = DEFAULT_HEARTBEAT_TIMEOUT,
    shutdown_timeout: float = DEFAULT_SHUTDOWN_TIMEOUT,
) -> ClusterResolver | None:
    """Connects this process to the others of its cluster (``jax.distributed.initialize``).

    Call it first, before any JAX computation. Every process of the job calls
    it; process 0 hosts the coordinator. With no cluster (``resolve()`` finds
    none) it only applies ``PHALANX_CPU_DEVICES`` and returns None; with a
    one-process cluster it connects nothing. Calling it again with the same
    cluster returns at once.

    Args:
      resolver: the cluster; default ``resolve()`` (``PHALANX_*``, ``TF_CONFIG``,
        Slurm, Kubernetes, TPU VM, in that order).
      initialization_timeout: seconds for all processes to arrive (default 60).
        Processes that start later than the first by more than this fail.
      heartbeat_timeout: seconds after which JAX declares a silent process
        dead and ends the job (default 15; JAX's is 100).
      shutdown_timeout: seconds a finished process waits at exit for the
        others to finish too (default 30; JAX's is 300). Raise it when one
        process does long work at the end (say, writes a large file) that the
        others do not wait for.

    Once connected to other processes, an uncaught exception ends this process
    at once (traceback, then exit status 1) instead of leaving it in JAX's
    shutdown barrier, so the launcher or the others' heartbeat ends the job
    within seconds. ``sys.exit(n)`` still goes through the barrier.

    Returns:
      The resolver in use, or None when there is no cluster.

    Raises:
      BackendAlreadyStartedError: JAX already started its backends in this process.
      CoordinatorUnreachableError: nobody listened at the coordinator address in time.
      ProcessesMissingError: some processes never arrived (their ids are named).
      ClusterMismatchError: the processes disagree about the cluster, or this
        process was initialized for another cluster.
      ClusterConfigError: the environment describes a cluster badly.
      InitializationError: process 0 cannot listen on the coordinator port.

    Examples:
      >>> import phalanx  # doctest: +SKIP
      >>> phalanx.cluster.initialize()  # under `phalanx launch -n 2 -- script.py`  # doctest: +SKIP
      EnvClusterResolver(coordinator_address='127.0.0.1:52113', num_processes=2, process_id=0)
    """
    resolver = resolver if resolver is not None else resolve()
    if resolver is None:
        _apply_cpu_devices(cpu_device_count_from_env())
        return None
    if _already(resolver, jax):
        return _runtime.resolver
    if resolver.num_processes == 1:
        _apply_cpu_devices(resolver.cpu_devices or cpu_device_count_from_env())
        _runtime.resolver = resolver
        return resolver
    _check_backends_not_started()
    _apply_cpu_devices(resolver.cpu_devices)
    start = time.monotonic()
    bind = _roll_call(resolver, initialization_timeout)
    left = max(10.0, initialization_timeout - (time.monotonic() - start))
    _say(
        f"process {resolver.process_id} of {resolver.num_processes}: all arrived; connecting "
        f"to JAX's coordinator at {resolver.coordinator_address} (deadline {left:.0f} s, "
        f"heartbeat {heartbeat_timeout:.0f} s)"
    )
    _connect_jax(jax, resolver, bind, left, heartbeat_timeout, shutdown_timeout)
    _runtime.resolver, _runtime.owns_jax = resolver, True
    _exit_at_once_on_uncaught_exceptions()
    return resolver


def connect_to_cluster(
    cluster_resolver: ClusterResolver | None = None, *args: object, **kwargs: object
) -> ClusterResolver | None:
    """TensorFlow's ``tf.config.experimental_connect_to_cluster``: the same as ``initialize``.

    TensorFlow's other arguments (``job_name``, ``task_index``, ``protocol``,
    ``make_master_device_default``, ``cluster_device_filters``) are accepted
    and ignored; the timeouts of ``initialize`` are accepted by keyword.

    Returns:
      The resolver in use, or None when there is no cluster.
    """
    del args
    timeouts = {k: kwargs[k] for k in _TIMEOUTS if k in kwargs}
    return initialize(cluster_resolver, **timeouts)


def initialize_tpu_system(
    cluster_resolver: ClusterResolver | None = None, **kwargs: object
) -> ClusterResolver | None:
    """TensorFlow's ``tf.tpu.experimental.initialize_tpu_system``: the same as ``initialize``.

    On a TPU VM ``resolve()`` finds the TPU slice; elsewhere this connects
    whatever cluster the environment describes (or nothing).

    Returns:
      The resolver in use, or None when there is no cluster.
    """
    timeouts = {k: kwargs[k] for k in _TIMEOUTS if k in kwargs}
    return initialize(cluster_resolver, **timeouts)


_TIMEOUTS = ("initialization_timeout", "heartbeat_timeout", "shutdown_timeout")


def is_initialized() -> bool:
    """True when this process is connected to a multi-process cluster (by phalanx or by JAX)."""
    return bool(jax.distributed.is_initialized())


def current_resolver() -> ClusterResolver | None:
    """Returns the resolver ``initialize()`` connected with, or None."""
    return _runtime.resolver


def shutdown() -> None:
    """Disconnects from the cluster (``jax.distributed.shutdown``) and stops the watchdog.

    Waits at most ``shutdown_timeout`` seconds for the other processes to
    reach their own shutdown. Does nothing when not initialized.
    """
    watchdog.stop()
    if jax.distributed.is_initialized() and _runtime.owns_jax:
        jax.distributed.shutdown()
    _runtime.resolver, _runtime.owns_jax = None, False


# Steps ---------------------------------------------------------------------------


def _already(resolver: ClusterResolver, jax) -> bool:
    """True when this process is already in ``resolver``'s cluster; raises for another one."""
    key = (resolver.coordinator_address, resolver.num_processes, resolver.process_id)
    if _runtime.key is None and jax.distributed.is_initialized():
        theirs = (g.coordinator_address, g.num_processes, g.process_id)
        if theirs != key:
            raise ClusterMismatchError(
                f"jax.distributed is already initialized for coordinator {theirs[0]}, "
                f"{theirs[1]} processes, process id {theirs[2]}; phalanx was asked for "
                f"{resolver.describe()}. Use one of the two, or call "
                "phalanx.cluster.shutdown()/jax.distributed.shutdown() first."
            )
        _runtime.resolver = resolver
        return True
    if _runtime.key is None:
        return False
    if _runtime.key != key:
        raise ClusterMismatchError(
            f"initialize() already connected this process ({_runtime.resolver.describe()}); "
            f"now it was asked for {resolver.describe()}. Call phalanx.cluster.shutdown() "
            "first, or pass the same cluster."
        )
    return True


def _check_backends_not_started() -> None:
    if xla_bridge.backends_are_initialized():
        raise BackendAlreadyStartedError(_too_late("JAX's backends are already running"))


def _too_late(jax_said: str) -> str:
    return (
        f"initialize() must come before JAX starts its backends, but {jax_said}: something "
        "already called jax.devices(), created an array or ran a computation. Call "
        "phalanx.cluster.initialize() (or build the MultiWorkerMirroredStrategy / "
        "TPUStrategy) first thing in the script, right after the imports; in a notebook, "
        "restart the kernel and run it first."
    )


def _apply_cpu_devices(n: int | None) -> None:
    if n is not None:
        set_cpu_device_count(n)


def _roll_call(resolver: ClusterResolver, timeout: float) -> str | None:
    """Meets the other processes; returns where process 0 listened (None elsewhere)."""
    host, port = split_address(resolver.coordinator_address)
    hint = resolver.missing_hint()
    secret = resolver.job_secret
    if resolver.process_id == 0:
        bind = bind_host(host)
        unsigned = "" if secret else " (no PHALANX_JOB_SECRET: anyone who reaches it may join)"
        _say(
            f"process 0 of {resolver.num_processes}: waiting up to {timeout:.0f} s for the "
            f"others at {resolver.coordinator_address}, listening on "
            f"{jax_bind_address(bind, port)}{unsigned}"
        )
        host_roll_call(
            port,
            resolver.num_processes,
            timeout=timeout,
            address=resolver.coordinator_address,
            hint=hint,
            bind=bind,
            secret=secret,
        )
        return bind
    attend_roll_call(
        host,
        port,
        resolver.num_processes,
        resolver.process_id,
        timeout=timeout,
        hint=hint,
        secret=secret,
    )
    return None


def _connect_jax(jax, resolver, bind, timeout, heartbeat_timeout, shutdown_timeout) -> None:
    ids = resolver.local_device_ids
    _, port = split_address(resolver.coordinator_address)
    try:
        jax.distributed.initialize(
            coordinator_address=resolver.coordinator_address,
            num_processes=resolver.num_processes,
            process_id=resolver.process_id,
            local_device_ids=list(ids) if ids is not None else None,
            cluster_detection_method="deactivate",
            # JAX's default listens on every interface ([::]); its key-value store has no
            # authentication, so process 0 listens where its roll call did: the coordinator's
            # host (the others pass None: JAX reads it on process 0 only).
            coordinator_bind_address=jax_bind_address(bind, port) if bind else None,
            initialization_timeout=math.ceil(timeout),
            heartbeat_timeout_seconds=math.ceil(heartbeat_timeout),
            shutdown_timeout_seconds=math.ceil(shutdown_timeout),
        )
    except RuntimeError as e:
        if "before any JAX calls" in str(e):
            raise BackendAlreadyStartedError(_too_late(f"JAX said: {e}")) from e
        raise


def _exit_at_once_on_uncaught_exceptions() -> None:
    """An uncaught exception ends the process now, not after JAX's shutdown barrier.

    At exit JAX waits up to ``shutdown_timeout`` for the other processes, which
    are themselves stuck waiting for this one in a collective: the job would
    hang, then abort. Printing the traceback and leaving with ``os._exit(1)``
    lets ``phalanx launch`` (or the others' heartbeat) end the job at once.
    """
    previous = sys.excepthook
    if previous in _EXIT_HOOKS:
        return

    def hook(kind, value, traceback):
        previous(kind, value, traceback)
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(130 if issubclass(kind, KeyboardInterrupt) else 1)

    _EXIT_HOOKS.add(hook)
    sys.excepthook = hook


_EXIT_HOOKS: weakref.WeakSet = weakref.WeakSet()  # the hooks installed above


def _say(line: str) -> None:
    print(f"[phalanx] {line}", file=sys.stderr, flush=True)
