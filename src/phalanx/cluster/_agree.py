"""Agreeing on a small fact across processes, without the devices: JAX's key-value store.

``all_have(tag, mine)`` tells every process which processes answered True for
``tag``. It goes through ``jax.distributed``'s coordinator (``_kv``) (not a device
collective), so it neither waits for the programs in flight nor can it
deadlock them, and every wait has a deadline that names the processes that
never answered. With one process it returns ``[mine]`` at once.
"""

from __future__ import annotations

import itertools

from . import _kv

_ROUNDS = itertools.count()


def new_round() -> int:
    """A fresh number for a series of agreements (the same on every process, called alike)."""
    return next(_ROUNDS)


def all_have(tag: str, mine: bool, *, timeout_s: float) -> list[bool]:
    """Every process's answer for ``tag``, in process order.

    Goes through ``_kv.gather``: O(processes) key-value operations per call,
    and its keys are deleted once every process has read the answer.

    Raises:
      ProcessesMissingError: some processes did not answer within ``timeout_s``.
    """
    answers = _kv.gather(
        f"agree/{tag}",
        "1" if mine else "0",
        timeout_s=timeout_s,
        what="whether they had another batch",
    )
    return [a == "1" for a in answers]
