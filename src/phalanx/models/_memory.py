"""Bytes per device of a model's training: weights, optimizer state, the compiled step.

``Model.summary()`` prints these lines after Keras's three "params" lines
(`memory_lines`); ``phalanx info --memory`` prints the same figures
for a model replicated and sharded (`memory_report`).

Two kinds of figure, and the text says which:

* *from the arrays*: once ``fit`` (or ``summary(training_batch=...)``) has
  placed the training state, the bytes of each array's shard on one device
  (``sharding.shard_shape``); before that, *computed from shapes*: the same
  sum over the shapes the strategy would place (``variable_sharding`` for
  parameters and optimizer state, whole for the rest);
* *XLA's memory analysis* of the training program as compiled for the
  input ``fit`` last trained on (or the ``training_batch`` given):
  ``compiled.memory_analysis()``'s argument, output, alias and temporary
  bytes, per device. Temporaries are the activations, gradients and, with
  ``shard_parameters``, the gathered parameters. Nothing runs: the program is
  lowered and compiled again for these shapes (JAX's cache answers at once
  when ``fit`` compiled it already).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import flax.nnx as nnx
import jax
import numpy as np

from ..errors import FitInputError
from ..layers import trainable_filter


class StepMemory(NamedTuple):
    """XLA's memory analysis of one compiled training execution, bytes per device."""

    arguments: int
    outputs: int
    aliased: int
    temporaries: int
    code: int
    global_batch: int
    steps: int

    @property
    def peak(self) -> int:
        """Arguments, outputs not written over arguments, and temporaries together."""
        return self.arguments + self.outputs - self.aliased + self.temporaries


class VariableMemory(NamedTuple):
    """Bytes per device (and whole) of the weights and the optimizer state."""

    weights: int
    weights_whole: int
    optimizer: int | None
    optimizer_whole: int | None
    from_arrays: bool


def _per_device(x: Any, sharding: Any = None) -> int:
    """The bytes of ``x``'s shard on one device (whole when it has no sharding)."""
    shape = tuple(np.shape(x))
    sharding = sharding if sharding is not None else getattr(x, "sharding", None)
    if sharding is not None:
        shape = tuple(sharding.shard_shape(shape))
    return int(np.prod(shape, dtype=np.int64)) * np.dtype(x.dtype).itemsize


def _placed(tree: Any, shardings: Any = None) -> int:
    """The bytes per device of ``tree``'s arrays: each as ``shardings`` (a tree of the same
    structure) would place it, else as it is placed (whole when it has no sharding)."""
    if shardings is None:
        return sum(_per_device(x) for x in _arrays(tree))
    pairs = zip(jax.tree.leaves(tree), jax.tree.leaves(shardings), strict=True)
    return sum(_per_device(x, s) for x, s in pairs if hasattr(x, "dtype"))


def _whole(x: Any) -> int:
    return int(np.prod(np.shape(x), dtype=np.int64)) * np.dtype(x.dtype).itemsize


def _arrays(tree: Any) -> list:
    return [x for x in jax.tree.leaves(tree) if hasattr(x, "dtype") and hasattr(x, "shape")]


def _weights_of(rest: Any) -> Any:
    """The weights among the state that is not trained (frozen parameters, batch stats)."""
    if not isinstance(rest, nnx.State):
        return rest
    return nnx.filter_state(rest, nnx.Any(nnx.Param, nnx.BatchStat))


def variable_memory(model: Any) -> VariableMemory:
    """Bytes per device of ``model``'s weights and optimizer state (None: not compiled).

    Read from the placed training state when it exists, else computed from the
    module's shapes and the strategy's layout.
    """
    state = model._state
    if state is not None:
        trained, held, opt = state.params, _weights_of(state.rest), state.opt_state
        per_trained, opt_bytes = _placed(trained), None if opt is None else _placed(opt)
        from_arrays = True
    else:
        module = model._module
        model._annotate_paths(module)  # as fit does
        trainable = trainable_filter(module)
        trained = nnx.state(module, trainable)
        held = nnx.state(module, nnx.Any(nnx.BatchStat, nnx.All(nnx.Param, nnx.Not(trainable))))
        config = model._config
        opt = jax.eval_shape(config.tx.init, trained) if config is not None else None
        # the shardings fit will place them with (``_sharded.place_state``): by shape with
        # shard_parameters, by path and layout map with a ModelParallelStrategy
        shardings = model.distribute_strategy._variable_shardings((trained, opt))
        per_trained = _placed(trained, shardings[0])
        opt_bytes = None if opt is None else _placed(opt, shardings[1])
        from_arrays = False
    weights = [*_arrays(trained), *_arrays(held)]
    per_held = _placed(held)  # kept whole, or as placed
    opt_whole = None if opt is None else sum(_whole(x) for x in _arrays(opt))
    return VariableMemory(
        weights=per_trained + per_held,
        weights_whole=sum(_whole(x) for x in weights),
        optimizer=opt_bytes,
        optimizer_whole=opt_whole,
        from_arrays=from_arrays,
    )


