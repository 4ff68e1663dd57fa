"""``phalanx records``: look inside TFRecord files and check their CRCs.

Files may be local paths or URLs (``gs://bucket/train-00000.tfrecord``,
``s3://...``, ``memory://``): they are read through ``phalanx.io``.
"""

from __future__ import annotations

import argparse
import contextlib
import time
from typing import Any

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

from ..errors import DataLossError, ExampleParseError, FileSystemNotInstalledError
from ..io import Example, TFRecordReader, _fs, guess_compression


def register(sub: argparse._SubParsersAction) -> None:
    """Adds ``records inspect`` and ``records verify`` to the ``phalanx`` command."""
    p = sub.add_parser("records", help="inspect or verify TFRecord files")
    records = p.add_subparsers(dest="records_command", metavar="ACTION")
    p.set_defaults(handler=lambda args: _usage(p))

    ins = records.add_parser(
        "inspect", help="count records, guess the compression, show the first records"
    )
    ins.add_argument("file")
    ins.add_argument("--limit", type=int, default=3, metavar="N", help="records to show (3)")
    ins.add_argument("--compression", default=None, help="GZIP, ZLIB or NONE (default: guess)")
    ins.set_defaults(handler=run_inspect)

    ver = records.add_parser("verify", help="check every record's CRCs; exit 1 on damage")
    ver.add_argument("files", nargs="+", metavar="FILE")
    ver.add_argument("--compression", default=None, help="GZIP, ZLIB or NONE (default: guess)")
    ver.set_defaults(handler=run_verify)


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _compression_for(path: str, given: str | None) -> str | None:
    if given is not None:
        return "" if given.upper() == "NONE" else given
    return guess_compression(path)


def _describe_value(value: Any) -> str:
    if isinstance(value, np.ndarray):
        kind = "float" if value.dtype == np.float32 else "int64"
        shown = ", ".join(f"{v:.6g}" if kind == "float" else str(v) for v in value[:6].tolist())
    else:
        kind = "bytes"
        shown = ", ".join(repr(v[:32]) for v in value[:3])
    more = ", ..." if len(value) > (6 if kind != "bytes" else 3) else ""
    return f"{kind}[{len(value)}] [{shown}{more}]"


def _describe_record(data: bytes) -> list[str]:
    try:
        example = Example.FromString(data)
        features = example.features.feature if example.features is not None else {}
    except (ExampleParseError, UnicodeDecodeError):
        features = {}
    if not features:
        return [
            f"  {len(data)} bytes, not an Example: {data[:24].hex()}{'...' if len(data) > 24 else ''}"
        ]
    width = max(len(k) for k in features)
    lines = [f"  tf.train.Example, {len(data)} bytes, {len(features)} features:"]
    for name, feature in features.items():
        value = feature.value
        desc = _describe_value(value) if feature.kind is not None else "(empty)"
        lines.append(f"    {name:<{width}}  {desc}")
    return lines


def run_inspect(args: argparse.Namespace) -> int:
    """Prints the count, the compression and the first ``--limit`` records of one file."""
    path = args.file
    if args.limit < 0:
        print(f"phalanx records inspect: --limit must be >= 0 (records to show), got {args.limit}.")
        return 2
    unavailable = _unavailable(path)
    if unavailable:
        print(f"phalanx records: {unavailable}")
        return 2
    if _fs.isdir(path):
        print(
            f"phalanx records: {path} is a directory, not a TFRecord file; give its files "
            f"(phalanx records verify {path.rstrip('/')}/*)."
        )
        return 2
    if not _fs.isfile(path):
        print(f"phalanx records: no such file: {path}")
        return 2
    compression = _compression_for(path, args.compression)
    if compression is None:
        print(f"{path}: not a TFRecord file (no valid record header, not GZIP or ZLIB).")
        return 1
    reader = TFRecordReader(path, compression, skip_corrupt=True)
    count = 0
    shown: list[str] = []
    for data in reader:
        if count < args.limit:
            shown.append(f"record {count}:")
            shown.extend(_describe_record(data))
        count += 1
    print(f"file:        {path} ({_fs.size(path):,} bytes)")
    print(f"compression: {compression or 'NONE'}")
    print(
        f"records:     {count}" + (f" (+{reader.corrupt_count} damaged)" if reader.damaged else "")
    )
    for line in shown:
        print(line)
    _print_damage(reader)
    return 1 if reader.damaged else 0


