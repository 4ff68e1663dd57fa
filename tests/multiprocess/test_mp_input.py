"""Distributed input across 2 processes: disjoint shares that cover every example once per epoch."""

import numpy as np
import pytest
from mp_procs import launch, load

from phalanx.data import TFRecordWriter

EXAMPLES, FILES = 48, 4  # as in scripts/datasets.py


def _write_records(folder):
    folder.mkdir()
    per_file = EXAMPLES // FILES
    for f in range(FILES):
        with TFRecordWriter(folder / f"part-{f}.tfrecord") as w:
            for i in range(f * per_file, (f + 1) * per_file):
                w.write(str(i).encode())


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_each_process_reads_a_disjoint_share_covering_every_example_once(tmp_path):
    _write_records(tmp_path / "records")
    _, out, _, _ = launch("datasets.py", tmp_path, tmp_path / "records")
    shares = load(tmp_path)
    keys = ("from_function_epoch0", "from_function_epoch1", "data_policy", "file_policy")
    for key in (*keys, "data_unseeded_shuffle"):
        a, b = shares[0][key], shares[1][key]
        assert not set(a) & set(b), f"{key}: processes overlap on {sorted(set(a) & set(b))}"
        assert sorted(np.concatenate([a, b])) == list(range(EXAMPLES)), key
    # FILE: process 0 reads files 0 and 2, process 1 files 1 and 3.
    assert sorted(shares[0]["file_policy"]) == list(range(12)) + list(range(24, 36))
    # DATA: each process takes its half of the rows of every global batch of 8.
    assert shares[0]["data_policy"][:8].tolist() == [0, 1, 2, 3, 8, 9, 10, 11]
    # OFF (TF's multi_worker_with_keras): batch(8) stays the global batch, 4 rows per process,
    # the same rows on both, so an epoch takes 12 steps of every example instead of 6.
    for p in (0, 1):
        assert shares[p]["off_policy"].tolist() == list(range(EXAMPLES)), p
    for p in (0, 1):  # said once per process, per distributed dataset
        for policy in ("DATA: every input pipeline reads all elements", "FILE: 4 files"):
            # Not anchored on the launcher's "[p] " prefix: a native library's line
            # without a newline (Gloo's) can run into the next one.
            said = f"phalanx: process {p} of 2 reads its share of the input, auto-shard policy {policy}"
            assert out.count(said) == (2 if "DATA" in policy else 1), out