def step_memory(model: Any) -> StepMemory | None:
    """XLA's memory analysis of ``model``'s training program for the input ``fit`` last
    trained on; None when no training step has been compiled (or since ``compile``)."""
    signature = model._train_signature
    if signature is None or model._state is None:
        return None
    resident, (data, xs, steps) = signature
    program = model._program("train", resident)
    lower = getattr(program, "lower", None)  # jax.jit's, or a program's own (_sharded)
    if lower is None:
        return None
    analysis = lower(model._state, data, xs, steps).compile().memory_analysis()
    if analysis is None:  # a backend without the analysis
        return None
    shape = jax.tree.leaves(xs)[0].shape  # (steps, global batch) or (steps, global batch, ...)
    return StepMemory(
        arguments=int(analysis.argument_size_in_bytes),
        outputs=int(analysis.output_size_in_bytes),
        aliased=int(analysis.alias_size_in_bytes),
        temporaries=int(analysis.temp_size_in_bytes),
        code=int(analysis.generated_code_size_in_bytes),
        global_batch=int(shape[1]),
        steps=int(shape[0]),
    )


def prepare_step(model: Any, training_batch: Any) -> None:
    """Places ``model``'s training state and notes the step for ``training_batch``, as the
    first execution of ``fit`` would (no step runs).

    Args:
      model: a compiled model.
      training_batch: ``(x, y)`` or ``(x, y, sample_weight)``: one global batch, as
        ``fit`` would receive it (its first axis is the global batch size).
    """
    if not isinstance(training_batch, tuple) or len(training_batch) not in (2, 3):
        raise FitInputError(
            "summary(training_batch=...) takes (x, y) or (x, y, sample_weight): one global "
            f"batch as fit gets it; got {type(training_batch).__name__}."
        )
    model._require_compiled("summary(training_batch=...)")
    x, y, *weights = training_batch
    leaves = jax.tree.leaves(x)
    if not leaves or np.ndim(leaves[0]) < 1:
        raise FitInputError(
            "summary(training_batch=(x, y)) needs x with a batch axis (arrays, or a dict or "
            f"tuple of them, as fit takes); got x={str(x)[:80]} ({type(x).__name__})."
        )
    size = len(leaves[0])
    spe = model.steps_per_execution

    def tile(tree):  # one execution of steps_per_execution batches
        return jax.tree.map(lambda a: np.concatenate([np.asarray(a)] * spe), tree)

    adapter = model._adapter(
        tile(x),
        tile(y),
        tile(weights[0]) if weights else None,
        batch_size=size,
        steps=None,
        shuffle=False,
        class_weight=None,
    )
    executions = model._prepared(adapter, 0, where="summary's training_batch")
    model._train_signature = next(executions).signature()


def memory_lines(model: Any) -> list[str]:
    """The lines ``summary()`` prints after Keras's "Non-trainable params" line."""
    strategy = model.distribute_strategy
    devices = len(strategy.devices)
    layout_map = getattr(strategy, "layout_map", None)
    if layout_map is not None:
        mesh = layout_map.device_mesh
        layout = f"laid out by a LayoutMap over a {tuple(mesh.shape)} {tuple(mesh.axis_names)} mesh"
    elif getattr(strategy, "shard_parameters", False):
        layout = "sharded"
    else:
        layout = "replicated"
    v = variable_memory(model)
    source = "the placed arrays" if v.from_arrays else "computed from shapes"
    lines = [
        f" Memory per device ({type(strategy).__name__.lstrip('_')}, {devices} device"
        f"{'s' if devices != 1 else ''}, parameters {layout}):",
        f"   Parameters: {readable_size(v.weights)} of {readable_size(v.weights_whole)} ({source})",
    ]
    if v.optimizer is None:
        lines.append("   Optimizer state: none until compile()")
    else:
        lines.append(
            f"   Optimizer state: {readable_size(v.optimizer)} of "
            f"{readable_size(v.optimizer_whole)} ({source})"
        )
    step = step_memory(model)
    if step is None:
        lines.append(
            "   Training step: not compiled yet (fit() or summary(training_batch=(x, y)) "
            "compiles it)"
        )
        return lines
    lines += [
        f"   Training step (XLA memory analysis; global batch {step.global_batch}, "
        f"{step.steps} step{'s' if step.steps != 1 else ''} per execution):",
        f"     arguments {readable_size(step.arguments)} (state and input), outputs "
        f"{readable_size(step.outputs)} ({readable_size(step.aliased)} reuse the arguments' "
        "memory)",
        f"     temporaries {readable_size(step.temporaries)} (activations, gradients"
        f"{', gathered parameters' if layout == 'sharded' else ''}), peak "
        f"{readable_size(step.peak)}",
    ]
    return lines


def _bytes(module: nnx.Module, variable_type) -> int:
    leaves = jax.tree.leaves(nnx.state(module, variable_type))
    return int(sum(np.prod(np.shape(x)) * np.dtype(x.dtype).itemsize for x in leaves))


def readable_size(num_bytes: float) -> str:
    """Formats a byte count as Keras does: ``397.54 KB``."""
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if num_bytes < 1024 or unit == "TB":
            return f"{num_bytes:.2f} {unit}"
        num_bytes /= 1024
    raise AssertionError("unreachable")
