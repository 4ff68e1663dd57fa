"""Pipeline options and the tf.data constants (``AUTOTUNE``, cardinalities, ``AutoShardPolicy``)."""

from __future__ import annotations

import copy
import enum
from typing import Any

import numpy as np

AUTOTUNE = -1
"""Let the pipeline choose a parallelism or buffer size, as ``tf.data.AUTOTUNE``."""

INFINITE_CARDINALITY = -1
"""``Dataset.cardinality()`` of a dataset that never ends (``tf.data.INFINITE_CARDINALITY``)."""

UNKNOWN_CARDINALITY = -2
"""``Dataset.cardinality()`` when the length is not known without iterating (``tf.data.UNKNOWN_CARDINALITY``)."""


class AutoShardPolicy(enum.IntEnum):
    """How a pipeline is split over input pipelines (processes), as ``tf.data.experimental.AutoShardPolicy``.

    ``FILE`` finds the pipeline's file readers as tf.data's rewrite does and gives
    each pipeline a disjoint subset of the files. ``DATA`` has every pipeline read
    everything and keep every ``n``-th element (with global batches, its rows of
    each batch). ``HINT`` replaces ``shard(SHARD_HINT, ...)`` placeholders.
    ``AUTO`` uses ``FILE`` where it finds readers (and at least as many files as
    pipelines), else ``DATA``. ``OFF`` does not shard: every pipeline sees every
    element (with global batches, a final ``batch(B)`` is still the global
    batch: ``B / n`` per pipeline, as TF). See ``phalanx.data.auto_shard``.
    """

    OFF = -1
    AUTO = 0
    FILE = 1
    DATA = 2
    HINT = 3


class DistributeOptions:
    """Distribution options of a pipeline (``options.experimental_distribute``).

    Attributes:
        auto_shard_policy: An ``AutoShardPolicy``; ``AUTO`` by default.
        num_devices: Unused by the data layer, kept for TensorFlow compatibility.
    """

    def __init__(self) -> None:
        self.auto_shard_policy: AutoShardPolicy = AutoShardPolicy.AUTO
        self.num_devices: int | None = None

    def __repr__(self) -> str:
        return f"DistributeOptions(auto_shard_policy={self.auto_shard_policy!r})"


class ThreadingOptions:
    """Threading options (``options.threading``): ``private_threadpool_size`` bounds map threads."""

    def __init__(self) -> None:
        self.private_threadpool_size: int | None = None
        self.max_intra_op_parallelism: int | None = None


class OptimizationOptions:
    """Graph-optimization switches (``options.experimental_optimization``), as TensorFlow's.

    Accepted and kept; they change nothing: phalanx's pipeline runs as written
    (``map(num_parallel_calls=...)`` and ``prefetch`` are its parallelism).
    """

    def __init__(self) -> None:
        for name in _OPTIMIZATIONS:
            setattr(self, name, None)


_OPTIMIZATIONS = (
    "apply_default_optimizations",
    "filter_fusion",
    "filter_parallelization",
    "inject_prefetch",
    "map_and_batch_fusion",
    "map_and_filter_fusion",
    "map_fusion",
    "map_parallelization",
    "noop_elimination",
    "parallel_batch",
    "seq_interleave_prefetch",
    "shuffle_and_repeat_fusion",
)


class AutotuneOptions:
    """Autotuning settings (``options.autotune``), as TensorFlow's; accepted and kept.

    ``AUTOTUNE`` arguments already pick phalanx's sizes; these change nothing.
    """

    def __init__(self) -> None:
        self.enabled: bool | None = None
        self.cpu_budget: int | None = None
        self.ram_budget: int | None = None
        self.autotune_algorithm: Any = None
        self.initial_parallelism: int | None = None
        self.min_parallelism: int | None = None


class Options:
    """Options of a pipeline, set with ``Dataset.with_options``, as ``tf.data.Options``.

    Options set later (nearer the end of the pipeline) win over earlier ones.

    Examples:
        >>> options = Options()
        >>> options.experimental_distribute.auto_shard_policy = AutoShardPolicy.DATA
        >>> options.experimental_distribute.auto_shard_policy
        <AutoShardPolicy.DATA: 2>
    """

    def __init__(self) -> None:
        self._deterministic: bool | None = None
        self.experimental_distribute = DistributeOptions()
        self.threading = ThreadingOptions()
        self.experimental_optimization = OptimizationOptions()
        self.autotune = AutotuneOptions()

    @property
    def deterministic(self) -> bool | None:
        """Whether elements keep their order (None: the default, True)."""
        return self._deterministic

    @deterministic.setter
    def deterministic(self, value: bool | None) -> None:
        if value is not None and not isinstance(value, bool | np.bool_):
            raise TypeError(
                f'Property "deterministic" must be of type bool (or None), got '
                f"{type(value).__name__} {value!r:.40}, as tf.data.Options."
            )
        self._deterministic = None if value is None else bool(value)

    @property
    def experimental_threading(self) -> ThreadingOptions:
        """Alias of ``threading`` (TensorFlow's older name)."""
        return self.threading

    @property
    def experimental_deterministic(self) -> bool | None:
        """Alias of ``deterministic``."""
        return self.deterministic

    @experimental_deterministic.setter
    def experimental_deterministic(self, value: bool | None) -> None:
        self.deterministic = value

    def merge(self, other: Options) -> Options:
        """A new ``Options`` with the values of ``other`` that differ from the defaults applied."""
        out = copy.deepcopy(self)
        default = Options()
        for path, value in _leaves(other):
            if value != _get(default, path):
                _put(out, path, value)
        return out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Options) and list(_leaves(self)) == list(_leaves(other))

    def __repr__(self) -> str:
        return "Options(" + ", ".join(f"{'.'.join(p)}={v!r}" for p, v in _leaves(self)) + ")"


def _leaves(options: Options) -> list[tuple[tuple[str, ...], Any]]:
    out = []
    for name in ("deterministic",):
        out.append(((name,), getattr(options, name)))
    for group in ("experimental_distribute", "threading", "experimental_optimization", "autotune"):
        for k, v in sorted(vars(getattr(options, group)).items()):
            out.append(((group, k), v))
    return out


def _get(obj: Any, path: tuple[str, ...]) -> Any:
    for p in path:
        obj = getattr(obj, p)
    return obj


def _put(obj: Any, path: tuple[str, ...], value: Any) -> None:
    for p in path[:-1]:
        obj = getattr(obj, p)
    setattr(obj, path[-1], value)
