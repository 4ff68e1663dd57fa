"""Agreeing on a small fact across processes, without the devices: JAX's key-value store.

``all_have(tag, mine)`` tells every process which processes answered True for
``tag``. It goes through ``jax.distributed``'s coordinator (not a device
collective), so it neither waits for the programs in flight nor can it
deadlock them, and every wait has a deadline that names the processes that
never answered. With one process it returns ``[mine]`` at once.
"""

from __future__ import annotations

import itertools

from ..errors import ProcessesMissingError

_PREFIX = "phalanx/agree/"
_ROUNDS = itertools.count()


def new_round() -> int:
    """A fresh number for a series of agreements (the same on every process, called alike)."""
    return next(_ROUNDS)


def all_have(tag: str, mine: bool, *, timeout_s: float) -> list[bool]:
    """Every process's answer for ``tag``, in process order.

    Raises:
      ProcessesMissingError: some processes did not answer within ``timeout_s``.
    """
    from jax._src.distributed import global_state

    client = global_state.client
    if client is None:
        return [mine]
    me, n = int(global_state.process_id), int(global_state.num_processes)
    client.key_value_set(f"{_PREFIX}{tag}/{me}", "1" if mine else "0")
    answers: list[bool] = []
    missing: list[int] = []
    for p in range(n):
        try:
            value = client.blocking_key_value_get(f"{_PREFIX}{tag}/{p}", int(timeout_s * 1000))
        except Exception:  # DEADLINE_EXCEEDED, or the coordinator is gone
            missing.append(p)
            continue
        answers.append(value == "1")
    if missing:
        raise ProcessesMissingError(
            f"Process {me} waited {timeout_s:.0f} s for processes {missing} to report whether "
            f"they had another batch ({tag}); they never did. They may be stuck or dead: "
            "see their output (phalanx launch prefixes it with [i])."
        )
    return answers
