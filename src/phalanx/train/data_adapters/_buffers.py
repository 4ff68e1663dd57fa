"""Host buffers that stacked batches are written into and lent to one execution each
(``_BufferPool``), shared by the adapters of a process (``_SharedSets``)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, NamedTuple

import jax

from ...distribute import HostBuffer
from ...errors import FitInputError


class _BufferPool:
    """Host buffer sets for stacked batches, each lent to one execution at a time.

    ``take`` lends a set (``_SETS``: one given back and no longer referenced by
    JAX, else a new one); the lender it returns gives the set back. The first
    ``take`` fixes the spec: every batch must have the same structure, shapes
    (but the batch size) and dtypes.
    """

    def __init__(self):
        self._spec = None
        self._lock = threading.Lock()

    def take(self, spec) -> _Set:
        with self._lock:
            if self._spec != spec:
                if self._spec is not None:
                    raise FitInputError(
                        "Every batch must have the same structure, shapes (but the batch size) "
                        f"and dtypes; the first was {self._spec}, now {spec}. Fix the input "
                        "pipeline so that its batches agree."
                    )
                self._spec = spec
        return _SETS.take(spec)

    def lender(self, lent: _Set) -> Callable[[], None]:
        """A function that gives ``lent`` back (once; later calls do nothing)."""
        pending = [lent]

        def release() -> None:
            if pending:
                _SETS.give(pending.pop())

        return release


class _Set(NamedTuple):
    key: Any
    buffers: Any  # the pytree of arrays the batches are copied into
    hosts: list  # their HostBuffers


class _SharedSets:
    """Buffer sets given back, shared by every adapter of the process (oldest first).

    A set is lent again only when JAX holds no reference to its memory
    (``HostBuffer.free``: no device array made from it is alive), so a later
    ``fit`` reuses memory that is already mapped instead of page-faulting
    fresh sets (as much as a step costs here). At most ``keep_bytes`` of sets
    are kept.
    """

    def __init__(self, keep_bytes: int = 1 << 30):
        self._back: list[_Set] = []
        self._lock = threading.Lock()
        self._keep = keep_bytes

    def take(self, spec) -> _Set:
        key = (jax.tree.structure(spec), tuple(jax.tree.leaves(spec)))
        with self._lock:
            for n, s in enumerate(self._back):
                if s.key == key and all(h.free() for h in s.hosts):
                    return self._back.pop(n)
        hosts = jax.tree.map(lambda d: HostBuffer(d.shape, d.dtype, zero=True), spec)
        return _Set(key, jax.tree.map(lambda h: h.buf, hosts), jax.tree.leaves(hosts))

    def give(self, lent: _Set) -> None:
        with self._lock:
            self._back.append(lent)
            while sum(h.buf.nbytes for s in self._back for h in s.hosts) > self._keep:
                self._back.pop(0)


_SETS = _SharedSets()
