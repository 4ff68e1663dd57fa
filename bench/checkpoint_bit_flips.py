"""Every single-bit flip of a model's ``state.phalanx``: how many restore silently (must be 0).

Trains a small model (6-8-4 MLP, Adam, 2 epochs), saves it with
``phalanx.checkpoint.Checkpoint``, then flips each bit of each byte of the file
in turn (``--stride K``: every K-th byte) and reads it back as a restore does
(header, then every array). Prints, per byte class (magic, header length,
header CRC, header JSON, padding, array data), the flips tried, those refused
with a ``CheckpointError`` naming the file, other errors, and silent restores;
then the median time of a refused read, and the CRC cost on a 64 MiB array.

    python bench/checkpoint_bit_flips.py [--stride 1]
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import tempfile
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stride", type=int, default=1)
    args = parser.parse_args()

    import phalanx
    from phalanx import layers
    from phalanx.checkpoint import Checkpoint, _file
    from phalanx.errors import CheckpointError

    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 6)).astype(np.float32)
    y = np.eye(4, dtype=np.float32)[np.abs(x[:, :4]).argmax(1)]
    model = phalanx.Sequential(
        [layers.Input(shape=(6,)), layers.Dense(8, activation="relu"), layers.Dense(4)]
    )
    model.compile(optimizer="adam", loss="mse", metrics=["mae"])
    model.fit(x, y, batch_size=16, epochs=2, verbose=0)
    folder = tempfile.mkdtemp()
    path = Checkpoint(model=model).save(os.path.join(folder, "ckpt"))
    file = os.path.join(path, _file.FILE)
    with open(file, "rb") as f:
        raw = f.read()
    header, data_start = _file.read_header(path)
    length = int.from_bytes(raw[8:16], "little")
    classes = [("magic", 0, 8), ("header length", 8, 16), ("header crc", 16, 20)]
    classes += [("header json", 20, 20 + length), ("padding", 20 + length, data_start)]
    classes += [("array data", data_start, len(raw))]
    counts: dict = collections.defaultdict(collections.Counter)
    times = []
    for name, start, end in classes:
        for offset in range(start, end, args.stride):
            for bit in range(8):
                damaged = bytearray(raw)
                damaged[offset] ^= 1 << bit
                with open(file, "wb") as f:
                    f.write(damaged)
                began = time.perf_counter()
                try:
                    meta = _file.read_meta(path)
                    _file.read_arrays(path, list(meta["objects"]))
                except CheckpointError as error:
                    times.append(time.perf_counter() - began)
                    counts[name]["refused" if "state.phalanx" in str(error) else "unnamed"] += 1
                except Exception:
                    counts[name]["other error"] += 1
                else:
                    counts[name]["silent"] += 1
    print(f"state.phalanx of {len(raw)} bytes ({len(header['arrays']['model'])} arrays)")
    print(f"{'class':15} {'bytes':>6} {'flips':>7} {'refused':>8} {'other':>6} {'silent':>7}")
    for name, start, end in classes:
        c = counts[name]
        other = c["other error"] + c["unnamed"]
        print(
            f"{name:15} {end - start:6} {sum(c.values()):7} {c['refused']:8} {other:6} "
            f"{c['silent']:7}"
        )
    total = collections.Counter()
    for c in counts.values():
        total.update(c)
    print(
        f"total: {total['refused']} of {sum(total.values())} flips refused, {total['silent']} silent"
    )
    print(f"median refused read: {statistics.median(times) * 1e3:.2f} ms")
    import crc32c

    big = np.random.default_rng(1).random(2**24, np.float32)
    began = time.perf_counter()
    crc32c.crc32c(big)
    print(f"CRC32C of a 64 MiB array: {(time.perf_counter() - began) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
