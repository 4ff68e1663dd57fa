"""A ``.keras`` file's optimizer state (``model.weights.h5``'s ``optimizer/vars``), both ways.

Keras 3 saves its optimizer's variables in the order it made them
(``keras/src/optimizers``: ``Optimizer.save_own_variables``): ``iteration``
(int64), ``learning_rate`` (float32; none for a schedule), then the slot
variables, one family after another (one ``add_optimizer_variables`` call
each), a family holding, for each trainable weight in
``model.trainable_variables`` order, one variable per slot name:

==================  =====================================================
optimizer           families
==================  =====================================================
``SGD``             ``momentum`` (when ``momentum > 0``)
``Adam``, ``AdamW``  ``(momentum, velocity)``, ``velocity_hat`` (``amsgrad``)
``RMSprop``         ``velocity``, ``momentum`` (``momentum > 0``),
                    ``average_gradient`` (``centered``)
``Adagrad``         ``accumulator``
==================  =====================================================

phalanx's optimizer state is optax's: each slot is a tree like the
parameters inside the state of the optimizer's direction
(``Optimizer.direction``), after its clipping. Keras's SGD and RMSprop
momentum hold the learning rate (SGD: ``m = momentum * m - lr * g``), optax's
``trace`` does not (``t = momentum * t + g``, the update ``-lr * t``): the
file holds ``-lr * t`` (SGD) and ``lr * t`` (RMSprop), exact for a constant
rate.

``use_ema`` adds Keras's ``average`` family (one moving average per weight)
right after the two counters, before the slots (Keras's ``build`` makes it
first): phalanx's ``MovingAverageState.average``. A ``LossScaleOptimizer``'s
variables are its own ``iteration`` and ``learning_rate`` (Keras keeps them at
0), ``step_counter`` and ``dynamic_scale`` (created by its ``build``), then its
inner optimizer's: phalanx's ``LossScaleState(scale, good_steps, inner)``.
``gradient_accumulation_steps=k`` adds Keras's ``gradient_accumulator`` family
(the gradients summed since the last update, one per weight) after the
averages, before the slots (Keras's ``BaseOptimizer.build``); ``iteration`` then
counts every step (Keras's ``_iterations``; ``iterations`` is it floor-divided
by ``k``): phalanx's ``AccumulateState(count, grads, inner)``, the update rule's
own counts being the updates. Other optimizers (an optax transformation) have
no Keras layout here: their state is not written, and a file's is not read (a
warning naming why).
"""

from __future__ import annotations

import warnings
from typing import Any, NamedTuple

import jax
import numpy as np

from ..mixed_precision import _policy
from ..optimizers import AccumulateState, MovingAverageState
from ..optimizers import _optimizers as o


class _Slot(NamedTuple):
    name: str  # Keras's slot name
    path: tuple  # where the slot's tree is in the direction's state (attributes, indices)
    rate: int  # the file holds rate * lr * optax's value (0: the value itself)


def _unsupported(optimizer: Any) -> str | None:
    """Why ``optimizer``'s state has no Keras layout here, or None when it has one."""
    if isinstance(optimizer, _policy.LossScaleOptimizer):
        return _unsupported(optimizer.inner_optimizer)
    if _families(optimizer) is None:
        return f"{type(optimizer).__name__} has no Keras layout (not a phalanx optimizer)"
    return None


def _families(optimizer: Any) -> list[list[_Slot]] | None:
    """Keras's slot families for a phalanx optimizer; None for another optimizer."""
    kind = type(optimizer)
    if kind is o.SGD:
        return [[_Slot("momentum", ("trace",), -1)]] if optimizer.momentum else []
    if kind in (o.Adam, o.AdamW):
        families = [[_Slot("momentum", ("mu",), 0), _Slot("velocity", ("nu",), 0)]]
        if optimizer.amsgrad:
            families.append([_Slot("velocity_hat", ("nu_max",), 0)])
        return families
    if kind is o.RMSprop:
        scale = (0,) if optimizer.momentum else ()
        families = [[_Slot("velocity", (*scale, "nu"), 0)]]
        if optimizer.momentum:
            families.append([_Slot("momentum", (1, "trace"), 1)])
        if optimizer.centered:
            families.append([_Slot("average_gradient", (*scale, "mu"), 0)])
        return families
    if kind is o.Adagrad:
        return [[_Slot("accumulator", ("sum_of_squares",), 0)]]
    return None


