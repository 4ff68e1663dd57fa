"""Which XLA:CPU options change the speed of conv, matmul and attention here (issue 24 item 4).

Each setting of ``XLA_FLAGS`` runs in its own child process: the hand-written
flax.nnx + optax step of ``bench/models.py`` on three workloads (the TPU guide's
conv net at batch 32, the seeds' MLP at batch 256, the 2-block transformer at
batch 16), each for ``--steps`` steps after two warm-up steps. It prints the
median CPU-seconds per step (the process's CPU time, all threads: the steadier
figure on a shared machine), its ratio to the default flags, and how far the
parameters after the steps are from the default's (max |difference|; 0 means
the setting is exact here).

    python bench/xla_flags.py [--steps 8] [--only conv,mlp]

The figures go into docs/performance.md ("XLA:CPU flags").
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

SETTINGS = {
    "default": "",
    "oneDNN": "--xla_cpu_use_onednn=true",
    "XNNPACK": "--xla_cpu_use_xnnpack=true",
    "no thunk runtime": "--xla_cpu_use_thunk_runtime=false",
    "fast math": "--xla_cpu_enable_fast_math=true",
}

WORKLOADS = {
    "conv": {"model": "conv", "batch": 32, "filters": 256, "dense": 256, "image": 28},
    "mlp": {"model": "mlp", "batch": 256},
    "transformer": {
        "model": "transformer",
        "batch": 16,
        "seq": 128,
        "d": 128,
        "heads": 4,
        "key": 32,
        "ff": 256,
    },
}


def _models():
    path = pathlib.Path(__file__).with_name("models.py")
    spec = importlib.util.spec_from_file_location("bench_models", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def child(names: list[str], steps: int, out: str) -> None:
    import jax
    import numpy as np

    models = _models()
    result = {}
    for name in names:
        case = dict(WORKLOADS[name], steps=steps + 2)
        x, y = models._data(case)
        step, params, opt = models.flax_step(case)
        b, times = case["batch"], []
        for s in range(steps + 2):
            t = time.process_time()
            params, opt, loss = step(params, opt, x[s * b : (s + 1) * b], y[s * b : (s + 1) * b])
            loss.block_until_ready()
            if s >= 2:
                times.append(time.process_time() - t)
        leaves = [np.asarray(v) for v in jax.tree.leaves(params)]
        np.savez(f"{out}-{name}.npz", *leaves)
        result[name] = statistics.median(times)
    print(json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument(
        "--only", default="", help="comma-separated workloads: conv,mlp,transformer"
    )
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    names = [n for n in WORKLOADS if not args.only or n in args.only.split(",")]
    if args.child is not None:
        child(names, args.steps, args.out)
        return
    import tempfile

    import numpy as np

    folder = tempfile.mkdtemp()
    rows = {}
    for setting, flags in SETTINGS.items():
        env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS=flags)
        out = os.path.join(folder, setting.replace(" ", "_"))
        cmd = [sys.executable, __file__, "--child", "1", "--out", out, "--steps", str(args.steps)]
        if args.only:
            cmd += ["--only", args.only]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if done.returncode:
            print(f"{setting} ({flags}): the child failed: {done.stderr.strip()[-300:]}")
            continue
        rows[setting] = (out, json.loads(done.stdout.strip().splitlines()[-1]))
    base_out, base = rows["default"]
    print("| workload | setting | CPU-s/step | speed vs default | max abs diff of params |")
    print("|---|---|---|---|---|")
    for name in names:
        ref = np.load(f"{base_out}-{name}.npz")
        for setting, (out, times) in rows.items():
            got = np.load(f"{out}-{name}.npz")
            diff = max(float(np.max(np.abs(got[k] - ref[k]))) for k in ref.files)
            print(
                f"| {name} | {setting} | {times[name]:.4f} | {base[name] / times[name]:.2f}x "
                f"| {diff:.1e} |"
            )


if __name__ == "__main__":
    main()
