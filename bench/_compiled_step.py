"""What ``bench/memory.py`` and ``bench/model_parallel.py`` share: a model compiled under a
strategy, its per-device state bytes, XLA's memory analysis of ``fit``'s training program
and a timer of its steps.

Imported by those scripts (run as ``python bench/<name>.py``, so ``bench/`` is on the
path); JAX is imported inside the functions, after the scripts set the device count.
"""

from __future__ import annotations

import time

BATCH = 64
SPE = 4
EXECUTIONS = 2  # per timed fit: 8 steps


def arrays(data, n: int):
    """``n`` random examples for a model's ``data`` description: ``(features, "float")`` or
    ``(sequence, "int", vocabulary)``; labels of 16 classes."""
    import numpy as np

    rng = np.random.default_rng(0)
    if data[1] == "float":
        x = rng.normal(size=(n, data[0])).astype(np.float32)
    else:
        x = rng.integers(0, data[2], size=(n, data[0])).astype(np.int32)
    return x, rng.integers(0, 16, size=n).astype(np.int32)


def compile_under(strategy, make):
    """``make()``'s model built and compiled (Adam, logits) under ``strategy``; and its data."""
    import phalanx

    with strategy.scope():
        model, data = make()
        model.compile(
            optimizer="adam",
            loss=phalanx.losses.SparseCategoricalCrossentropy(from_logits=True),
            steps_per_execution=SPE,
        )
    return model, data


def state_bytes(model) -> tuple[int, int]:
    """(per device, whole) bytes of parameters + optimizer state, from the placed arrays
    (``summary()``'s figures: ``phalanx.train._memory.variable_memory``)."""
    from phalanx.train import _memory

    v = _memory.variable_memory(model)
    return v.weights + v.optimizer, v.weights_whole + v.optimizer_whole


def analysis(model, x, y):
    """XLA's memory analysis of the compiled training program (one execution of ``SPE``
    streamed batches of ``BATCH``, with sample weights)."""
    import jax
    import numpy as np
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    strategy = model.distribute_strategy
    stacked = NamedSharding(strategy.mesh, P(None, "replica"))

    def spec(a):
        a = np.asarray(a)
        return jax.ShapeDtypeStruct((SPE, BATCH, *a.shape[1:]), a.dtype, sharding=stacked)

    ones = np.ones(BATCH, np.float32)
    xs = tuple(spec(a[:BATCH]) for a in (x, y, ones, ones))
    program = model._program("train", False)  # batches streamed (not resident)
    steps = SPE  # static: the programs compile one length each
    return program.lower(model._state, None, xs, steps).compile().memory_analysis()


def build(strategy, make) -> dict:
    """Compiles and warms ``make()``'s model under ``strategy``; its figures (``params``,
    ``state`` and ``whole`` bytes, XLA's ``args`` and ``temp``) and ``time``, a function
    that times one ``fit`` and returns seconds per step."""
    model, data = compile_under(strategy, make)
    x, y = arrays(data, BATCH * SPE * EXECUTIONS)
    model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0, shuffle=False)  # compile, warm
    a = analysis(model, x, y)
    per_device, whole = state_bytes(model)

    def time_step() -> float:
        start = time.perf_counter()
        model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0, shuffle=False)
        return (time.perf_counter() - start) / (SPE * EXECUTIONS)

    return {
        "params": model.count_params(),
        "state": per_device,
        "whole": whole,
        "args": a.argument_size_in_bytes,
        "temp": a.temp_size_in_bytes,
        "time": time_step,
    }
