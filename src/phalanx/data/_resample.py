"""``Dataset.rejection_resample``: elements kept at random so their classes follow a target.

``class_func(element)`` gives each element's class; element of class ``i``
is kept with probability ``(t_i / p_i) / max_j (t_j / p_j)`` (``t`` the
target distribution, ``p`` the initial one), so the kept classes are
distributed as ``t``, and the dataset yields ``(class, element)`` pairs, as
tf.data. Without ``initial_dist`` the initial distribution is estimated as TF
estimates it: class counts that start at 10 each, updated for every batch of
32 elements before that batch is filtered.

One pass: TensorFlow also mixes in the unfiltered input (a second pass over
it, chosen with probability ``min_i t_i / p_i`` per element), so it yields more
elements for the same distribution; phalanx yields the filtered ones only.
The random numbers come from ``Dataset.random(seed)``, so a seed gives the same
elements every time and the iterator checkpoints.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import DatasetArgumentError
from . import _structure as st
from ._dataset import Dataset

_TINY = np.finfo(np.float32).tiny
_ESTIMATION_BATCH, _SMOOTHING = 32, 10


def _distribution(values: Any, name: str, classes: int | None = None) -> np.ndarray:
    d = np.asarray(values, dtype=np.float32).reshape(-1)
    if d.size == 0 or not np.all(np.isfinite(d)) or (d < 0).any() or d.sum() <= 0:
        raise DatasetArgumentError(
            f"rejection_resample: {name} must be non-negative probabilities, one per class, not "
            f"all 0; got {values!r:.60}."
        )
    if classes is not None and d.size != classes:
        raise DatasetArgumentError(
            f"rejection_resample: {name} has {d.size} classes but target_dist has {classes}."
        )
    return d


def rejection_resample(
    dataset: Dataset, class_func: Any, target_dist: Any, initial_dist: Any, seed: Any
) -> Dataset:
    """See the module docstring."""
    target = _distribution(target_dist, "target_dist")
    k = target.size

    def class_of(data: Any) -> np.int64:
        c = np.asarray(st.call_unpacked(class_func, data))
        if c.shape != () or c.dtype.kind not in "iu" or not 0 <= int(c) < k:
            raise DatasetArgumentError(
                f"rejection_resample: class_func must return a class in [0, {k}) (a scalar "
                f"int), got {c!r:.40}."
            )
        return np.int64(c)

    if initial_dist is not None:
        dists = Dataset.from_tensors(_distribution(initial_dist, "initial_dist", k)).repeat()
    else:

        def update(seen: np.ndarray, classes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            seen = seen + np.bincount(classes, minlength=k).astype(np.int64)
            dist = (seen / seen.sum()).astype(np.float32)
            return seen, np.tile(dist, (len(classes), 1))

        dists = (
            dataset.map(lambda *x: class_of(x if len(x) > 1 else x[0]))
            .batch(_ESTIMATION_BATCH)
            .scan(np.full(k, _SMOOTHING, np.int64), update)
            .unbatch()
        )
    uniforms = Dataset.random(seed=seed).map(lambda r: np.float32((int(r) & 0xFFFFFF) / 2**24))

    def keep(dist: np.ndarray, data: Any, u: np.float32) -> bool:
        ratio = target / (dist + _TINY)
        return bool(u < ratio[class_of(data)] / ratio.max())

    return (
        Dataset.zip((dists, dataset, uniforms))
        .filter(keep)
        .map(lambda dist, data, u: (class_of(data), data))
    )
