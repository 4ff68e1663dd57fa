"""Rewrites the TFRecord test vectors in this folder with TensorFlow, and their manifest.

phalanx never imports TensorFlow; these files are how its tests know that phalanx
reads and writes what TensorFlow does. Run this only to refresh them (for example
after a TensorFlow release), in an environment that has TensorFlow:

    python -m venv /tmp/tf && . /tmp/tf/bin/activate && pip install tensorflow
    python tests/data/tf_vectors/regenerate.py        # rewrites this folder
    python -m pytest -q tests/data                    # then check phalanx against them

What TensorFlow wrote is the file; what TensorFlow read back (records, parsed
examples, the error of a damaged file and how many records came before it) is
``manifest.json``. Payloads come from a seeded generator, so a rerun with the
same TensorFlow gives the same files.
"""

from __future__ import annotations

import argparse
import base64
import json
import math
from pathlib import Path

import numpy as np
import tensorflow as tf

HERE = Path(__file__).resolve().parent
RAW_LENGTHS = (0, 1, 7, 255, 256, 65536, 100003)
LINES = ["first", "", "third line with spaces", "ünïcödé", "last-no-newline"]
INT64_EDGES = [-(2**63), 2**63 - 1, -1, 0, 300]
SPECIAL_FLOATS = [math.nan, math.inf, -math.inf, -0.0, 1.401298464324817e-45, 3.4e38]


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def jsonable_float(x: float):
    return str(x) if math.isnan(x) or math.isinf(x) else float(x)


def write_raw(out: Path, rng: np.random.Generator) -> list[dict]:
    records = [rng.bytes(n) for n in RAW_LENGTHS]
    vectors = []
    for name, compression in (("raw", None), ("raw.gz", "GZIP"), ("raw.zlib", "ZLIB")):
        path = out / f"{name}.tfrecord"
        with tf.io.TFRecordWriter(str(path), options=compression or "") as writer:
            for record in records:
                writer.write(record)
        read = [r.numpy() for r in tf.data.TFRecordDataset(str(path), compression or "")]
        assert read == records, f"TensorFlow did not read back {path}"
        vectors.append(
            {
                "file": path.name,
                "kind": "raw",
                "compression": compression,
                "records_b64": [b64(r) for r in read],
            }
        )
    return vectors


def _example(i: int, rng: np.random.Generator) -> tuple[tf.train.Example, dict]:
    names = [f"record-{i}".encode(), "héllo→✓".encode(), b"\x00\xff"]
    image = rng.random(16, dtype=np.float32)
    label = int(rng.integers(0, 10))
    feats = {
        "name": ("bytes", names),
        "label": ("int64", [label]),
        "big": ("int64", INT64_EDGES if i % 2 == 0 else [5]),
        "image": ("float", image.tolist()),
    }
    ragged = {0: [0.0], 1: [], 3: [0.0, 0.25, 0.5, 0.75], 4: []}
    if i in ragged:
        feats["ragged"] = ("float", ragged[i])
    if i == 2:
        feats["special"] = ("float", SPECIAL_FLOATS)
    if i == 4:
        feats["nothing"] = (None, [])  # a Feature with no list set
    proto = tf.train.Example()
    for key, (kind, values) in feats.items():
        feature = proto.features.feature[key]
        if kind == "bytes":
            feature.bytes_list.value.extend(values)
        elif kind == "int64":
            feature.int64_list.value.extend(values)
        elif kind == "float":
            feature.float_list.value.extend(values)
    described = {}
    for key, (kind, values) in feats.items():
        if kind == "bytes":
            described[key] = {"kind": kind, "values_b64": [b64(v) for v in values]}
        else:
            stored = np.float32(values).tolist() if kind == "float" else values
            described[key] = {"kind": kind, "values": [jsonable_float(v) for v in stored]}
    return proto, described


PARSE_SPEC = {
    "image": {"type": "FixedLenFeature", "shape": [16], "dtype": "float32"},
    "label": {"type": "FixedLenFeature", "shape": [], "dtype": "int64"},
    "name": {"type": "FixedLenFeature", "shape": [3], "dtype": "string"},
    "ragged": {"type": "VarLenFeature", "dtype": "float32"},
    "big": {"type": "VarLenFeature", "dtype": "int64"},
    "missing_with_default": {
        "type": "FixedLenFeature",
        "shape": [2],
        "dtype": "int64",
        "default_value": [11, 12],
    },
}


