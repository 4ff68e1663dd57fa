"""Checkpoint save/restore time and size, and the step-time cost of async backups in ``fit``.

* save/restore: ``phalanx.checkpoint.Checkpoint(model=...)`` of the seeds' MLP
  (784-128-10, Adam) and of a ~100M-parameter MLP (784-4096x7-10, Adam: its
  checkpoint holds the parameters and both Adam moments, ~1.2 GB), after one
  step on random inputs. Save = ``write`` until committed; restore = ``read`` into a built,
  compiled model of the same architecture until its state is placed. Median
  of ``--runs``; size = the checkpoint directory on disk.
* async overhead: the seeds' MLP trained by ``fit`` on MNIST-shaped arrays
  (batch 1024, ``steps_per_execution=50``), without callbacks and with
  ``BackupAndRestore(save_freq=100, async_save=True)`` (one backup per 100
  steps, written in background threads). Prints the median step time of
  each and the overhead, and how long the backup's batch hook held the
  training loop per save (median over the saves of all runs): the part of
  an async save that is not overlapped with training, less sensitive to the
  load of a shared machine than the step-time difference.

Usage: python bench/checkpoint.py [--runs 5] [--steps 1000] [--skip-large]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import jax
import numpy as np

import phalanx
from phalanx import layers
from phalanx.checkpoint import Checkpoint


def mlp(hidden: list[int], spe: int = 1):
    model = phalanx.Sequential(
        [layers.Input(shape=(784,))]
        + [layers.Dense(h, activation="relu") for h in hidden]
        + [layers.Dense(10, activation="softmax")]
    )
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", steps_per_execution=spe)
    return model


def one_step(model):
    """One step on random inputs: dense gradients, so the optimizer's moments are as little
    compressible as in training (zero inputs leave the first layer's moments zero, which orbax
    compressed 3x, a size and speed no trained model sees)."""
    rng = np.random.default_rng(0)
    x = rng.random((64, 784), np.float32)
    y = rng.integers(0, 10, 64).astype(np.int32)
    model.fit(x, y, batch_size=64, epochs=1, verbose=0)


def size_of(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def save_restore(name: str, hidden: list[int], runs: int) -> None:
    model = mlp(hidden)
    one_step(model)
    params = model.count_params()
    saves, restores, size = [], [], 0
    with tempfile.TemporaryDirectory() as root:
        for r in range(runs):
            path = Path(root) / f"c{r}"
            start = time.perf_counter()
            Checkpoint(model=model).write(path)
            saves.append(time.perf_counter() - start)
            size = size_of(path)
            other = mlp(hidden)
            one_step(other)
            start = time.perf_counter()
            Checkpoint(model=other).read(path)
            jax.block_until_ready(other._state)
            restores.append(time.perf_counter() - start)
            del other
    print(
        f"{name:>10}: {params / 1e6:7.2f}M params, checkpoint {size / 2**20:8.1f} MiB, "
        f"save {statistics.median(saves):6.3f} s, restore {statistics.median(restores):6.3f} s"
    )


class TimedBackup(phalanx.callbacks.BackupAndRestore):
    """``BackupAndRestore`` that records how long each hook call that saved held the loop."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.held: list[float] = []

    def on_train_batch_end(self, batch, logs=None):
        before, start = self._steps, time.perf_counter()
        super().on_train_batch_end(batch, logs)
        if self._steps // self.save_freq > before // self.save_freq:  # this call saved
            self.held.append(time.perf_counter() - start)


def step_times(steps: int, runs: int) -> None:
    rng = np.random.default_rng(0)
    n = 1024 * 100
    x = rng.normal(size=(n, 784)).astype(np.float32)
    y = rng.integers(0, 10, n).astype(np.int32)
    epochs = max(1, steps // 100)
    results: dict[str, list[float]] = {"no checkpoints": [], "async backup / 100 steps": []}
    held: list[float] = []
    for r in range(runs):
        for label in list(results)[:: 1 if r % 2 == 0 else -1]:  # alternate the order
            model = mlp([128], spe=50)
            model.fit(x[:1024], y[:1024], batch_size=1024, verbose=0)  # compile
            with tempfile.TemporaryDirectory() as root:
                callbacks = []
                if label != "no checkpoints":
                    backup = TimedBackup(root + "/b", save_freq=100, async_save=True)
                    callbacks = [backup]
                start = time.perf_counter()
                model.fit(x, y, batch_size=1024, epochs=epochs, callbacks=callbacks, verbose=0)
                results[label].append((time.perf_counter() - start) / (epochs * 100))
                if callbacks:
                    held += backup.held
    base = statistics.median(results["no checkpoints"])
    best = min(results["no checkpoints"])
    for label, times in results.items():
        t, b = statistics.median(times), min(times)
        print(
            f"{label:>26}: median {t * 1e3:7.3f} ms/step ({(t / base - 1) * 100:+5.1f}%), "
            f"best {b * 1e3:7.3f} ms/step ({(b / best - 1) * 100:+5.1f}%)"
        )
    per_100 = base * 100
    blocked = statistics.median(held)
    print(
        f"{'training loop held per save':>26}: median {blocked * 1e3:7.3f} ms over {len(held)} "
        f"saves ({blocked / per_100 * 100:.1f}% of 100 steps without checkpoints)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--skip-large", action="store_true")
    args = parser.parse_args()
    print(f"jax {jax.__version__}, {jax.device_count()} device(s): {jax.devices()[0].platform}")
    save_restore("seed MLP", [128], args.runs)
    if not args.skip_large:
        save_restore("100M MLP", [4096] * 7, args.runs)
    step_times(args.steps, args.runs)


if __name__ == "__main__":
    main()
