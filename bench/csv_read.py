"""Rows per second of the CSV readers on a 200,000-row file of 5 floats and an int label.

Prints CsvDataset's, make_csv_dataset's (batches of 256, no shuffle) and decode_csv's
rates. Run: ``PYTHONPATH=src python bench/csv_read.py``.
"""

from __future__ import annotations

import os
import tempfile
import time

import numpy as np

from phalanx.data.experimental import CsvDataset, make_csv_dataset
from phalanx.io import decode_csv

ROWS = 200_000


def main() -> None:
    path = os.path.join(tempfile.mkdtemp(), "big.csv")
    x = np.random.default_rng(0).normal(size=(ROWS, 5))
    with open(path, "w") as f:
        f.write("a,b,c,d,e,label\n")
        f.writelines(",".join(f"{v:.6f}" for v in r) + f",{int(r[0] > 0)}\n" for r in x)
    defaults = [[0.0]] * 5 + [[0]]
    start = time.perf_counter()
    n = sum(1 for _ in CsvDataset(path, defaults, header=True))
    print(f"CsvDataset: {n / (time.perf_counter() - start):,.0f} rows/s")
    start = time.perf_counter()
    ds = make_csv_dataset(path, 256, label_name="label", num_epochs=1, shuffle=False)
    n = sum(len(label) for _, label in ds)
    print(f"make_csv_dataset: {n / (time.perf_counter() - start):,.0f} rows/s")
    with open(path) as f:
        lines = f.read().splitlines()[1:]
    start = time.perf_counter()
    decode_csv(lines, defaults)
    print(f"decode_csv: {len(lines) / (time.perf_counter() - start):,.0f} rows/s")


if __name__ == "__main__":
    main()
