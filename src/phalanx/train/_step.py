"""The pure step functions of ``fit``/``evaluate``/``predict``, fused over N steps.

A step is a pure function of explicit state (STYLE.md): ``TrainState`` holds
the parameters, the rest of the model's state (batch statistics, RNG
counters), the optimizer state and the metric accumulators; nothing is closed
over but static configuration. ``fused_train_program`` turns it into one
compiled program that runs N steps with ``lax.scan`` (DESIGN.md, decision 5),
once per replica under ``jax.shard_map`` over the strategy's mesh, with
TensorFlow's gradient semantics (decision 3): each replica's loss is divided by
the number of real examples in the *global* batch, and the gradient with
respect to replicated parameters arrives summed over replicas.

Batches reach a step as *per-replica* pieces ``(x, y, sample_weight, mask)``:
``mask`` is 0 for padding (a short last batch, or a step past the end of the
data in the last group of N), and padded examples count nowhere: not in the
loss, the gradient, the metrics or the example counts. Steps past the real
ones (padding that fills the last group of N) are not run: a program is
compiled for each count of real steps (``run_steps``; one step is the bare
step, no loop and no ``lax.cond``), and every real step holds at least one
real example.

Input comes in one of two forms, chosen by the data adapter:

- *stacked*: arrays ``[N, global_batch, ...]`` sharded ``P(None, 'replica')``;
- *resident*: the whole data set lives on every device (``P()``), and the
  program receives only indices ``[N, global_batch]`` (``-1`` for padding) and
  gathers each batch on the device.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import flax.nnx as nnx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from .. import _compilation_cache, layers, losses, metrics, regularizers
from .._packed import Packing
from ..constraints import _constraints
from ..distribute import check_vma, is_varying
from ..mixed_precision import _policy as _mixed_precision

AXIS = "replica"


class TrainState(NamedTuple):
    """Everything a training step reads and writes; a pytree, replicated on the mesh.

    Attributes:
      params: the trainable ``nnx.Param`` state.
      rest: every other model state (``BatchStat``, RNG keys and counts).
      opt_state: the optax optimizer state.
      loss: ``[sum of weighted per-example losses, number of real examples]``
        since the metrics were last reset (Keras's loss tracker).
      metrics: one accumulator pytree per compiled metric.
      label_check: ``LABEL_CHECK_SLOTS`` floats since the metrics were last reset:
        the steps run, then for labels outside the loss's range (sparse
        cross-entropy) their count and the first offending step's lowest and
        highest value, step index and number of classes. The host raises when the
        count is not 0 (``Model._fetch_logs``): a check inside the compiled step.
      step: the number of optimizer steps taken (int32 scalar).
      rng: the base PRNG key; step ``k`` on replica ``r`` draws from
        ``fold_in(fold_in(rng, k), r)`` (dropout differs per step and replica, and a
        resumed run draws the same keys).
    """

    params: Any
    rest: Any
    opt_state: Any
    loss: jax.Array
    metrics: tuple
    step: jax.Array
    rng: jax.Array
    label_check: jax.Array


#: ``TrainState.label_check``: steps, bad count, lowest, highest, bad step, classes.
LABEL_CHECK_SLOTS = 6


def fresh_label_check() -> jax.Array:
    """A ``label_check`` with nothing seen."""
    return jnp.zeros(LABEL_CHECK_SLOTS, jnp.float32)


@dataclasses.dataclass(frozen=True, eq=False)
class StepConfig:
    """The static half of a step: what to call and how. Hashable by identity."""

    train_graphdef: Any
    eval_graphdef: Any
    loss: Callable | None
    metrics: Sequence[Any]  # metric objects: init/update/result/name
    optimizer: optax.GradientTransformation | None
    takes_training: bool
    returns_logits: bool
    takes_rngs: bool
    compute_dtype: Any = None  # e.g. jnp.bfloat16: forward/backward dtype (TPUStrategy)
    trainable: Any = nnx.Param  # the filter of trained weights (frozen layers' are not)
    regularized: bool = False  # a layer has a weight or activity regularizer
    # Sharded parameters (phalanx.train._programs): maps this replica's slices of the
    # parameters to whole ones inside the differentiated loss, so the gradient of each
    # slice arrives reduce-scattered (summed over replicas).
    gather_params: Callable | None = None
    # One flag per metric: True to weigh its updates by sample_weight (Keras 3's
    # weighted_metrics, each output's loss); False (metrics=, and when not given) masks
    # only the padding.
    weighted_metrics: tuple = ()
    # ((path of a trained weight in the state, constraint), ...): Keras 3's optimizer
    # projects each constrained weight right after every update (BaseOptimizer.apply).
    constraints: tuple = ()


def module_call_style(module: nnx.Module) -> dict[str, bool]:
    """Which of ``training=``, ``return_logits=``, ``rngs=`` ``module.__call__`` accepts."""
    try:
        params = inspect.signature(type(module).__call__).parameters
    except (TypeError, ValueError):
        params = {}
    return {
        "takes_training": "training" in params,
        "returns_logits": "return_logits" in params,
        "takes_rngs": "rngs" in params,
    }


def _cast_floats(tree, dtype):
    def cast(a):
        if isinstance(a, jax.Array | np.ndarray) and jnp.issubdtype(a.dtype, jnp.floating):
            return a.astype(dtype)
        return a

    return jax.tree.map(cast, tree)


def _forward(config: StepConfig, graphdef, params, rest, x, *, training: bool, key=None):
    """Runs the module; in ``compute_dtype`` when set (float32 master weights and outputs).
    Returns ``(y_pred, logits, new_rest, activity, output mask or None)``."""
    if config.compute_dtype is not None:
        params, x = _cast_floats((params, x), config.compute_dtype)
    out = _call(config, graphdef, params, rest, x, training=training, key=key)
    if config.compute_dtype is not None:
        out = (*_cast_floats(out[:2], jnp.float32), *out[2:])
    return out


def _call(config: StepConfig, graphdef, params, rest, x, *, training: bool, key=None):
    # Fresh Variable objects at this trace level: nnx refuses to mutate (batch statistics)
    # a Variable made outside the jax.grad that traces this call.
    params, rest = jax.tree.map(lambda a: a, (params, rest))
    module = nnx.merge(graphdef, params, rest)
    kwargs = {"training": training} if config.takes_training else {}
    if config.takes_rngs and key is not None:
        kwargs["rngs"] = key
    y_pred, logits, out_mask = layers.call_with_mask(module, x, config.returns_logits, **kwargs)
    activity = regularizers.pop_activity(module)  # an output of the call, not state
    new_rest = nnx.state(module, nnx.Not(config.trainable))
    return y_pred, logits, new_rest, activity, out_mask


def _penalties(config: StepConfig, graphdef, params, rest, activity, mask):
    """This replica's ``(weight penalties, sum over its real examples of activity penalties)``.

    The weight penalties are computed from the float32 parameters (also under a
    ``compute_dtype``), the same on every replica; activity penalties of padding
    rows (``mask == 0``) count nowhere. Zeros when no layer is regularized.
    """
    zero = jnp.zeros((), jnp.float32)
    if not config.regularized:
        return zero, zero
    module = nnx.merge(graphdef, *jax.tree.map(lambda a: a, (params, rest)))
    weights = sum(regularizers.weight_losses(module), zero)
    per_example = sum(activity, jnp.zeros(mask.shape, jnp.float32))
    return weights, jnp.sum(jnp.where(mask > 0, per_example, 0.0))


def _per_replica_rest(rest):
    """Gives each replica its own RNG stream: fold the replica id into every RNG key."""
    replica = jax.lax.axis_index(AXIS)

    def fold(x):
        if isinstance(x, jax.Array) and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
            return jax.random.fold_in(x, replica)
        return x

    return jax.tree.map(fold, rest)


def _sync_rest(old_rest, new_rest):
    """Makes the updated non-trainable state identical on every replica again.

    RNG keys go back to the shared ones (their counters advanced identically);
    float state that now differs by replica (batch statistics computed on each
    replica's slice) is averaged over the replicas.
    """

    def sync(old, new):
        if isinstance(new, jax.Array) and jax.dtypes.issubdtype(new.dtype, jax.dtypes.prng_key):
            return old
        if is_varying(new, AXIS):
            if jnp.issubdtype(new.dtype, jnp.floating):
                return jax.lax.pmean(new, AXIS)
            return jax.lax.pmax(new, AXIS)
        return new

    return jax.tree.map(sync, old_rest, new_rest)


def data_loss(config: StepConfig, y, y_pred, logits, weight, mask) -> jax.Array:
    """This replica's share of the compiled loss of the global batch (0 without a loss).

    The loss's ``batch_terms`` give this replica's numerator and divisor (Keras 3's
    reduction: the valid entries' count, the weights' sum, or 1 for ``"sum"``);
    the divisor is added over replicas, so the shares add up to Keras's value on
    the global batch and their gradients, summed over replicas, to its gradient.
    """
    if config.loss is None:
        return jnp.zeros((), jnp.float32)
    numerator, divisor = config.loss.batch_terms(y, y_pred, weight, mask, logits=logits)
    if divisor is None:
        return numerator
    total = jax.lax.psum(jax.lax.stop_gradient(divisor), AXIS)
    safe = jnp.where(total == 0, 1.0, total)
    return jnp.where(total == 0, 0.0, numerator / safe)  # Keras's divide_no_nan


def _logs_loss(config: StepConfig) -> bool:
    """A loss is logged: a compiled one, or only the layers' (``add_loss``, regularizers)."""
    return config.loss is not None or config.regularized


def _accumulate(config: StepConfig, state, y, y_pred, weight, mask, share, penalty, out_mask):
    """Adds this step's loss, metric increments and label check, over replicas, to the state.

    ``weight`` is the sample weight of each example (0 for padding), ``mask`` 1
    for real examples: ``metrics=`` see only the mask, ``weighted_metrics=``
    the weight, as Keras 3. ``share`` is this replica's share of the batch's
    compiled loss (``data_loss``): the logged loss, as Keras's loss tracker,
    is the mean of the batches' losses weighted by their example counts.
    ``penalty`` is this replica's share of the regularization term of the logged
    loss, already multiplied by the examples it counts for (Keras logs the data
    loss plus the penalties, averaged over the examples). One ``psum`` carries
    the loss, the metrics and the count of bad labels; one ``pmin`` the bad
    labels' extremes, only for a loss that checks its labels. ``out_mask`` (or None): the
    model output's Keras mask, which weighs the mean-of-a-function metrics (as Keras 3).
    """
    flags = config.weighted_metrics or (False,) * len(config.metrics)
    incs = tuple(
        m.update(m.init(), y, y_pred, metrics.apply_output_mask(m, weight if w else mask, out_mask))
        for m, w in zip(config.metrics, flags, strict=True)
    )
    loss_inc = jnp.zeros(2, jnp.float32)
    if _logs_loss(config):
        count = jax.lax.psum(jnp.sum(mask), AXIS)
        loss_inc = jnp.stack([share * count + penalty, jnp.sum(mask)]).astype(jnp.float32)
    bad = _bad_labels(config, y, y_pred, mask)
    count = jnp.float32(0) if bad is None else bad[0]
    loss_inc, incs, count = jax.lax.psum((loss_inc, incs, count), AXIS)
    check = state.label_check.at[0].add(1.0)
    if bad is not None:
        low, neg_high = jax.lax.pmin(bad[1:], AXIS)
        check = _keep_first_bad(check, count, low, -neg_high, y_pred.shape[-1])
    return state._replace(
        loss=state.loss + loss_inc,
        metrics=jax.tree.map(jnp.add, state.metrics, incs),
        label_check=check,
    )


def _bad_labels(config: StepConfig, y, y_pred, mask) -> jax.Array | None:
    """This replica's ``[count, lowest, -highest]`` of labels outside the loss's range.

    None for a loss that does not check its labels. Padding rows (``mask == 0``)
    are not checked; a few reductions, no host transfer.
    """
    out_of_range = getattr(config.loss, "out_of_range", None)
    if out_of_range is None:
        return None
    labels, bad = out_of_range(y, y_pred)
    bad = bad & (mask.reshape(-1, 1) > 0)
    values = labels.astype(jnp.float32)
    low = jnp.min(jnp.where(bad, values, jnp.inf))
    high = jnp.max(jnp.where(bad, values, -jnp.inf))
    return jnp.stack([jnp.sum(bad).astype(jnp.float32), low, -high])


def _keep_first_bad(check, count, low, high, classes: int):
    """``label_check`` (steps already counted) with this step's bad labels added; the
    first bad step's values are kept: lowest, highest, its index, the classes."""
    first = (check[1] == 0) & (count > 0)
    seen = jnp.stack([check[0], count, low, high, check[0] - 1.0, jnp.float32(classes)])
    kept = check.at[1].add(count)
    return jnp.where(first, seen, kept)


def train_step(config: StepConfig, state: TrainState, batch) -> TrainState:
    """One optimizer step on one replica's piece of the global batch (inside shard_map)."""
    grads, state = train_gradients(config, state, batch)
    return apply_gradients(config, state, grads)


def apply_gradients(config: StepConfig, state: TrainState, grads) -> TrainState:
    """The optimizer's update of ``state.params`` by ``grads``, then the weights' constraints
    (Keras 3's ``BaseOptimizer.apply``); one more step counted."""
    updates, opt_state = config.optimizer.update(grads, state.opt_state, state.params)
    params = optax.apply_updates(state.params, updates)
    params = _constraints.apply(config.constraints, params)
    return state._replace(params=params, opt_state=opt_state, step=state.step + 1)


def train_gradients(config: StepConfig, state: TrainState, batch):
    """``(gradients summed over replicas, state)`` of one step on one replica's piece of
    the batch: the state with its non-trainable part, loss and metrics updated, its
    parameters, optimizer state and step not (``apply_gradients`` does those)."""
    x, y, sample_weight, mask = batch
    weight = sample_weight * mask
    count = jax.lax.psum(jnp.sum(mask), AXIS)
    denom = jnp.maximum(count, 1.0)
    rest_in = _per_replica_rest(state.rest)
    key = jax.random.fold_in(jax.random.fold_in(state.rng, state.step), jax.lax.axis_index(AXIS))
    scale = _mixed_precision.loss_scale(state.opt_state)  # LossScaleOptimizer (mixed_float16)

    def loss_fn(params):
        if config.gather_params is not None:
            params = config.gather_params(params)
        y_pred, logits, new_rest, activity, out_mask = _forward(
            config, config.train_graphdef, params, rest_in, x, training=True, key=key
        )
        share = data_loss(
            config, y, y_pred, logits, *losses.apply_output_mask(weight, mask, out_mask)
        )
        weights, activity = _penalties(
            config, config.train_graphdef, params, rest_in, activity, mask
        )
        # TensorFlow's scale_regularization_loss: the weight penalties / replicas; the
        # gradients, summed over replicas, then count them once.
        loss = share + activity / denom + weights / jax.lax.axis_size(AXIS)
        logged = weights * jnp.sum(mask) + activity
        if scale is not None:
            loss = loss * scale
        return loss, (y_pred, share, new_rest, logged, out_mask)

    grads, (y_pred, share, new_rest, logged, out_mask) = jax.grad(loss_fn, has_aux=True)(
        state.params
    )
    rest = _sync_rest(state.rest, new_rest)
    # fit's metrics masked as evaluate's and TensorFlow's (Keras 3's JAX train step loses
    # y_pred's mask through jax.value_and_grad: only its loss is masked there)
    state = _accumulate(config, state, y, y_pred, weight, mask, share, logged, out_mask)
    return grads, state._replace(rest=rest)


def eval_step(config: StepConfig, state: TrainState, batch) -> TrainState:
    """Updates the metric accumulators on one replica's piece of a batch (no gradients)."""
    x, y, sample_weight, mask = batch
    weight = sample_weight * mask
    y_pred, logits, _, activity, out_mask = _forward(
        config, config.eval_graphdef, state.params, state.rest, x, training=False
    )
    share = data_loss(config, y, y_pred, logits, *losses.apply_output_mask(weight, mask, out_mask))
    weights, activity = _penalties(
        config, config.eval_graphdef, state.params, state.rest, activity, mask
    )
    logged = weights * jnp.sum(mask) + activity  # Keras's evaluate adds the penalties too
    return _accumulate(config, state, y, y_pred, weight, mask, share, logged, out_mask)


def predict_step(config: StepConfig, state: TrainState, x) -> Any:
    """The model's outputs on one replica's piece of a batch."""
    return _forward(config, config.eval_graphdef, state.params, state.rest, x, training=False)[0]


def results(config: StepConfig, state: TrainState) -> dict[str, jax.Array]:
    """The loss and every metric from the accumulators, keyed by Keras's names."""
    logs = {}
    if _logs_loss(config):
        logs["loss"] = state.loss[0] / jnp.maximum(state.loss[1], 1.0)
    for metric, acc in zip(config.metrics, state.metrics, strict=True):
        logs[metric.name] = metric.result(acc)
    logs["_label_check"] = state.label_check  # not a log: Model._fetch_logs raises on it
    return logs


def _gather_resident(data, idx):
    """Gathers one batch from device-resident arrays; ``idx < 0`` marks padding."""
    mask = (idx >= 0).astype(jnp.float32)
    safe = jnp.maximum(idx, 0)
    x, y, sw = jax.tree.map(lambda a: jnp.take(a, safe, axis=0), data)
    return x, y, sw, mask


def _unpack(resident: bool, data, xs_i):
    if resident:
        return _gather_resident(data, xs_i)
    return xs_i


def run_steps(step_fn, state, xs, steps: int):
    """``state`` after ``step_fn(state, xs[i])`` for the first ``steps`` entries of ``xs``.

    ``steps`` is a Python int: a program is compiled for each count, so the steps
    past the real ones (padding that fills the last group of N) are not in it at
    all, and no ``lax.cond`` decides at run time. One step is the bare step (no
    loop); several run in a ``lax.scan`` whose body is that step (issue 24:
    XLA:CPU compiles a step inside a loop, and a ``cond`` inside a loop, less well).
    """
    if steps == 1:
        return step_fn(state, jax.tree.map(lambda a: a[0], xs))
    xs = jax.tree.map(lambda a: a[:steps], xs)  # the padded steps' entries go unread

    def one(state, xs_i):
        return step_fn(state, xs_i), None

    return jax.lax.scan(one, state, xs)[0]


def map_steps(fn, xs):
    """``fn(xs[i])`` for every entry of ``xs``, stacked; one entry: the bare call (no loop)."""
    if jax.tree.leaves(xs)[0].shape[0] == 1:
        out = fn(jax.tree.map(lambda a: a[0], xs))
        return jax.tree.map(lambda a: a[None], out)
    return jax.lax.scan(lambda _, xs_i: (None, fn(xs_i)), None, xs)[1]


def fused_program(
    kind: str,
    config: StepConfig,
    mesh,
    *,
    resident: bool,
    donate: bool = True,
    state_shardings: Any = None,
) -> Callable:
    """Compiles N steps of ``kind`` (``"train"``, ``"eval"``, ``"predict"``) as one program.

    The returned function takes ``(state, data, xs, steps)``: ``state``
    replicated; ``data`` the device-resident arrays (``P()``) or None; ``xs``
    the stacked per-step inputs ``[N, global_batch, ...]`` sharded
    ``P(None, 'replica')`` (batches, or indices into ``data``); ``steps`` the
    number of real steps, a Python int (static: train and eval compile a
    program per count, ``run_steps``; predict runs every step, its padded
    outputs are dropped by the caller). It returns ``(state, logs)`` for
    train/eval (logs: the metric results after the steps) and the stacked
    predictions ``[N, global_batch, ...]`` for predict.

    ``jax.shard_map`` is manual over ``'replica'`` only: a mesh's other axes (a
    ``ModelParallelStrategy``'s model axis) stay under XLA's automatic
    partitioning, which splits the computation by the variables' layouts.
    ``state_shardings`` (the state's layout, a pytree of shardings) pins the
    state returned to it, so the next call gets the same input layout.
    """
    _compilation_cache.enable_from_env()  # PHALANX_COMPILATION_CACHE, opt-in
    batch_spec = P(None, AXIS)
    step_fn = {"train": train_step, "eval": eval_step}.get(kind)

    def shard_mapped(body, out_specs):
        return jax.shard_map(
            body,
            mesh=mesh,
            in_specs=(P(), P(), batch_spec),
            out_specs=out_specs,
            axis_names=frozenset({AXIS}),
            check_vma=check_vma(mesh),
        )

    def stepped(state, data, xs, steps):
        def on_replica(state, data, xs):
            def one(s, xs_i):
                return step_fn(config, s, _unpack(resident, data, xs_i))

            state = run_steps(one, state, xs, steps)
            return state, results(config, state)

        return shard_mapped(on_replica, (P(), P()))(state, data, xs)

    def train_body(state, data, xs, steps):
        return stepped(state, data, xs, steps)

    def eval_body(state, data, xs, steps):
        return stepped(state, data, xs, steps)

    def predict_body(state, data, xs, steps):
        del steps  # padded outputs are dropped by the caller

        def on_replica(state, data, xs):
            def one(xs_i):
                return predict_step(config, state, _unpack(resident, data, xs_i)[0])

            return map_steps(one, xs)

        return shard_mapped(on_replica, batch_spec)(state, data, xs)

    body = {"train": train_body, "eval": eval_body, "predict": predict_body}[kind]
    pinned = {}
    if state_shardings is not None:
        replicated = NamedSharding(mesh, P())
        train_or_eval = (state_shardings, replicated)
        pinned["out_shardings"] = (
            NamedSharding(mesh, batch_spec) if kind == "predict" else train_or_eval
        )
    donate_argnums = (0,) if (donate and kind == "train") else ()
    static = () if kind == "predict" else (3,)
    return jax.jit(body, donate_argnums=donate_argnums, static_argnums=static, **pinned)


def flat_state(program: Callable, treedef: Any, kind: str) -> tuple[Callable, Packing | None]:
    """``program`` taking and returning the state as its list of leaves (``treedef``'s).

    The same compiled computation; a call then flattens a list of arrays where
    it flattened the state's nnx Variables and built new ones for the result
    (their Python flatten and unflatten cost ~0.15 ms per call, as much as a
    small step: issue 24). Train and eval return ``(leaves, logs)``, the logs
    packed into one vector that the returned ``Packing`` reads (one transfer,
    ``phalanx._packed``); predict returns its outputs, and no packing.
    """
    packing = None if kind == "predict" else Packing()

    def flat(leaves, data, xs, steps):
        out = program(jax.tree.unflatten(treedef, leaves), data, xs, steps)
        if packing is None:
            return out
        state, logs = out
        out_leaves, out_def = jax.tree.flatten(state)
        if out_def != treedef:  # at trace time; the programs keep the state's structure
            raise AssertionError(f"{kind} program changed the state's structure")
        return out_leaves, packing.pack(logs)

    flat.__name__ = flat.__qualname__ = f"{kind}_body"  # the name jax logs compiles under
    static = () if kind == "predict" else (3,)
    donate = (0,) if kind == "train" else ()
    return jax.jit(flat, static_argnums=static, donate_argnums=donate), packing
