"""CPU and wall time of one checkpoint write of the seeds' MLP state: phalanx's file vs orbax.

Why phalanx writes host-copied states as its own one file (``phalanx/checkpoint/_file.py``):
an asynchronous save's write runs in the background, but on a 2-core CPU machine its CPU
time is taken from the cores XLA computes on. This prints that CPU time per save for
phalanx's file (as ``Checkpoint.save`` writes it: header, data, fsync, rename), for orbax's
composite checkpoint (JSON meta + a PyTree, with and without OCDBT: what phalanx wrote before,
and still writes for arrays split over processes) and for one ``.npz`` file written, fsynced
and renamed into place. Medians of ``--saves`` saves after 3 warm-up saves.

    python bench/checkpoint_writers.py [--saves 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np


def state() -> dict:
    """The seeds' MLP (784-128-10) parameters and Adam's two moments, float32."""
    rng = np.random.default_rng(0)
    shapes = {"d0/kernel": (784, 128), "d0/bias": (128,), "d1/kernel": (128, 10), "d1/bias": (10,)}
    return {
        part: {k.replace("/", "_"): rng.random(s, np.float32) for k, s in shapes.items()}
        for part in ("params", "mu", "nu")
    }


def timed(save, saves: int) -> tuple[float, float]:
    """(CPU ms, wall ms) medians of ``save(i)`` after 3 warm-up calls."""
    cpu, wall = [], []
    for i in range(saves + 3):
        c, w = time.process_time(), time.perf_counter()
        save(i)
        if i >= 3:
            cpu.append(1000 * (time.process_time() - c))
            wall.append(1000 * (time.perf_counter() - w))
    return statistics.median(cpu), statistics.median(wall)


def orbax_writer(folder: str, arrays: dict, **handler_options):
    import orbax.checkpoint as ocp

    folder = tempfile.mkdtemp(dir=folder)  # one folder per writer: names repeat

    registry = ocp.handlers.DefaultCheckpointHandlerRegistry()
    registry.add("arrays", ocp.args.PyTreeSave, ocp.PyTreeCheckpointHandler(**handler_options))
    registry.add("meta", ocp.args.JsonSave, ocp.JsonCheckpointHandler())
    checkpointer = ocp.Checkpointer(ocp.CompositeCheckpointHandler(handler_registry=registry))

    def save(i: int) -> None:
        args = ocp.args.Composite(
            meta=ocp.args.JsonSave({"step": i}), arrays=ocp.args.PyTreeSave(arrays)
        )
        checkpointer.save(os.path.join(folder, f"orbax_{i}"), args)

    return save


def phalanx_writer(folder: str, arrays: dict):
    from phalanx.checkpoint import _file

    folder = tempfile.mkdtemp(dir=folder)
    meta = {"format": "phalanx.checkpoint/1", "save_counter": 0, "objects": {}}

    def save(i: int) -> None:
        _file.write(os.path.join(folder, f"phalanx_{i}"), arrays, dict(meta, save_counter=i))

    return save


def npz_writer(folder: str, arrays: dict):
    folder = tempfile.mkdtemp(dir=folder)
    flat = {f"{part}/{k}": v for part, tree in arrays.items() for k, v in tree.items()}

    def save(i: int) -> None:
        tmp = os.path.join(folder, f"npz_{i}.tmp")
        os.makedirs(tmp)
        with open(os.path.join(tmp, "arrays.npz"), "wb") as f:
            np.savez(f, **flat)
            f.flush()
            os.fsync(f.fileno())
        os.rename(tmp, os.path.join(folder, f"npz_{i}"))

    return save


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--saves", type=int, default=15)
    saves = parser.parse_args().saves
    arrays = state()
    size = sum(a.nbytes for tree in arrays.values() for a in tree.values())
    print(f"seeds' MLP state with Adam: {size / 2**20:.2f} MiB; medians of {saves} saves")
    with tempfile.TemporaryDirectory() as folder:
        rows = [
            ("phalanx one file (_file.write)", phalanx_writer(folder, arrays)),
            ("orbax composite, OCDBT", orbax_writer(folder, arrays)),
            ("orbax composite, no OCDBT", orbax_writer(folder, arrays, use_ocdbt=False)),
            (".npz + fsync + rename", npz_writer(folder, arrays)),
        ]
        for name, save in rows:
            cpu, wall = timed(save, saves)
            print(f"  {name:34s} CPU {cpu:6.1f} ms   wall {wall:6.1f} ms per save")


if __name__ == "__main__":
    main()
