"""Bit flips over a weights file: how many are refused, raise a bare error, or restore.

One bit (bit ``offset % 8``) flipped at every ``--step``-th byte of a 6-4-BN-2
model's ``.npz`` or ``.weights.h5``, each loaded into a fresh model
(docs/reliability.md, issue 29 item 5)::

    PYTHONPATH=src python bench/weights_bit_flips.py npz --step 1
    PYTHONPATH=src python bench/weights_bit_flips.py weights.h5 --step 7
"""

from __future__ import annotations

import argparse
import collections
import os
import tempfile

import numpy as np

os.environ.setdefault("KERAS_BACKEND", "jax")

import phalanx
from phalanx import layers
from phalanx.errors import PhalanxError


def _model():
    return phalanx.Sequential(
        [layers.Input(shape=(6,)), layers.Dense(4), layers.BatchNormalization(), layers.Dense(2)]
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=["npz", "weights.h5"])
    parser.add_argument("--step", type=int, default=1)
    args = parser.parse_args()
    folder = tempfile.mkdtemp()
    good, bad = os.path.join(folder, f"w.{args.kind}"), os.path.join(folder, f"bad.{args.kind}")
    source = _model()
    source.save_weights(good)
    ref = [np.asarray(w) for w in source.get_weights()]
    with open(good, "rb") as f:
        raw = f.read()
    counts, first = collections.Counter(), {}
    for off in range(0, len(raw), args.step):
        data = bytearray(raw)
        data[off] ^= 1 << (off % 8)
        with open(bad, "wb") as f:
            f.write(data)
        target = _model()
        try:
            target.load_weights(bad)
        except PhalanxError as e:
            outcome = "refused, naming the file" if repr(bad) in str(e) else "refused, no path"
        except Exception as e:
            outcome = f"bare {type(e).__name__}"
        else:
            got = target.get_weights()
            same = all(np.array_equal(a, np.asarray(b)) for a, b in zip(ref, got, strict=True))
            outcome = "same weights" if same else "different weights"
        counts[outcome] += 1
        first.setdefault(outcome, off)
    print(f"{args.kind}: {len(raw)} bytes, {sum(counts.values())} flips")
    for outcome, n in counts.most_common():
        print(f"  {outcome}: {n} (first at byte {first[outcome]})")


if __name__ == "__main__":
    main()
