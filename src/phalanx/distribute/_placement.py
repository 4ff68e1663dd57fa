"""Placing host values on a mesh that spans several processes.

With one process, ``jax.device_put(x, sharding)`` places a value. With
several, a sharding that names other processes' devices needs a global
``jax.Array``, and there are two ways to make one from host data:

- the *same value on every process* (a model's initial weights, numpy arrays
  that a script run on every worker loads whole, batch indices computed from a
  shared seed): each process puts the slices that its devices hold,
  ``put_global`` here (``jax.make_array_from_callback``). ``jax.device_put``
  would do the same but first checks with a collective that every process
  passed equal values, an all-gather of the whole value per call;
- *each process's share* (batches of an auto-sharded dataset): the global
  array is the shares concatenated in process order,
  ``jax.make_array_from_process_local_data`` (``Strategy._global_batch``).

A value that already is a global array (not fully addressable) is resharded
by ``jax.device_put``, which every process calls alike.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from jax.sharding import Sharding


def put_global(tree: Any, sharding: Sharding) -> Any:
    """Places every leaf of ``tree``, the same value on every process, with ``sharding``.

    Args:
      tree: a pytree of numpy arrays, scalars, or ``jax.Array`` s (local or global;
        typed PRNG keys too). Every process passes equal values.
      sharding: the target sharding, over the devices of any processes.

    Returns:
      The pytree with each leaf a ``jax.Array`` with ``sharding``.
    """
    if sharding.is_fully_addressable:
        return jax.device_put(tree, sharding)
    return jax.tree.map(lambda x: _put_leaf(x, sharding), tree)


def _put_leaf(x: Any, sharding: Sharding) -> jax.Array:
    if isinstance(x, jax.Array):
        if x.sharding == sharding:
            return x
        if not x.is_fully_addressable:
            return jax.device_put(x, sharding)
        if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
            data = _put_leaf(jax.random.key_data(x), sharding)
            return jax.random.wrap_key_data(data, impl=jax.random.key_impl(x))
    host = np.asarray(x)
    return jax.make_array_from_callback(host.shape, sharding, lambda index: host[index])
