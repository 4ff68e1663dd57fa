"""The bench/models.py workloads at realistic accelerator sizes: examples/s, MFU, memory.

For each workload, phalanx ``fit`` and the hand-written flax.nnx + optax step
(bench/models.py) run on the default JAX backend (a GPU where one is
installed). MFU is the step's floating-point operations, from XLA's cost
analysis of the compiled flax step (``compiled.cost_analysis()['flops']``),
times the steps per second, over ``--peak-tflops`` (default 989: an H100/H200's
dense bf16 peak; these models run float32, so pass the float32/TF32 figure of
your chip for an honest fraction). Memory is the device's
``memory_stats()['peak_bytes_in_use']`` where the backend reports it.

    python bench/gpu.py [--peak-tflops 989] [--only conv] [--dry-run]

``--dry-run`` runs the same code on CPU at bench/models.py's ``--quick`` sizes
(tests/bench/test_gpu_bench.py); its figures mean nothing.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import pathlib

_spec = importlib.util.spec_from_file_location(
    "bench_models", pathlib.Path(__file__).with_name("models.py")
)
models = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(models)


def gpu_cases() -> list[dict]:
    conv = {"filters": 256, "dense": 256, "image": 28}
    tr = {"seq": 512, "d": 512, "heads": 8, "key": 64, "ff": 2048}
    return [
        {"name": "conv b256 spe32", "model": "conv", "batch": 256, "spe": 32, "steps": 64} | conv,
        {"name": "conv b1024 spe1", "model": "conv", "batch": 1024, "spe": 1, "steps": 32} | conv,
        {"name": "transformer b64", "model": "transformer", "batch": 64, "spe": 32, "steps": 64}
        | tr,
        {"name": "mlp numpy b4096", "model": "mlp", "batch": 4096, "spe": 32, "steps": 64},
    ]


def step_flops(case: dict) -> float:
    """Floating-point operations of one flax step, from XLA's cost analysis."""
    x, y = models._data(case)
    step, params, opt = models.flax_step(case)
    b = case["batch"]
    compiled = step.lower(params, opt, x[:b], y[:b]).compile()
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, list | tuple) else cost
    return float(cost.get("flops", 0.0))


def peak_bytes() -> int | None:
    import jax

    stats = jax.devices()[0].memory_stats() or {}
    return stats.get("peak_bytes_in_use")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peak-tflops", type=float, default=989.0)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--only", default="")
    parser.add_argument("--dry-run", action="store_true", help="CPU, tiny sizes (a test)")
    args = parser.parse_args()
    if args.dry_run:
        import os

        os.environ["JAX_PLATFORMS"] = "cpu"
    import jax

    cases = models._cases(quick=True) if args.dry_run else gpu_cases()
    if args.only:
        cases = [c for c in cases if any(k in c["name"] for k in args.only.split(","))]
    print(f"backend {jax.default_backend()}: {jax.devices()[0].device_kind}")
    rows = {}
    for case in cases:
        flops = step_flops(case)
        for name, run in (("flax", models.run_flax), ("phalanx", models.run_phalanx)):
            out = run(case, args.epochs)
            steps_s = out["wall"] / case["batch"]
            mfu = flops * steps_s / (args.peak_tflops * 1e12)
            mem = peak_bytes()
            rows[f"{case['name']} {name}"] = {"ex_s": out["wall"], "mfu": mfu, "peak_bytes": mem}
            mem_s = "n/a" if mem is None else f"{mem / 2**20:,.0f} MiB"
            print(
                f"{case['name']:<20} {name:<8} {out['wall']:>10,.0f} ex/s  MFU {mfu:6.2%}  "
                f"step {flops / 1e9:,.2f} GFLOP  peak {mem_s}",
                flush=True,
            )
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