def _tf_spec() -> dict:
    spec = {}
    for key, s in PARSE_SPEC.items():
        dtype = tf.as_dtype(s["dtype"])
        if s["type"] == "VarLenFeature":
            spec[key] = tf.io.VarLenFeature(dtype)
        else:
            spec[key] = tf.io.FixedLenFeature(s["shape"], dtype, s.get("default_value"))
    return spec


def _sparse(t: tf.SparseTensor, cast) -> dict:
    return {
        "indices": t.indices.numpy().tolist(),
        "values": [cast(v) for v in t.values.numpy().tolist()],
        "dense_shape": t.dense_shape.numpy().tolist(),
    }


def write_examples(out: Path, rng: np.random.Generator) -> dict:
    path = out / "examples.tfrecord"
    described, serialized = [], []
    with tf.io.TFRecordWriter(str(path)) as writer:
        for i in range(6):
            proto, desc = _example(i, rng)
            serialized.append(proto.SerializeToString())
            writer.write(serialized[-1])
            described.append(desc)
    parsed = tf.io.parse_example(tf.constant(serialized), _tf_spec())
    result = {
        "image": parsed["image"].numpy().tolist(),
        "label": parsed["label"].numpy().tolist(),
        "name_b64": [[b64(v) for v in row] for row in parsed["name"].numpy().tolist()],
        "ragged": _sparse(parsed["ragged"], float),
        "big": _sparse(parsed["big"], int),
        "missing_with_default": parsed["missing_with_default"].numpy().tolist(),
    }
    return {
        "file": path.name,
        "kind": "examples",
        "compression": None,
        "examples": described,
        "parse_example": {"spec": PARSE_SPEC, "result": result},
    }


def _tensorflow_reads(path: Path) -> tuple[int, str]:
    count = 0
    try:
        for _ in tf.data.TFRecordDataset(str(path)):
            count += 1
    except tf.errors.DataLossError as e:
        return count, f"DataLossError: {e}"[:200]
    raise AssertionError(f"TensorFlow read all of {path}: it was meant to be damaged")


def write_damaged(out: Path) -> list[dict]:
    raw = (out / "raw.tfrecord").read_bytes()
    flipped = bytearray(raw)
    flipped[69] ^= 0xFF
    damaged = {
        "corrupt_payload.tfrecord": (bytes(flipped), "byte 69 flipped (payload of record 3)"),
        "truncated.tfrecord": (raw[:-50], "last 50 bytes cut"),
    }
    vectors = []
    for name, (data, damage) in damaged.items():
        (out / name).write_bytes(data)
        before, error = _tensorflow_reads(out / name)
        vectors.append(
            {
                "file": name,
                "kind": "damaged",
                "damage": damage,
                "tensorflow_records_before_error": before,
                "tensorflow_error": error,
            }
        )
    return vectors


def write_lines_and_fixed(out: Path, rng: np.random.Generator) -> list[dict]:
    (out / "lines.txt").write_bytes("\n".join(LINES).encode("utf-8"))
    lines = [t.numpy().decode() for t in tf.data.TextLineDataset(str(out / "lines.txt"))]
    records = [rng.bytes(6) for _ in range(5)]
    (out / "fixed.bin").write_bytes(rng.bytes(4) + b"".join(records) + rng.bytes(3))
    read = tf.data.FixedLengthRecordDataset(str(out / "fixed.bin"), 6, 4, 3)
    return [
        {"file": "lines.txt", "kind": "text_lines", "lines": lines},
        {
            "file": "fixed.bin",
            "kind": "fixed_length",
            "record_bytes": 6,
            "header_bytes": 4,
            "footer_bytes": 3,
            "records_b64": [b64(t.numpy()) for t in read],
        },
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE, help="folder to write (default: here)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    vectors = write_raw(args.out, rng)
    vectors.append(write_examples(args.out, rng))
    vectors += write_damaged(args.out)
    vectors += write_lines_and_fixed(args.out, rng)
    manifest = {"tensorflow_version": tf.__version__, "variant": "phalanx", "vectors": vectors}
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"wrote {len(vectors)} vectors with TensorFlow {tf.__version__} to {args.out}")


if __name__ == "__main__":
    main()
