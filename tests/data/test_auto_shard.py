"""auto_shard with simulated pipeline counts: shares are disjoint and cover every element once.

TensorFlow's own auto-shard cases are in test_auto_shard_tf.py."""

import numpy as np
import pytest
from data_support import elements

from phalanx.data import (
    AutoShardPolicy,
    Dataset,
    FileSourceDataset,
    Options,
    TensorSpec,
    auto_shard,
)
from phalanx.errors import AutoShardError, BatchNotDivisibleError


class Records(FileSourceDataset):
    """A file source whose file 'f<k>' holds records k*100 .. k*100+k (no disk needed)."""

    def _read_file(self, filename):
        k = int(filename.rsplit("f", 1)[1])
        return [np.int64(k * 100 + j) for j in range(k + 1)]

    def _compute_spec(self):
        return TensorSpec((), np.int64)


def _with_policy(ds, policy):
    options = Options()
    options.experimental_distribute.auto_shard_policy = policy
    return ds.with_options(options)


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_file_policy_splits_files(n):
    ds = Records([f"f{k}" for k in range(6)]).map(lambda x: x + 0).batch(2)
    everything = sorted(v for b in elements(ds) for v in b)
    shares = []
    for i in range(n):
        mine, used, reason = auto_shard(ds, n, i, AutoShardPolicy.FILE)
        assert used == (AutoShardPolicy.FILE if n > 1 else AutoShardPolicy.OFF)
        shares.append(sorted(v for b in elements(mine) for v in b))
        if n > 1:
            assert "FILE" in reason and "6 files" in reason
    assert sorted(v for s in shares for v in s) == everything
    assert elements(ds.batch(1)) and ds.element_spec == TensorSpec((None,), np.int64)


def test_auto_prefers_files_under_list_files_and_interleave(tmp_path):
    for k in range(4):
        (tmp_path / f"f{k}").write_text("")
    ds = Dataset.list_files(str(tmp_path / "f*"), seed=1).interleave(
        lambda f: Records([f.decode().rsplit("/", 1)[1]]), cycle_length=2
    )
    shares = []
    for i in range(2):
        mine, used, reason = auto_shard(ds, 2, i)
        assert used == AutoShardPolicy.FILE, reason
        shares.append(elements(mine))
    assert not set(shares[0]) & set(shares[1])
    assert sorted(shares[0] + shares[1]) == sorted(elements(ds))


def test_auto_falls_back_to_data_with_a_reason():
    few = Records(["f1", "f2"])
    mine, used, reason = auto_shard(few, 3, 0)
    assert used == AutoShardPolicy.DATA and "2 files, fewer than the 3 input pipelines" in reason
    mine, used, reason = auto_shard(Dataset.range(10), 3, 1)
    assert used == AutoShardPolicy.DATA and "reads no files" in reason
    assert elements(mine) == [1, 4, 7]
    with pytest.raises(AutoShardError, match="fewer than the 3 input pipelines"):
        auto_shard(few, 3, 0, AutoShardPolicy.FILE)


@pytest.mark.parametrize("drop", [False, True])
def test_data_policy_splits_each_global_batch(drop):
    x = np.arange(50)
    ds = (
        Dataset.from_tensor_slices(x)
        .shuffle(50, seed=3)
        .batch(8, drop_remainder=drop)
        .map(lambda b: b * 1)
        .prefetch(2)
    )
    ds = _with_policy(ds, AutoShardPolicy.DATA)
    global_batches = elements(ds)
    shares = []
    for i in range(4):
        mine, used, reason = auto_shard(ds, 4, i, global_batches=True)
        assert used == AutoShardPolicy.DATA and "global batch of 8" in reason
        if drop:
            assert mine.element_spec == TensorSpec((2,), np.int64)
        shares.append(elements(mine))
    assert all(len(s) == len(global_batches) for s in shares)  # same number of steps everywhere
    for step, batch in enumerate(global_batches):
        assert [v for s in shares for v in s[step]] == batch


def test_data_policy_batch_must_divide():
    with pytest.raises(
        BatchNotDivisibleError, match="batch size 10 does not divide by the 4 input pipelines"
    ):
        auto_shard(Dataset.range(40).batch(10), 4, 0, AutoShardPolicy.DATA, global_batches=True)


@pytest.mark.parametrize("drop", [False, True])
def test_off_policy_keeps_the_global_batch(drop):
    """TF 2.21 under OFF on 2 workers: ``batch(8)`` is the global batch, 4 per worker, every
    worker reading every element (the same rows in each step), so 2 x the steps."""
    ds = _with_policy(Dataset.range(20).batch(8, drop_remainder=drop), AutoShardPolicy.OFF)
    want = [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15]]
    want += [] if drop else [[16, 17, 18, 19]]
    for i in range(2):
        mine, used, reason = auto_shard(ds, 2, i, global_batches=True)
        assert used == AutoShardPolicy.OFF and "in batches of 4" in reason, reason
        assert [list(b) for b in elements(mine)] == want
        assert mine.element_spec == TensorSpec((4 if drop else None,), np.int64)
    with pytest.raises(
        BatchNotDivisibleError, match="auto_shard OFF: .* 8 does not divide by the 3"
    ):
        auto_shard(ds, 3, 0, global_batches=True)
    assert auto_shard(ds, 2, 0)[0] is ds  # tf.data's _AutoShardDataset: OFF changes nothing


def test_off_policy_and_dataset_options():
    ds = _with_policy(Records(["f1", "f2", "f3"]), AutoShardPolicy.OFF)
    mine, used, _ = auto_shard(ds, 3, 2)
    assert mine is ds and used == AutoShardPolicy.OFF
