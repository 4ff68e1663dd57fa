"""The host CPU of reading one execution's logs: a dict of arrays or one packed vector.

``fit`` reads the loss, each metric and the label check after every execution
(issue 24). This times, in one process and alternating, a tiny jitted program
returning them as a dict fetched with ``jax.device_get`` (as before) against
the same program packing them into one vector (``phalanx._packed``, as ``fit``
does now), each call's result fresh, in CPU microseconds per call + fetch.

    python bench/log_fetch.py [--rounds 7] [--calls 3000] [--metrics 1]
"""

from __future__ import annotations

import argparse
import statistics
import time

import jax
import jax.numpy as jnp

from phalanx._packed import Packed, Packing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--metrics", type=int, default=1, help="scalar logs beside the loss")
    args = parser.parse_args()

    def logs(x):
        out = {"loss": x.sum(), "_label_check": jnp.zeros(6) + x[0]}
        out.update({f"metric_{k}": x[k] * 2 for k in range(args.metrics)})
        return out

    packing = Packing()
    as_dict = jax.jit(logs)
    packed = jax.jit(lambda x: packing.pack(logs(x)))
    x = jnp.ones(8)

    def dict_fetch():
        jax.device_get(as_dict(x))

    def packed_fetch():
        Packed(packed(x), packing).fetch()

    def per_call(fn) -> float:
        fn()
        start = time.process_time()
        for _ in range(args.calls):
            fn()
        return (time.process_time() - start) / args.calls * 1e6

    rounds = [(per_call(dict_fetch), per_call(packed_fetch)) for _ in range(args.rounds)]
    a, b = (statistics.median(r[i] for r in rounds) for i in (0, 1))
    print(f"logs: loss, label check, {args.metrics} metric(s); median of {args.rounds} rounds")
    print(f"dict + jax.device_get: {a:6.1f} us CPU per call + fetch")
    print(f"one packed vector:     {b:6.1f} us CPU per call + fetch  ({a - b:+.1f} us saved)")
    print("rounds (dict, packed):", [(round(p), round(q)) for p, q in rounds])


if __name__ == "__main__":
    main()
