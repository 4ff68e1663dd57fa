"""Placing host values on a mesh that spans several processes.

With one process, ``jax.device_put(x, sharding)`` places a value. With
several, a sharding that names other processes' devices needs a global
``jax.Array``, and there are two ways to make one from host data:

- the *same value on every process* (a model's initial weights, numpy arrays
  that a script run on every worker loads whole, batch indices computed from a
  shared seed): each process puts the slices that its devices hold,
  ``put`` here (``jax.make_array_from_callback``). ``jax.device_put``
  would do the same but first checks with a collective that every process
  passed equal values, an all-gather of the whole value per call;
- *each process's share* (batches of an auto-sharded dataset): the global
  array is the shares concatenated in process order,
  ``jax.make_array_from_process_local_data`` (``Strategy._global_batch``).

A value that already is a global array (not fully addressable) is resharded
by ``jax.device_put``, which every process calls alike.

Every numpy value phalanx hands to JAX goes through ``host_array`` first: JAX
treats a numpy array object as an immutable value. It may alias its memory
(zero-copy on CPU), and it keeps the copy it converts to its canonical dtype
(int64 to int32, float64 to float32 without x64) per array *object*, in a
weak-key cache (jax 0.10: ``abstract_arrays._canonicalize_ndarray_dtype``), so
an array refilled in place and placed again would place its first contents.
``host_array`` converts to the canonical dtype on the host, so JAX has
nothing to convert. Values the user owns (``strategy.run`` arguments, batches
of a distributed dataset) are copied first, as TensorFlow copies a numpy
argument into a tensor: a script may refill its buffer as soon as ``run``
returns. Buffers phalanx owns are lent without a copy, and their owner
guarantees that nothing writes them while an execution may read them
(docs/decisions.md).

Resident data (the arrays ``fit`` indexes on the devices, placed once per
call) goes through ``put_resident``: on CPU devices, a copy into a fresh
buffer costs mostly its page faults (about 0.1-0.3 s for MNIST's 188 MB
here, paid by every ``fit`` call), so the values are copied into an owned
host buffer that is reused from call to call, and JAX aliases that buffer
(``may_alias``; XLA's CPU client aliases 64-byte-aligned host memory) instead
of copying it again. A buffer is refilled only once JAX holds no reference to
it any more (XLA has freed every device buffer aliasing it, which it does
after the last program that reads them), so it is never rewritten while
anything may read it.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from typing import Any

import jax
import numpy as np
from jax.sharding import Sharding

STAGE_MIN_BYTES = 1 << 20  # smaller resident arrays are placed by a plain copy
_ALIGN = 64  # the alignment at which XLA's CPU client aliases host memory


def host_array(x: Any, *, copy: bool = False) -> np.ndarray:
    """``x`` as a numpy array of JAX's canonical dtype (``int64`` becomes ``int32``
    unless x64 is enabled), converted here so that JAX converts nothing.

    Args:
      x: an array-like.
      copy: return a new array even when ``x`` already has the canonical dtype.

    Examples:
      >>> host_array(np.arange(3)).dtype
      dtype('int32')
    """
    a = np.asarray(x)
    dtype = jax.dtypes.canonicalize_dtype(a.dtype)
    if a.dtype != dtype:
        return a.astype(dtype)
    return np.array(a) if copy else a


def host_arrays(tree: Any, *, copy: bool = False) -> Any:
    """``host_array`` on every numpy leaf of ``tree`` (``jax.Array`` s and Python scalars
    pass through: JAX places those without converting a numpy object)."""

    def leaf(a):
        return host_array(a, copy=copy) if isinstance(a, np.ndarray | np.generic) else a

    return jax.tree.map(leaf, tree)


def put(tree: Any, sharding: Sharding, *, copy: bool = True, alias: bool = False) -> Any:
    """Places ``tree``, the same value on every process, with ``sharding`` (any process count).

    Args:
      tree: a pytree of numpy arrays, scalars or ``jax.Array`` s.
      sharding: the target sharding.
      copy: copy numpy leaves first, so that the caller may write them again at
        once; pass False only for buffers whose owner keeps them unwritten until
        every execution that reads them has finished.
      alias: let JAX alias the leaves' memory instead of copying it (CPU devices,
        64-byte-aligned arrays; ``HostBuffer`` s, whose ``free`` says when JAX let go).
    """
    tree = host_arrays(tree, copy=copy)
    if sharding.is_fully_addressable:
        return jax.device_put(tree, sharding, may_alias=True if alias else None)
    return jax.tree.map(lambda x: _put_leaf(x, sharding), tree)


def _put_leaf(x: Any, sharding: Sharding) -> jax.Array:
    """One leaf, the same value on every process: each process puts the slices its
    devices hold (``jax.make_array_from_callback``), with no equality check."""
    if isinstance(x, jax.Array):
        if x.sharding == sharding:
            return x
        if not x.is_fully_addressable:
            return jax.device_put(x, sharding)
        if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
            data = _put_leaf(jax.random.key_data(x), sharding)
            return jax.random.wrap_key_data(data, impl=jax.random.key_impl(x))
    host = host_array(x)
    return jax.make_array_from_callback(host.shape, sharding, lambda index: host[index])


def put_resident(tree: Any, sharding: Sharding) -> Any:
    """Places ``tree`` (host arrays, the same on every process) to be read for a while
    (resident data), through reused host buffers on CPU devices (module docstring).

    As ``put(copy=False)``, the caller keeps ``tree`` unwritten until every
    program that reads the result has finished (``fit`` reads the user's arrays
    only while it runs); the staged copies are the pool's.
    """
    devices = sharding.device_set
    if not sharding.is_fully_addressable or any(d.platform != "cpu" for d in devices):
        return put(tree, sharding, copy=False)

    def leaf(a):
        if not isinstance(a, np.ndarray) or a.nbytes < STAGE_MIN_BYTES:
            return put(a, sharding, copy=False)
        host = host_array(a)
        with _staging.lend(host.shape, host.dtype) as buf:
            np.copyto(buf, host)
            return jax.device_put(buf, sharding, may_alias=True)

    return jax.tree.map(leaf, tree)


class HostBuffer:
    """One 64-byte-aligned host array (``buf``) that JAX may alias; ``free`` once it does not.

    JAX keeps a reference to the memory it aliases (one per device buffer) until
    XLA frees those buffers, after the last program that reads them, so a
    reference count above the idle one means "may still be read".
    """

    def __init__(self, shape: tuple, dtype: np.dtype, *, zero: bool = False):
        nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
        self.raw = (np.zeros if zero else np.empty)(nbytes + _ALIGN, np.uint8)
        off = -self.raw.ctypes.data % _ALIGN
        self.buf = self.raw[off : off + nbytes].view(dtype).reshape(shape)
        self.lent = False
        self.idle = self._refs()

    def _refs(self) -> int:
        # The memory's owner: ``buf`` and every array made from it (views, JAX's
        # references, whatever object JAX was given) hold it as their ``base``.
        return sys.getrefcount(self.raw)

    def free(self) -> bool:
        """Whether nothing but its owner refers to the memory (no JAX array aliases it)."""
        return not self.lent and self._refs() == self.idle


class _Staging:
    """``HostBuffer`` s by shape and dtype, reused once free; of the free ones, at most
    ``keep`` and ``keep_bytes`` are kept (those of shapes seen first go first)."""

    def __init__(self, keep: int = 4, keep_bytes: int = 2 << 30):
        self._stages: dict[tuple, list[HostBuffer]] = {}
        self._lock = threading.Lock()
        self._keep, self._keep_bytes = keep, keep_bytes

    @contextlib.contextmanager
    def lend(self, shape: tuple, dtype: np.dtype):
        """A free buffer of ``shape`` and ``dtype`` for the block (fill it and place it there)."""
        key = (tuple(shape), np.dtype(dtype).str)
        with self._lock:
            stages = self._stages.setdefault(key, [])
            stage = next((st for st in stages if st.free()), None)
            if stage is None:
                stage = HostBuffer(shape, dtype)
                stages.append(stage)
            stage.lent = True
            self._trim()
        try:
            yield stage.buf
        finally:
            stage.lent = False

    def _trim(self) -> None:
        free = [(k, st) for k, sts in self._stages.items() for st in sts if st.free()]
        kept = sum(st.buf.nbytes for _, st in free)
        for n, (k, st) in enumerate(free):
            if len(free) - n <= self._keep and kept <= self._keep_bytes:
                break
            kept -= st.buf.nbytes
            self._stages[k].remove(st)
            if not self._stages[k]:
                del self._stages[k]


_staging = _Staging()