def _accumulation(optimizer: Any) -> int:
    """``gradient_accumulation_steps``, or 0 without accumulation."""
    return int(getattr(optimizer, "gradient_accumulation_steps", None) or 0)


def _is_accumulate(node: Any) -> bool:
    """Whether ``node`` is ``accumulate_gradients``' state (count, grads, inner)."""
    return isinstance(node, AccumulateState)


def _accumulate_path(opt_state: Any) -> tuple:
    """Where ``accumulate_gradients``' state is: inside ``use_ema``'s, if any."""
    state = opt_state.inner_state
    return ("inner_state",) if _is_accumulate(state) else ("inner_state", "inner")


def _get(state: Any, path: tuple) -> Any:
    for step in path:
        state = state[step] if isinstance(step, int) else getattr(state, step)
    return state


def _set(state: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    step, rest = path[0], path[1:]
    if isinstance(step, int):
        items = list(state)
        items[step] = _set(items[step], rest, value)
        return type(state)(items)
    return state._replace(**{step: _set(getattr(state, step), rest, value)})


def _direction_path(optimizer: Any, opt_state: Any, params: Any) -> tuple:
    """Where the direction's state (``optimizer.direction().init``) is in ``opt_state``: the
    first node of its structure, through the chain's tuples and optax's state tuples."""
    want = jax.tree.structure(optimizer.direction().init(params))

    def find(node: Any, path: tuple) -> tuple | None:
        if jax.tree.structure(node) == want:
            return path
        if not isinstance(node, tuple):
            return None
        fields = getattr(node, "_fields", None) or range(len(node))
        for i, field in enumerate(fields):
            child = node[i]
            found = find(child, (*path, field if isinstance(field, str) else i))
            if found is not None:
                return found
        return None

    path = find(opt_state.inner_state, ("inner_state",))
    if path is None:  # pragma: no cover - every phalanx optimizer chains its direction
        raise ValueError(f"no {type(optimizer).__name__} direction state in {opt_state!r}")
    return path


def _key(path: tuple) -> tuple:
    """A pytree key path as nnx's path (``('layers', 0, 'linear', 'kernel')``)."""
    keys = []
    for k in path:
        keys.append(getattr(k, "key", getattr(k, "idx", getattr(k, "name", None))))
    return tuple(keys[:-1] if keys and keys[-1] == "value" else keys)


def _order(params: Any, paths: list[tuple]) -> list[int]:
    """The positions in ``params``' leaves of the trainable weights at nnx ``paths``."""
    flat = jax.tree_util.tree_flatten_with_path(params)[0]
    position = {_key(p): i for i, (p, _) in enumerate(flat)}
    return [position[tuple(p)] for p in paths]


def _lr(opt_state: Any) -> float:
    return float(np.asarray(opt_state.hyperparams["learning_rate"]))


def _constant_rate(optimizer: Any) -> bool:
    return not callable(optimizer.learning_rate)


def keras_variables(
    optimizer: Any, opt_state: Any, step: int, params: Any, paths: list[tuple]
) -> list[np.ndarray] | None:
    """Keras's ``optimizer.variables`` for phalanx's state (host values), or None.

    Args:
      optimizer: the compiled phalanx optimizer, or a ``LossScaleOptimizer`` around
        one (anything else gives None).
      opt_state: its optax state, on the host; None before training (Keras's
        optimizer not yet built: only ``iteration`` and ``learning_rate``).
      step: the optimizer steps taken (Keras's ``iterations``).
      params: the trainable parameters' tree (the slots' structure).
      paths: the nnx paths of ``model.trainable_weights``, in Keras's order.
    """
    if _unsupported(optimizer) is not None:
        return None
    if not isinstance(optimizer, _policy.LossScaleOptimizer):
        return _variables(optimizer, opt_state, step, params, paths)
    own = [np.asarray(0, np.int64), np.asarray(0.0, np.float32)]  # Keras leaves them at 0
    if opt_state is not None:
        own += [np.asarray(opt_state.good_steps, np.int64), np.asarray(opt_state.scale, np.float32)]
    inner = None if opt_state is None else opt_state.inner
    return own + _variables(optimizer.inner_optimizer, inner, step, params, paths)


def _variables(optimizer, opt_state, step, params, paths) -> list[np.ndarray]:
    out = [np.asarray(step, np.int64)]
    lr = float(optimizer.learning_rate) if opt_state is None else _lr(opt_state)
    if _constant_rate(optimizer):
        out.append(np.asarray(lr, np.float32))
    if opt_state is None:
        return out
    order = _order(params, paths)
    if optimizer.use_ema:
        average = jax.tree.leaves(_moving_average(opt_state).average)
        out += [np.asarray(average[i], np.float32) for i in order]
    if _accumulation(optimizer):
        summed = jax.tree.leaves(_get(opt_state, _accumulate_path(opt_state)).grads)
        out += [np.asarray(summed[i], np.float32) for i in order]
    direction = _get(opt_state, _direction_path(optimizer, opt_state, params))
    for family in _families(optimizer):
        trees = [jax.tree.leaves(_get(direction, slot.path)) for slot in family]
        for i in order:
            for slot, leaves in zip(family, trees, strict=True):
                value = np.asarray(leaves[i], np.float32)
                out.append(value * np.float32(slot.rate * lr) if slot.rate else value)
    return out


def _moving_average(opt_state: Any) -> MovingAverageState:
    """The EMA's state: ``use_ema`` wraps the whole chain (``Optimizer._chain``)."""
    state = opt_state.inner_state
    if not isinstance(state, MovingAverageState):  # pragma: no cover - _chain's invariant
        raise ValueError(f"no MovingAverageState in {opt_state!r}")
    return state


def restore_keras_variables(
    optimizer: Any, opt_state: Any, params: Any, paths: list[tuple], stored: tuple, where: str
) -> tuple[Any, int] | None:
    """``(opt_state, step)`` with a file's Keras optimizer variables; None when not read.

    Args:
      optimizer, params, paths: as for `keras_variables`.
      opt_state: the fresh optax state, on the host.
      stored: ``(count, read)``: the file's number of variables, and
        ``read(i, shape)`` reading variable ``i``, which must have ``shape``.
      where: the file, for messages.

    A file whose variables do not fit the optimizer (another optimizer, a model
    of other weights) warns as Keras does and leaves the optimizer fresh; so
    does an optimizer without Keras's layout (an optax transformation), the
    warning naming it.

    Raises:
      KerasFileError: from ``read``: a variable's shape differs from its weight's.
    """
    why = _unsupported(optimizer)
    if why is not None:
        _skip(optimizer, where, why)
        return None
    if not isinstance(optimizer, _policy.LossScaleOptimizer):
        return _restore(optimizer, opt_state, params, paths, stored, where, 0)
    count, read = stored
    inner = optimizer.inner_optimizer
    own = 2 if count == 2 + _head(inner) else 4  # 2: saved before its first step (unbuilt)

    def shifted(i: int, shape: tuple) -> np.ndarray:
        return read(i + own, shape)

    restored = _restore(inner, opt_state.inner, params, paths, (count - own, shifted), where, own)
    if restored is None:
        return None
    inner_state, step = restored
    opt_state = opt_state._replace(inner=inner_state)
    if own == 4:
        good = np.asarray(int(read(2, ())), np.asarray(opt_state.good_steps).dtype)
        opt_state = opt_state._replace(good_steps=good, scale=np.float32(read(3, ())))
    return opt_state, step


def _head(optimizer: Any) -> int:
    """Keras's counters: ``iteration``, and ``learning_rate`` unless it is a schedule."""
    return 2 if _constant_rate(optimizer) else 1


def _restore(optimizer, opt_state, params, paths, stored, where, own: int):
    """`restore_keras_variables` for a phalanx optimizer whose variables follow ``own`` others."""
    head, order, families = _head(optimizer), _order(params, paths), _families(optimizer)
    averages = len(order) if optimizer.use_ema else 0
    accumulators = len(order) if _accumulation(optimizer) else 0
    want = head + averages + accumulators + sum(len(f) for f in families) * len(order)
    count, read = stored
    if count not in (want, head):
        _skip(optimizer, where, f"it has {own + want} variables whereas the file has {own + count}")
        return None
    step = int(read(0, ()))
    opt_state = _with_counts(opt_state, step, _accumulation(optimizer) or 1)
    if head == 2:
        hyperparams = dict(opt_state.hyperparams, learning_rate=np.float32(read(1, ())))
        opt_state = opt_state._replace(hyperparams=hyperparams)
    if count == head:  # saved before its first step: only the counters
        return opt_state, step
    position = head
    if averages:
        ema = _moving_average(opt_state)
        leaves = list(jax.tree.leaves(ema.average))
        for i in order:
            leaves[i] = np.asarray(read(position, np.shape(leaves[i])), np.float32)
            position += 1
        average = jax.tree.structure(ema.average).unflatten(leaves)
        opt_state = opt_state._replace(inner_state=ema._replace(average=average))
    if accumulators:
        at = _accumulate_path(opt_state)
        accumulate = _get(opt_state, at)
        leaves = list(jax.tree.leaves(accumulate.grads))
        for i in order:
            leaves[i] = np.asarray(read(position, np.shape(leaves[i])), np.float32)
            position += 1
        summed = jax.tree.structure(accumulate.grads).unflatten(leaves)
        opt_state = _set(opt_state, at, accumulate._replace(grads=summed))
    lr = _lr(opt_state)
    where_direction = _direction_path(optimizer, opt_state, params)
    direction = _get(opt_state, where_direction)
    for family in families:
        leaves = {s.name: list(jax.tree.leaves(_get(direction, s.path))) for s in family}
        for i in order:
            for slot in family:
                value = np.asarray(read(position, np.shape(leaves[slot.name][i])), np.float32)
                position += 1
                leaves[slot.name][i] = value / np.float32(slot.rate * lr) if slot.rate else value
        for slot in family:
            tree = jax.tree.structure(_get(direction, slot.path)).unflatten(leaves[slot.name])
            direction = _set(direction, slot.path, tree)
    return _set(opt_state, where_direction, direction), step


def _with_counts(state: Any, step: int, accumulation: int = 1) -> Any:
    """``state`` with every optax ``count`` (steps taken) set to ``step``; inside
    ``accumulate_gradients``' state, the updates ``step // accumulation``."""
    if _is_accumulate(state):
        inner = _with_counts(state.inner, step // accumulation)
        return state._replace(count=np.asarray(step, np.asarray(state.count).dtype), inner=inner)
    if isinstance(state, tuple) and hasattr(state, "_fields"):
        fields = {f: _with_counts(getattr(state, f), step, accumulation) for f in state._fields}
        if "count" in fields:
            fields["count"] = np.asarray(step, np.asarray(state.count).dtype)
        return type(state)(**fields)
    if isinstance(state, tuple):
        return tuple(_with_counts(s, step, accumulation) for s in state)
    return state


def _skip(optimizer: Any, where: str, why: str) -> None:
    warnings.warn(
        f"Skipping variable loading for optimizer '{getattr(optimizer, 'name', optimizer)}' "
        f"from {where}, because {why}: it starts afresh (iterations 0), and training "
        "continues otherwise than it would have.",
        UserWarning,
        stacklevel=3,
    )
