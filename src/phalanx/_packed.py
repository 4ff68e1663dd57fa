"""A pytree of small arrays packed into one device vector: one transfer to the host.

``fit`` reads an execution's logs (the loss, each metric, the label check) on
the host after every execution. Fetched as a dict of arrays (``jax.device_get``)
that is one transfer and one wait per array, plus a Python walk of the tree:
~0.1-0.3 ms of CPU per execution here, as much as a small model's step (issue
24). Inside the program ``Packing.pack`` lays every leaf's bits out in one
``uint32`` vector; on the host ``Packed.fetch`` reads it with one transfer and
cuts the leaves back out, bit for bit.

Examples:
    >>> import jax, jax.numpy as jnp
    >>> packing = Packing()
    >>> vector = jax.jit(packing.pack)({"loss": jnp.float32(0.5), "n": jnp.arange(3)})
    >>> Packed(vector, packing).fetch()
    {'loss': array(0.5, dtype=float32), 'n': array([0, 1, 2], dtype=int32)}
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax


class Packing:
    """How one program packs its pytree; the layout is recorded when the program traces."""

    def __init__(self) -> None:
        self._layout = None  # (treedef, [(shape, dtype, wide shape, wide dtype, words), ...])

    def pack(self, tree: Any) -> jax.Array:
        """``tree``'s leaves as one ``uint32`` vector (call it inside the traced program).

        A leaf of 4 or 8 bytes per element keeps its bits (an 8-byte one as two
        words); a narrower one is widened first (floats to float32, the rest to
        int32), which is exact; a complex one travels as its real and imaginary
        parts.
        """
        leaves, treedef = jax.tree.flatten(tree)
        words, layout = [], []
        for leaf in map(jnp.asarray, leaves):
            wide = leaf
            if jnp.iscomplexobj(leaf):
                wide = jnp.stack([leaf.real, leaf.imag], axis=-1)
            elif leaf.dtype.itemsize < 4:
                floating = jnp.issubdtype(leaf.dtype, jnp.floating)
                wide = leaf.astype(jnp.float32 if floating else jnp.int32)
            bits = lax.bitcast_convert_type(wide, jnp.uint32).ravel()
            words.append(bits)
            layout.append((leaf.shape, leaf.dtype, wide.shape, wide.dtype, bits.size))
        self._layout = (treedef, layout)
        return jnp.concatenate(words) if words else jnp.zeros((0,), jnp.uint32)

    def unpack(self, host: np.ndarray) -> Any:
        """The pytree ``pack`` was given, from its vector on the host (numpy leaves)."""
        if self._layout is None:
            raise RuntimeError("Packing.unpack before the program that packs was traced")
        treedef, layout = self._layout
        leaves, start = [], 0
        for shape, dtype, wide_shape, wide, size in layout:
            chunk = host[start : start + size].view(wide).reshape(wide_shape)
            if np.issubdtype(dtype, np.complexfloating):
                leaf = np.empty(shape, dtype)
                leaf.real, leaf.imag = chunk[..., 0], chunk[..., 1]  # exact, unlike a + 1j * b
            else:
                leaf = chunk.astype(dtype) if wide != dtype else chunk
            leaves.append(leaf)
            start += size
        return jax.tree.unflatten(treedef, leaves)


class Packed:
    """A program's packed result: its device ``vector`` and the ``packing`` that reads it."""

    __slots__ = ("packing", "vector")

    def __init__(self, vector: jax.Array, packing: Packing) -> None:
        self.vector, self.packing = vector, packing

    def block_until_ready(self) -> Packed:  # jax.block_until_ready calls it on a leaf
        self.vector.block_until_ready()
        return self

    def fetch(self) -> Any:
        """The packed pytree on the host: one transfer.

        Through ``jax.device_get``, so that a process waiting here for its devices
        shows as waiting inside JAX to ``phalanx.cluster.watchdog``, which then
        blames the process it waits for rather than itself.
        """
        return self.packing.unpack(jax.device_get(self.vector))
