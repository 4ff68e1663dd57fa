"""What every adapter shares: the ``Execution`` it yields, the placement of its
batches on the mesh, a batch's parts, and the warning when the input runs out."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from ...distribute import host_array, put, put_resident
from ...errors import BatchNotDivisibleError, FitInputError

RESIDENT_LIMIT_BYTES = 2 << 30


class Execution(NamedTuple):
    """One program's worth of input.

    Attributes:
      xs: what the program scans over: stacked batches ``(x, y, sw, mask)`` or
        batch indices into ``data``, placed ``P(None, 'replica')``.
      first_step: the index, within the epoch, of the first step.
      steps: how many of the N steps hold real data.
      sizes: the number of real examples in each real step's batch.
      release: called by the loop once every device has finished the program
        that read ``xs`` (its outputs are ready): the host buffers ``xs`` was
        placed from may then be refilled. ``None`` when nothing is lent.
      input_state: the input iterator's ``get_state()`` right after this
        execution's batches (what a checkpoint saves, so that a resumed ``fit``
        reads on from there); ``None`` for arrays (their order follows from the
        seed and the epoch) and for inputs that cannot save a position.
      data: the device-resident ``(x, y, sample_weight)`` (``P()``) that ``xs``
        indexes, or None when ``xs`` holds the batches themselves; it chooses
        the compiled program (``_step.fused_program``'s ``resident``).
    """

    xs: Any
    first_step: int
    steps: int
    sizes: tuple[int, ...]
    release: Callable[[], None] | None = None
    input_state: Any = None
    data: Any = None

    def signature(self) -> tuple:
        """What ``fit`` passes to its training program besides the state, as shapes
        (``Model.summary``'s memory report compiles the step again from it).

        Returns:
          ``(resident, (data, xs, steps))`` with arrays as ``jax.ShapeDtypeStruct``
          (with their shardings), so that keeping it holds no device memory.
        """
        return self.data is not None, jax.tree.map(_spec, (self.data, self.xs, self.steps))


def _spec(x: Any) -> Any:
    if isinstance(x, jax.Array):
        return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=x.sharding, weak_type=x.weak_type)
    if isinstance(x, np.ndarray):
        return jax.ShapeDtypeStruct(x.shape, x.dtype)
    return x


def padded_width(batch_size: int, num_replicas: int) -> int:
    """The rows a step holds for a global batch of ``batch_size``: the next multiple of the replicas.

    A global batch that does not split over the replicas (Keras's default 32 on
    3) is padded at its end with masked rows, as a short last batch is: every
    replica gets ``width / num_replicas`` rows, and the padding counts nowhere
    (not in losses, gradients or metrics; predictions drop it).
    """
    return -(-batch_size // num_replicas) * num_replicas


def check_global_batch(
    batch_size: int, num_replicas: int, what: str = "batch_size", hint: str = ""
) -> None:
    """Raises ``BatchNotDivisibleError`` unless ``batch_size`` splits over the replicas."""
    if batch_size % num_replicas:
        raise BatchNotDivisibleError.of(batch_size, num_replicas, what=f"global {what}", hint=hint)


def _leading(tree) -> int:
    sizes = {int(np.shape(a)[0]) for a in jax.tree.leaves(tree)}
    if len(sizes) != 1:
        raise FitInputError(
            "All input arrays (x, y, sample_weight) must have the same number of examples; "
            f"got first dimensions {sorted(sizes)}."
        )
    return sizes.pop()


def _as_host(tree):
    return jax.tree.map(host_array, tree)


class _Placer:
    """Places stacked host arrays on the strategy's mesh, split on the batch axis (axis 1).

    Without a copy: the adapters own what they place (lent buffers, fresh
    gathers) or read the user's arrays only while ``fit`` runs.

    ``stacked_put``/``replicated_put`` take the same value on every process
    (one process: a plain ``device_put``); ``local_put`` takes this process's
    share of each batch and builds the global batches from all processes' shares.
    """

    def __init__(self, strategy):
        self.strategy = strategy
        self.stacked = NamedSharding(strategy.mesh, P(None, "replica"))
        self.replicated = NamedSharding(strategy.mesh, P())
        self.multi_process = strategy._num_processes > 1

    def stacked_put(self, tree):
        # alias: what is placed here is never written while a device array reads it
        # (lent sets come back only when JAX lets go of them; gathers are fresh).
        return put(tree, self.stacked, copy=False, alias=True)

    def replicated_put(self, tree):
        return put(tree, self.replicated, copy=False)

    def resident_put(self, tree):
        """Places data that the programs index for a whole ``fit`` (replicated)."""
        return put_resident(tree, self.replicated)

    def local_put(self, tree):
        return self.strategy._global_batch(tree, stacked=True, copy=False)


def _class_weights(class_weight: dict, y) -> np.ndarray:
    if y is None:
        raise FitInputError("class_weight needs targets y; got y=None.")
    labels = np.asarray(y)
    if labels.ndim > 1 and labels.shape[-1] > 1:
        labels = labels.argmax(-1)
    labels = labels.reshape(labels.shape[0], -1)[:, 0].astype(np.int64)
    table = np.ones(max(int(labels.max()) + 1, max(class_weight) + 1), np.float32)
    for cls, w in class_weight.items():
        table[int(cls)] = float(w)
    return table[labels]


def split_batch(element) -> tuple[Any, Any, Any]:
    """Reads a batch as ``(x, y, sample_weight)``, Keras's way."""
    if isinstance(element, tuple):
        if len(element) == 1:
            return element[0], None, None
        if len(element) == 2:
            return element[0], element[1], None
        if len(element) == 3:
            return element
        raise FitInputError(
            "A batch is x, (x,), (x, y) or (x, y, sample_weight); got a tuple of "
            f"{len(element)} items. Put multiple inputs in a dict or an inner tuple."
        )
    return element, None, None


OUT_OF_DATA = (
    "Your input ran out of data; interrupting training. Make sure that your dataset or "
    "generator can generate at least `steps_per_epoch * epochs` batches. You may need to "
    "use the `.repeat()` function when building your dataset."
)


def warn_out_of_data() -> None:
    """Warns (``UserWarning``) that the input ended before the steps asked for, as Keras 3."""
    warnings.warn(OUT_OF_DATA, UserWarning, stacklevel=2)
