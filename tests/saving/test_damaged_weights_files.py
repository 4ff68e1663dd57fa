"""Bit flips over a weights file: an identical restore or the project's error naming the file.

Before (issue 29 item 5), a flipped ``.npz`` gave a bare ``NotImplementedError: That
compression method is not supported``, ``RuntimeError: ... is encrypted`` or
``OSError [Errno 22]`` without the file, and a flipped ``.weights.h5`` a bare h5py
``KeyError``/``RuntimeError``/``ValueError``. Each test flips one bit at 120 offsets
spread over the whole file (deterministic) and loads it into a fresh model.

A ``.npz`` member carries zip's CRC-32, so no flip may restore different weights.
phalanx writes each ``.weights.h5`` array with HDF5's Fletcher-32 checksum (Keras reads
it as any dataset); the file's HDF5 metadata has no checksum, so a few flips there can
still restore different weights: at most 2 of the 120 (docs/reliability.md).
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
    pytest.importorskip("h5py")
    counts, first, different, _ = _outcomes(tmp_path, ".weights.h5", KerasFileError)
    print("weights.h5", dict(counts), "different at", different)
    assert not [k for k in counts if k.startswith("bare")], (counts, first)
    # The arrays carry Fletcher-32; HDF5's version-0 metadata (addresses, heaps) carries no
    # checksum, and a flip there can move a read onto other bytes (10 of 4824 flips at every
    # 7th byte, bench/weights_bit_flips.py).
    assert len(different) <= 2, different
    assert counts["refused"] > 0


def test_a_flip_in_an_arrays_bytes_is_refused_by_its_checksum(tmp_path):
    pytest.importorskip("h5py")
    model = _model()
    kernel = np.arange(24, dtype=np.float32).reshape(6, 4) + 0.5
    model.layers[0].set_weights([kernel, np.zeros(4, np.float32)])
    path = str(tmp_path / "w.weights.h5")
    model.save_weights(path)
    with open(path, "rb") as f:
        raw = bytearray(f.read())
    at = raw.find(kernel.tobytes())
    assert at > 0
    raw[at + 41] ^= 0x10  # one bit of kernel[2, 2]: silently 10.5 -> another number before
    with open(path, "wb") as f:
        f.write(bytes(raw))
    with pytest.raises(KerasFileError, match="layers/dense/vars/0") as caught:
        _model().load_weights(path)
    assert repr(path) in str(caught.value)


def test_a_flipped_datatype_in_a_weights_h5_is_refused(tmp_path):
    pytest.importorskip("h5py")
    path = str(tmp_path / "w.weights.h5")
    _model().save_weights(path)
    with open(path, "rb") as f:
        raw = bytearray(f.read())
    # The first float32 datatype message (class 1 version 1, IEEE little-endian, size 4):
    # its size turned 12 reads each float32 as a 12-byte float.
    at = raw.index(b"\x11\x20\x1f\x00\x04\x00\x00\x00")
    raw[at + 4] ^= 0x08
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
