"""Bit flips over a weights file: an identical restore or the project's error naming the file.

Before (issue 29 item 5), a flipped ``.npz`` gave a bare ``NotImplementedError: That
compression method is not supported``, ``RuntimeError: ... is encrypted`` or
``OSError [Errno 22]`` without the file, and a flipped ``.weights.h5`` a bare h5py
``KeyError``/``RuntimeError``/``ValueError``. Each test flips one bit at 120 offsets
spread over the whole file (deterministic) and loads it into a fresh model.

A ``.npz`` member carries zip's CRC-32, so no flip may restore different weights. A
Keras ``.weights.h5`` has no checksum of its arrays (Keras writes none; phalanx writes
the same file so Keras reads it), so a flip inside an array's raw bytes can restore a
different value: those are counted, and allowed only there (docs/reliability.md).
"""

from __future__ import annotations

import collections

import numpy as np
import pytest

import phalanx
from phalanx import layers
from phalanx.errors import KerasFileError, WeightsFileError

OFFSETS = 120


def _model():
    return phalanx.Sequential(
        [layers.Input(shape=(6,)), layers.Dense(4), layers.BatchNormalization(), layers.Dense(2)]
    )


def _flips(raw: bytes):
    """One bit of each of OFFSETS offsets spread evenly over ``raw`` (its ends included)."""
    for off in np.unique(np.linspace(0, len(raw) - 1, OFFSETS).astype(int)):
        off = int(off)
        bad = bytearray(raw)
        bad[off] ^= 1 << (off % 8)
        yield off, bytes(bad)


def _outcomes(tmp_path, suffix, error):
    """``(Counter, {outcome: first offset}, raw bytes, saved file)`` over the flips."""
    source = _model()
    good = str(tmp_path / f"good{suffix}")
    source.save_weights(good)
    ref = [np.asarray(w) for w in source.get_weights()]
    with open(good, "rb") as f:
        raw = f.read()
    bad = str(tmp_path / f"bad{suffix}")
    target = _model()
    blank = target.get_weights()
    counts, first, different = collections.Counter(), {}, []
    for off, data in _flips(raw):
        with open(bad, "wb") as f:
            f.write(data)
        target.set_weights(blank)
        try:
            target.load_weights(bad)
        except error as e:
            assert repr(bad) in str(e), (off, str(e))
            outcome = "refused"
        except Exception as e:  # the point: no other error may come out
            outcome = f"bare {type(e).__name__}: {e}"
        else:
            same = all(
                np.array_equal(a, np.asarray(b))
                for a, b in zip(ref, target.get_weights(), strict=True)
            )
            outcome = "same" if same else "different"
            if not same:
                different.append(off)
        counts[outcome] += 1
        first.setdefault(outcome, off)
    return counts, first, different, good


def test_npz_flips_are_refused_naming_the_file_or_restore_the_same(tmp_path):
    counts, first, _, _ = _outcomes(tmp_path, ".npz", WeightsFileError)
    print("npz", dict(counts))
    assert set(counts) <= {"refused", "same"}, (counts, first)
    assert counts["refused"] > OFFSETS // 2


def test_weights_h5_flips_are_refused_naming_the_file_never_a_bare_error(tmp_path):
    h5py = pytest.importorskip("h5py")
    counts, first, different, good = _outcomes(tmp_path, ".weights.h5", KerasFileError)
    print("weights.h5", dict(counts))
    assert not [k for k in counts if k.startswith("bare")], (counts, first)
    # Where the arrays' raw bytes lie: the only place a flip may change a weight silently.
    spans = []
    with h5py.File(good, "r") as f:

        def visit(_, node):
            if isinstance(node, h5py.Dataset) and node.id.get_offset() is not None:
                spans.append((node.id.get_offset(), node.id.get_storage_size()))

        f.visititems(visit)
    assert len(spans) == 8, spans  # 2 + 4 + 2 arrays
    inside = [o for o in different if any(a <= o < a + n for a, n in spans)]
    print(f"weights.h5: {len(different)} different, {len(inside)} of them in array bytes")
    # The rest hit HDF5 metadata that has no checksum in this (Keras's) format, such as a
    # data address moved onto other bytes of the file; a damaged datatype (11777: float32
    # turned float64) is refused.
    assert len(different) - len(inside) <= 2, (different, spans)
    assert counts["refused"] > 0


def test_a_flipped_datatype_in_a_weights_h5_is_refused(tmp_path):
    pytest.importorskip("h5py")
    path = str(tmp_path / "w.weights.h5")
    _model().save_weights(path)
    with open(path, "rb") as f:
        raw = bytearray(f.read())
    raw[11777] ^= 1 << (11777 % 8)  # batch_normalization/vars/0's float32 -> 8-byte float
    with open(path, "wb") as f:
        f.write(bytes(raw))
    with pytest.raises(KerasFileError, match="is damaged") as caught:
        _model().load_weights(path)
    assert repr(path) in str(caught.value)


@pytest.mark.parametrize(
    "field, bit",
    [
        (8, 0x01),  # general-purpose flags, bit 0 "encrypted": zipfile raised RuntimeError
        (10, 0x02),  # compression method 0 -> 2: zipfile raised NotImplementedError
        (42, 0x80),  # the member's local header offset, far past the end: OSError EINVAL
    ],
)
def test_named_zip_damage_is_a_weights_file_error(tmp_path, field, bit):
    path = str(tmp_path / "w.npz")
    _model().save_weights(path)
    with open(path, "rb") as f:
        raw = bytearray(f.read())
    last = raw.rindex(b"PK\x01\x02")  # the last member's central directory entry
    raw[last + field + (3 if field == 42 else 0)] ^= bit
    with open(path, "wb") as f:
        f.write(bytes(raw))
    with pytest.raises(WeightsFileError, match="truncated or damaged") as caught:
        _model().load_weights(path)
    assert repr(path) in str(caught.value)
