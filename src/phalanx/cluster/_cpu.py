"""Simulated CPU devices: test distributed code on a laptop (DESIGN.md, decision 9).

``set_cpu_device_count(n)`` makes JAX's CPU backend expose ``n`` devices. It
must run before JAX starts its backends (before the first ``jax.devices()`` or
array operation); the ``phalanx`` command calls it for ``--devices N`` and for
the ``PHALANX_CPU_DEVICES`` variable. Library code never calls it on import.
"""

from __future__ import annotations

import os

import jax
from jax._src import xla_bridge

CPU_DEVICES_ENV = "PHALANX_CPU_DEVICES"


def set_cpu_device_count(n: int) -> None:
    """Makes JAX's CPU backend expose ``n`` simulated devices.

    Args:
      n: the number of CPU devices, at least 1.

    Raises:
      ValueError: ``n`` is not a positive integer.
      RuntimeError: JAX has already started its backends (too late to change).

    Examples:
      >>> import phalanx  # doctest: +SKIP
      >>> phalanx.cluster.set_cpu_device_count(8)  # doctest: +SKIP
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"set_cpu_device_count expects a positive int, got {n!r}.")
    if xla_bridge.backends_are_initialized():
        if jax.default_backend() == "cpu" and jax.local_device_count() == n:
            return
        raise RuntimeError(
            f"set_cpu_device_count({n}) came after JAX started its backends "
            f"(it sees {jax.local_device_count()} {jax.default_backend()} device(s)). "
            f"Call it first thing after `import jax`, or set {CPU_DEVICES_ENV}={n} "
            "(or XLA_FLAGS=--xla_force_host_platform_device_count=N) before Python starts."
        )
    jax.config.update("jax_num_cpu_devices", n)


def cpu_device_count_from_env() -> int | None:
    """Reads ``PHALANX_CPU_DEVICES``; ``None`` when unset.

    Raises:
      ValueError: the variable is set to something other than a positive integer.
    """
    raw = os.environ.get(CPU_DEVICES_ENV, "").strip()
    if not raw:
        return None
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(
            f"{CPU_DEVICES_ENV} must be a positive integer number of CPU devices, got {raw!r}. "
            f"Unset it, or set e.g. {CPU_DEVICES_ENV}=8."
        )
    return n
