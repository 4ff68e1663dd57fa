"""TFRecord throughput: write, raw read, per-record parse and batched parse.

Writes 60000 MNIST-shaped ``tf.train.Example`` records (784 float32 values and
an int64 label) to a temporary directory and prints records/s for each stage,
the median of several runs. TensorFlow 2.21's tf.data on the project's 2-core
machine: raw read 300-440k records/s, per-record parse (map then batch)
35-50k, batched parse (batch then parse_example) 300-330k. The last line is
the whole ``TFRecordDataset(path).batch(1024).map(parse_example)`` pipeline.
The next lines split the records over 4 files, read them through the README's
``list_files -> interleave -> shuffle -> batch -> map(parse_example)``, then with
``num_parallel_reads=None`` (one file after another) and ``num_parallel_reads=4``
(a parallel interleave: one reader thread per open file), then with the parse
inside each file's dataset (``interleave(..., num_parallel_calls=4)``), then the
same with a 2 ms sleep per 256 records standing for slow storage. Under the GIL
on 2 cores the threads cost more than they overlap unless the readers wait.
The last block reads the same files through ``file://`` URLs (fsspec, the
``phalanx.io`` layer every remote path takes) and through plain paths, runs
alternating, and prints what the URL costs (issue 17: at most 10%) in wall
time and in this process's CPU time (the steadier figure on a shared machine).

Run: python bench/tfrecord.py [--records N] [--runs R]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np

from phalanx.data import Dataset, TFRecordDataset
from phalanx.io._example import serialize_example
from phalanx.io._parse_example import FixedLenFeature, parse_example, parse_single_example
from phalanx.io._tfrecord import TFRecordReader, TFRecordWriter

SPEC = {
    "image": FixedLenFeature([784], np.float32),
    "label": FixedLenFeature([], np.int64),
}
BATCH = 1024


def _rate(fn, n: int, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return n / statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=60000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    n = args.records
    rng = np.random.default_rng(0)
    images = rng.random((n, 784), dtype=np.float32)
    labels = rng.integers(0, 10, n)

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "mnist.tfrecord")

        def write() -> None:
            with TFRecordWriter(path) as w:
                for i in range(n):
                    w.write(serialize_example({"image": images[i], "label": labels[i : i + 1]}))

        write_rate = _rate(write, n, max(1, args.runs // 2))
        print(f"file: {os.path.getsize(path) / 1e6:.1f} MB, {n} records")
        print(f"write (serialize + frame):  {write_rate:>10,.0f} records/s")

        def raw() -> None:
            for _ in TFRecordReader(path):
                pass

        print(f"raw read (CRC checked):     {_rate(raw, n, args.runs):>10,.0f} records/s")
        records = list(TFRecordReader(path))

        def per_record() -> None:
            # tf.data's "map(parse_single_example) then batch": parse each, stack per batch.
            for start in range(0, n, BATCH):
                parsed = [parse_single_example(r, SPEC) for r in records[start : start + BATCH]]
                np.stack([p["image"] for p in parsed])
                np.stack([p["label"] for p in parsed])

        print(f"per-record parse + stack:   {_rate(per_record, n, args.runs):>10,.0f} records/s")

        def batched() -> None:
            for start in range(0, n, BATCH):
                parse_example(records[start : start + BATCH], SPEC)

        print(f"batched parse (1024):       {_rate(batched, n, args.runs):>10,.0f} records/s")

        def read_and_parse() -> None:
            batch = []
            for r in TFRecordReader(path):
                batch.append(r)
                if len(batch) == BATCH:
                    parse_example(batch, SPEC)
                    batch = []
            if batch:
                parse_example(batch, SPEC)

        print(
            f"read + batched parse:       {_rate(read_and_parse, n, args.runs):>10,.0f} records/s"
        )

        pipeline = TFRecordDataset(path).batch(BATCH).map(lambda r: parse_example(r, SPEC))

        def dataset() -> None:
            for _ in pipeline:
                pass

        print(f"TFRecordDataset pipeline:   {_rate(dataset, n, args.runs):>10,.0f} records/s")
        _parallel_reads(tmp, records, args.runs)
        _file_urls(tmp, path, n, args.runs)
        out = parse_example(records[:BATCH], SPEC)
        assert np.array_equal(out["image"], images[:BATCH])
        assert np.array_equal(out["label"], labels[:BATCH])


def _parallel_reads(tmp: str, records: list[bytes], runs: int) -> None:
    """4 files read sequentially vs by a parallel interleave (whole pipeline, records/s)."""
    n, k = len(records), 4
    files = [os.path.join(tmp, f"part-{i}.tfrecord") for i in range(k)]
    for i, f in enumerate(files):
        with TFRecordWriter(f) as w:
            for r in records[i::k]:
                w.write(r)

    def parse(r):
        return parse_example(r, SPEC)

    def run(ds) -> None:
        for _ in ds:
            pass

    _readme_pipeline(tmp, n, runs, parse, run)
    for reads in (None, k):
        ds = TFRecordDataset(files, num_parallel_reads=reads).batch(BATCH).map(parse)
        rate = _rate(lambda ds=ds: run(ds), n, runs)
        print(f"4 files, num_parallel_reads={reads!s:<4}  {rate:>10,.0f} records/s")
    names = Dataset.from_tensor_slices(files)
    for calls in (None, k):
        ds = names.interleave(
            lambda f: TFRecordDataset(f).batch(BATCH // k).map(parse),
            cycle_length=k,
            num_parallel_calls=calls,
        )
        rate = _rate(lambda ds=ds: run(ds), n, runs)
        print(f"4 files, parse per file, num_parallel_calls={calls!s:<4} {rate:>10,.0f} records/s")
    for calls in (None, k):  # slow storage: 2 ms of waiting per 256 records (GIL released)
        ds = names.interleave(
            lambda f: TFRecordDataset(f).batch(BATCH // k).map(_slow_parse),
            cycle_length=k,
            num_parallel_calls=calls,
        )
        rate = _rate(lambda ds=ds: run(ds), n, runs)
        print(f"4 files, 2 ms wait/256, num_parallel_calls={calls!s:<4} {rate:>10,.0f} records/s")


def _readme_pipeline(tmp: str, n: int, runs: int, parse, run) -> None:
    """README's pipeline over the 4 files, per second of wall time and of CPU time.

    ``list_files -> interleave(TFRecordDataset, cycle_length=4) -> shuffle(10000)
    -> batch -> map(parse_example)``: records move in blocks (``_record_blocks.py``).
    """
    pattern = os.path.join(tmp, "part-*.tfrecord")
    wall, cpu = [], []
    for _ in range(runs):
        files = Dataset.list_files(pattern, shuffle=True, seed=0)
        ds = files.interleave(TFRecordDataset, cycle_length=4, block_length=1)
        ds = ds.shuffle(10000, seed=1).batch(BATCH).map(parse)
        start = (time.perf_counter(), time.process_time())
        run(ds)
        wall.append(time.perf_counter() - start[0])
        cpu.append(time.process_time() - start[1])
    print(
        f"4 files, README pipeline (interleave, shuffle):  {n / statistics.median(wall):>10,.0f} "
        f"records/s, {n / statistics.median(cpu):>10,.0f} per CPU second"
    )


def _file_urls(tmp: str, path: str, n: int, runs: int) -> None:
    """Plain paths vs ``file://`` URLs (fsspec) on the same files: records/s and the cost."""
    parts = sorted(os.path.join(tmp, f"part-{i}.tfrecord") for i in range(4))

    def parse(r):
        return parse_example(r, SPEC)

    cases = {
        "raw read, 1 file": lambda p: lambda: _drain(TFRecordReader(p[0])),
        "TFRecordDataset pipeline": lambda p: (
            lambda: _drain(TFRecordDataset(p[0]).batch(BATCH).map(parse))
        ),
        "list_files + 4 parallel reads": lambda p: (
            lambda: _drain(
                TFRecordDataset(
                    Dataset.list_files(p[1], shuffle=False), num_parallel_reads=4
                ).batch(BATCH)
            )
        ),
    }
    plain = (path, os.path.join(tmp, "part-*.tfrecord"))
    url = ("file://" + path, "file://" + os.path.join(tmp, "part-*.tfrecord"))
    assert len(Dataset.list_files(url[1])) == len(parts)
    for name, make in cases.items():
        wall: dict[str, list[float]] = {"plain": [], "file://": []}
        cpu: dict[str, list[float]] = {"plain": [], "file://": []}
        for _ in range(runs):  # alternate, so both see the same machine load
            for kind, paths in (("plain", plain), ("file://", url)):
                fn = make(paths)
                start, start_cpu = time.perf_counter(), time.process_time()
                fn()
                wall[kind].append(time.perf_counter() - start)
                cpu[kind].append(time.process_time() - start_cpu)
        a, b = (statistics.median(wall[k]) for k in ("plain", "file://"))
        ca, cb = (statistics.median(cpu[k]) for k in ("plain", "file://"))
        print(
            f"{name:<30} plain {n / a:>9,.0f}  file:// {n / b:>9,.0f} records/s; "
            f"file:// costs {100 * (b - a) / a:+.1f}% wall, {100 * (cb - ca) / ca:+.1f}% CPU "
            "(medians)"
        )


def _drain(iterable) -> None:
    for _ in iterable:
        pass


def _slow_parse(records):
    time.sleep(0.002)  # stands for network storage latency
    return parse_example(records, SPEC)


if __name__ == "__main__":
    main()