def _print_damage(reader: TFRecordReader) -> None:
    for index, offset, what in reader.damaged:
        print(f"  damaged: record {index} at byte offset {offset} ({what})")


def run_verify(args: argparse.Namespace) -> int:
    """Checks every record of every file; returns 1 if any file is damaged or unreadable.

    One line per file, then a summary; on a terminal, a progress bar over the
    files' bytes on stderr while it reads.
    """
    started = time.perf_counter()
    sizes = {
        path: _fs.size(path) for path in args.files if not _unavailable(path) and _fs.isfile(path)
    }
    tally = {"OK": 0, "DAMAGED": 0, "MISSING": 0, "records": 0}
    with _progress(len(args.files), sum(sizes.values())) as advance:
        for path in args.files:
            verdict, records = _verify_one(path, args.compression)
            tally[verdict] += 1
            tally["records"] += records
            advance(sizes.get(path, 0))
    total = sum(sizes.values())
    print(
        f"verified {_counted(len(args.files), 'file')} ({_bytes(total)}) in "
        f"{time.perf_counter() - started:.1f} s: {tally['OK']} OK, {tally['DAMAGED']} damaged, "
        f"{tally['MISSING']} missing; {_counted(tally['records'], 'good record')}"
    )
    return 0 if tally["OK"] == len(args.files) else 1


def _verify_one(path: str, compression_arg: str | None) -> tuple[str, int]:
    """Prints the file's line; returns its verdict and its count of good records."""
    unavailable = _unavailable(path)
    if unavailable:
        print(f"MISSING  {path}: {unavailable}")
        return "MISSING", 0
    if _fs.isdir(path):
        print(f"MISSING  {path}: a directory, not a TFRecord file; give its files ({path}/*)")
        return "MISSING", 0
    if not _fs.isfile(path):
        print(f"MISSING  {path}: no such file")
        return "MISSING", 0
    compression = _compression_for(path, compression_arg)
    if compression is None:
        print(f"DAMAGED  {path}: not a TFRecord file (no valid header, not GZIP or ZLIB)")
        return "DAMAGED", 0
    reader = TFRecordReader(path, compression, skip_corrupt=True)
    count = 0
    try:
        for _ in reader:
            count += 1
    except DataLossError as e:
        print(f"DAMAGED  {path}: {e}")
        return "DAMAGED", count
    label = compression or "NONE"
    if reader.damaged:
        damaged = len(reader.damaged)
        print(f"DAMAGED  {path}: {_counted(count, 'good record')}, {damaged} damaged ({label})")
        _print_damage(reader)
        return "DAMAGED", count
    print(f"OK       {path}: {_counted(count, 'record')} ({label})")
    return "OK", count


def _counted(n: int, noun: str) -> str:
    """``1 record``, ``2 records``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _unavailable(path: str) -> str:
    """Why ``path``'s file system cannot be used here (its package missing ...), or ``""``."""
    try:
        _fs.locate(path)
    except (FileSystemNotInstalledError, ValueError) as e:
        return str(e)
    return ""


def _bytes(n: int) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


@contextlib.contextmanager
def _progress(files: int, total_bytes: int):
    """Yields ``advance(nbytes)``; draws a rich bar on stderr only when it is a terminal."""
    console = Console(stderr=True)
    if not console.is_terminal:
        yield lambda nbytes: None
        return
    columns = (
        TextColumn("verifying"),
        BarColumn(),
        TextColumn("{task.fields[done]}/{task.fields[files]} files"),
        DownloadColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console) as progress:
        task = progress.add_task("verify", total=total_bytes or None, done=0, files=files)

        def advance(nbytes: int) -> None:
            done = progress.tasks[0].fields["done"] + 1
            progress.update(task, advance=nbytes, done=done)

        yield advance
