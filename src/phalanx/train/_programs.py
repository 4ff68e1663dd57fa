"""``fit``'s compiled steps when the strategy shards parameters (ZeRO-3 / FSDP).

With ``MirroredStrategy(shard_parameters=True)`` the training state keeps the
parameters and the optimizer state split over the replicas
(``Strategy.variable_sharding``; the layout is in
``phalanx.distribute._sharding``); everything else in ``TrainState`` (batch
statistics, RNG, metric accumulators) stays whole on every replica.

A training step is two parts of one compiled program (``fused_program``):

1. under ``jax.shard_map`` over the replicas, as the replicated step
   (``_step.train_gradients``): each replica all-gathers the parameter slices
   inside the differentiated loss (``StepConfig.gather_params``), runs the
   forward and backward passes on its piece of the batch, and the transpose
   of the all-gather reduce-scatters the gradients: each replica receives the
   gradient of its own slice, summed over replicas (TensorFlow's semantics);
2. outside it, under ``jit`` with shardings, the optimizer's update
   (``_step.apply_gradients``): XLA partitions it from the shardings, so an
   element-wise optimizer touches only the local slices, and a global norm
   (``global_clipnorm``) or a per-tensor norm (``clipnorm``) still sees whole
   tensors.

``steps_per_execution`` steps run in one ``lax.scan`` around the two parts
(``_step.run_steps``: a program per count of real steps, one step without a loop).
Evaluation and prediction gather the parameters once per execution and run
as the replicated programs do. The results equal replicated training up to
float rounding (the gradients are summed in another order).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from .. import _compilation_cache
from ..distribute import put
from ..mixed_precision import _policy as _mixed_precision
from . import _step

AXIS = _step.AXIS


def place_state(strategy, state: _step.TrainState, *, copy: bool = True) -> _step.TrainState:
    """Places a ``TrainState`` as ``strategy`` keeps it: variables by its layout, the rest whole.

    The variables are the parameters and the optimizer state, split by
    ``shard_parameters`` or by a ``ModelParallelStrategy``'s layout map; the
    rest (batch statistics, RNG, metric accumulators) is whole on every device.

    Args:
      strategy: the model's strategy.
      state: the state (host or device arrays).
      copy: False lends numpy leaves without a copy (the caller owns them and
        never writes them again: a restored checkpoint's arrays).
    """
    if not strategy._splits_variables:  # neither shard_parameters nor a layout map
        if copy:
            return strategy.replicate(state)
        return put(state, strategy.replicated_sharding, copy=False)
    whole = state._replace(params=None, opt_state=None)
    whole = (
        strategy.replicate(whole) if copy else put(whole, strategy.replicated_sharding, copy=False)
    )
    params, opt_state = strategy.distribute_variables((state.params, state.opt_state))
    return whole._replace(params=params, opt_state=opt_state)


def host_values(tree: Any) -> Any:
    """``tree``'s arrays as numpy on this process, whole, also when split over processes."""

    def whole(x):
        split = isinstance(x, jax.Array) and not x.is_fully_addressable
        if split and not x.sharding.is_fully_replicated:
            return multihost_utils.process_allgather(x, tiled=True)
        return x

    return jax.device_get(jax.tree.map(whole, tree))


def eager_values(tree: Any) -> Any:
    """``tree``'s arrays as an eager call outside the compiled programs reads them, uncopied.

    The training state's arrays stay the only copy of the weights: whole on
    every replica (``MirroredStrategy``, ``TPUStrategy``, one device), each leaf
    becomes its first local replica, a view of that device's buffer, so an
    eager op runs once on one device rather than on every replica; split over
    this process's devices (``shard_parameters``, a layout map), the leaves
    stay as they are and each eager op runs over their devices (XLA gathers
    what it needs). Only leaves split over processes, which no process holds
    whole, are gathered to the host (``host_values``, a collective: every
    process reads them together).
    """
    arrays = [x for x in jax.tree.leaves(tree) if isinstance(x, jax.Array)]
    if any(not x.is_fully_addressable and not x.sharding.is_fully_replicated for x in arrays):
        return host_values(tree)
    if all(x.sharding.is_fully_replicated for x in arrays):
        return jax.tree.map(_first_replica, tree)
    return tree


def _first_replica(x: Any) -> Any:
    if isinstance(x, jax.Array) and len(x.sharding.device_set) > 1:
        return x.addressable_data(0)
    return x


def state_shardings(strategy, state: _step.TrainState) -> _step.TrainState:
    """The sharding of each leaf of ``state`` as ``place_state`` places it."""
    whole = jax.tree.map(
        lambda _: strategy.replicated_sharding, state._replace(params=None, opt_state=None)
    )
    params, opt_state = strategy._variable_shardings((state.params, state.opt_state))
    return whole._replace(params=params, opt_state=opt_state)


@dataclasses.dataclass(frozen=True)
class _Layout:
    """The parameters' split axes (None: whole), and how to gather them inside shard_map."""

    treedef: Any
    axes: tuple

    @classmethod
    def of(cls, strategy, params) -> _Layout:
        leaves, treedef = jax.tree.flatten(params)
        axes = []
        for leaf in leaves:
            spec = strategy._layout.replica_spec(leaf, AXIS)
            axes.append(next((i for i, name in enumerate(spec) if name is not None), None))
        return cls(treedef, tuple(axes))

    def specs(self) -> Any:
        return jax.tree.unflatten(self.treedef, [_spec(a) for a in self.axes])

    def gather(self, params) -> Any:
        leaves = jax.tree.leaves(params)
        whole = [
            x if a is None else jax.lax.all_gather(x, AXIS, axis=a, tiled=True)
            for x, a in zip(leaves, self.axes, strict=True)
        ]
        return jax.tree.unflatten(self.treedef, whole)


def _inner(state: _step.TrainState) -> _step.TrainState:
    """The state as shard_map sees it: no optimizer state but a loss scale (mixed_float16)."""
    return state._replace(opt_state=_mixed_precision.scale_only(state.opt_state))


def _spec(axis: int | None) -> P:
    return P() if axis is None else P(*([None] * axis), AXIS)


def fused_program(kind: str, config: _step.StepConfig, strategy, *, resident: bool) -> Callable:
    """``_step.fused_program`` for a strategy with ``shard_parameters``: same arguments and
    results, with ``state``'s parameters and optimizer state split over the replicas."""
    return _Program(kind, config, strategy, resident)


class _Program:
    """Compiled on the first call, when the state's structure (and so its layout) is known."""

    def __init__(self, kind: str, config: _step.StepConfig, strategy, resident: bool):
        self.kind, self.config, self.strategy, self.resident = kind, config, strategy, resident
        self.jitted = None

    def __call__(self, state, data, xs, steps):
        if self.jitted is None:
            self.jitted = self._compile(state)
        return self.jitted(state, data, xs, steps)

    def lower(self, state, data, xs, steps):
        """``jax.jit``'s ``lower`` of the program (``bench/memory.py`` reads its memory analysis)."""
        if self.jitted is None:
            self.jitted = self._compile(state)
        return self.jitted.lower(state, data, xs, steps)

    def _compile(self, state) -> Callable:
        _compilation_cache.enable_from_env()  # PHALANX_COMPILATION_CACHE, opt-in
        layout = _Layout.of(self.strategy, state.params)
        config = dataclasses.replace(self.config, gather_params=layout.gather)
        mesh = self.strategy.mesh
        # The state less its optimizer state, as shard_map sees it: parameters by layout.
        inner_specs = jax.tree.map(lambda _: P(), _inner(state._replace(params=None)))
        inner_specs = inner_specs._replace(params=layout.specs())
        build = {"train": _train_body, "eval": _eval_body, "predict": _predict_body}[self.kind]
        body = build(config, layout, mesh, inner_specs, self.resident, self.strategy, state)
        replicated = self.strategy.replicated_sharding
        if self.kind == "predict":
            out = NamedSharding(mesh, P(None, AXIS))
        else:
            out = (state_shardings(self.strategy, state), replicated)
        donate = (0,) if self.kind == "train" else ()
        static = () if self.kind == "predict" else (3,)  # train/eval: a program per count
        return jax.jit(body, out_shardings=out, donate_argnums=donate, static_argnums=static)


def _train_body(config, layout, mesh, inner_specs, resident, strategy, state0):
    variable_shardings = jax.tree.map(strategy.variable_sharding, (state0.params, state0.opt_state))

    def gradients(inner, data, xs_i):
        return _step.train_gradients(config, inner, _step._unpack(resident, data, xs_i))

    mapped = jax.shard_map(
        gradients,
        mesh=mesh,
        in_specs=(inner_specs, P(), P(AXIS)),
        out_specs=(inner_specs.params, inner_specs),
        check_vma=True,
    )

    def one_step(state, data, xs_i):
        grads, inner = mapped(_inner(state), data, xs_i)
        state = _step.apply_gradients(config, inner._replace(opt_state=state.opt_state), grads)
        params, opt_state = jax.lax.with_sharding_constraint(
            (state.params, state.opt_state), variable_shardings
        )
        return state._replace(params=params, opt_state=opt_state)

    def body(state, data, xs, steps):
        state = _step.run_steps(lambda s, xs_i: one_step(s, data, xs_i), state, xs, steps)
        return state, _step.results(config, state)

    return body


def _eval_body(config, layout, mesh, inner_specs, resident, strategy, state0):
    del strategy, state0

    def body(state, data, xs, steps):
        def evaluate(inner, data, xs):
            def one(s, xs_i):
                return _step.eval_step(config, s, _step._unpack(resident, data, xs_i))

            gathered = inner._replace(params=layout.gather(inner.params))
            out = _step.run_steps(one, gathered, xs, steps)
            return out._replace(params=inner.params), _step.results(config, out)

        mapped = jax.shard_map(
            evaluate,
            mesh=mesh,
            in_specs=(inner_specs, P(), P(None, AXIS)),
            out_specs=(inner_specs, P()),
            check_vma=True,
        )
        inner, logs = mapped(_inner(state), data, xs)
        return inner._replace(opt_state=state.opt_state), logs

    return body


def _predict_body(config, layout, mesh, inner_specs, resident, strategy, state0):
    del strategy, state0

    def predict(inner, data, xs):
        state = inner._replace(params=layout.gather(inner.params))

        def one(xs_i):
            return _step.predict_step(config, state, _step._unpack(resident, data, xs_i)[0])

        return _step.map_steps(one, xs)

    mapped = jax.shard_map(
        predict,
        mesh=mesh,
        in_specs=(inner_specs, P(), P(None, AXIS)),
        out_specs=P(None, AXIS),
        check_vma=True,
    )

    def body(state, data, xs, steps):
        del steps  # padded outputs are dropped by the caller
        return mapped(_inner(state), data, xs)

    return body
