"""TensorFlow's auto-shard cases (tensorflow/python/data/experimental/kernel_tests/
auto_shard_dataset_test.py), translated case by case.

Each expected value is the one that TF test asserts for ``distribute._AutoShardDataset``
(TF 2.21): 10 TFRecord files ``tf_record.<f>.txt`` of 10 records ``b"Record <r> of file
<f>"`` each, as TF's ``TFRecordTestBase._createFiles`` writes them.
"""

import json

import numpy as np
import pytest
from data_support import elements

from phalanx.data import (
    AutoShardPolicy,
    Dataset,
    Options,
    TFRecordDataset,
    TFRecordWriter,
    auto_shard,
    experimental,
)
from phalanx.errors import AutoShardError, DatasetArgumentError


def _record(f, r):
    return b"Record %d of file %d" % (r, f)


def _files(tmp_path, files=10, records=10):
    names = []
    for f in range(files):
        name = str(tmp_path / f"tf_record.{f}.txt")
        with TFRecordWriter(name) as w:
            for r in range(records):
                w.write(_record(f, r))
        names.append(name)
    return names


@pytest.fixture
def names(tmp_path):
    return _files(tmp_path)


def _chunk(values, n):
    return [values[i : i + n] for i in range(0, len(values), n)]


def _shard(ds, n, i, policy=None):
    if policy is not None:
        options = Options()
        options.experimental_distribute.auto_shard_policy = policy
        ds = ds.with_options(options)
    return auto_shard(ds, n, i)


def _reader_interleave(names, shuffle=False):
    return Dataset.list_files(names, shuffle=shuffle).apply(
        experimental.parallel_interleave(TFRecordDataset, 10)
    )


@pytest.mark.parametrize("shuffle", [False, True])
def test_flat_map_reader_pipeline_keeps_the_batch(names, shuffle):
    # testFlatMapReaderPipeline: 4 batches of 5 from files 3 and 8 (in any order when shuffled)
    ds = Dataset.list_files(names, shuffle=shuffle).flat_map(TFRecordDataset).batch(5)
    mine, used, reason = _shard(ds, 5, 3)
    assert used == AutoShardPolicy.FILE and "10 files over 5 input pipelines" in reason
    got = elements(mine)
    expected = [_record(f, r) for f in (3, 8) for r in range(10)]
    if shuffle:
        assert [len(b) for b in got] == [5] * 4
        assert sorted(v for b in got for v in b) == sorted(expected)
    else:
        assert got == _chunk(expected, 5)


def test_zip_reader_pipeline(names):
    # testZipReaderPipeline: each input of zip is sharded at its files
    ds = Dataset.zip((_reader_interleave(names), _reader_interleave(names)))
    mine, used, _ = _shard(ds, 5, 3)
    assert used == AutoShardPolicy.FILE
    assert elements(mine) == [(_record(f, r), _record(f, r)) for r in range(10) for f in (3, 8)]


@pytest.mark.parametrize("shuffle", [False, True])
def test_concatenate_reader_pipeline(names, shuffle):
    # testConcatenateReaderPipeline: both concatenated pipelines read files 3 and 8
    one = _reader_interleave(names, shuffle).batch(5)
    ds = one.concatenate(_reader_interleave(names, shuffle).batch(5))
    mine, used, _ = _shard(ds, 5, 3)
    assert used == AutoShardPolicy.FILE
    expected = [_record(f, r) for r in range(10) for f in (3, 8)] * 2
    got = elements(mine)
    if shuffle:
        assert [len(b) for b in got] == [5] * 8
        assert sorted(v for b in got for v in b) == sorted(expected)
    else:
        assert got == _chunk(expected, 5)


def test_pipeline_with_map_and_a_range_of_names(names, tmp_path):
    # testPipelineWithMap, testValidPipelineWithRangeDataset: the files found through map/batch
    # and through an interleave whose input is range(10).map(name)
    expected = _chunk([_record(f, r)[2:] for r in range(10) for f in (3, 8)], 5)
    ds = _reader_interleave(names).map(lambda x: np.asarray(x.item()[2:], object)).batch(5)
    assert elements(_shard(ds, 5, 3)[0]) == expected
    ds = (
        Dataset.range(10)
        .map(lambda n: np.bytes_(str(tmp_path / f"tf_record.{int(n)}.txt")))
        .apply(experimental.parallel_interleave(TFRecordDataset, 10))
        .map(lambda x: np.asarray(x.item()[2:], object))
        .batch(5)
    )
    mine, used, _ = _shard(ds, 5, 3)
    assert used == AutoShardPolicy.FILE and elements(mine) == expected


def test_direct_filenames_reader(names):
    # testDirectFilenameTFRecordReaderPipeline
    expected = [_record(f, r) for f in (0, 5) for r in range(10)]
    assert elements(_shard(TFRecordDataset(names), 5, 0)[0]) == expected


def test_data_sharding_and_its_place_before_prefetch(names):
    # testShardByDataBeforePrefetch (DATA and AUTO): [0, 2], the shard before the prefetch
    for policy in (AutoShardPolicy.DATA, AutoShardPolicy.AUTO):
        mine, used, _ = _shard(Dataset.range(4).prefetch(1), 2, 0, policy)
        assert used == AutoShardPolicy.DATA and elements(mine) == [0, 2]
        assert mine._signature().startswith("Options(Prefetch(Shard(")
    # testWorkersGreaterThanNumFilesWithDataSharding: records 0 and 5 of every file
    mine, used, _ = _shard(TFRecordDataset(names), 5, 0, AutoShardPolicy.DATA)
    assert elements(mine) == [_record(f, r) for f in range(10) for r in (0, 5)]
    # testNoReaderPipelines
    assert elements(_shard(Dataset.range(1024), 2, 0)[0]) == list(range(0, 1024, 2))


def test_off_and_file_without_a_reader(names):
    # testAutoshardPolicyOff: every record
    mine, used, _ = _shard(TFRecordDataset(names), 5, 0, AutoShardPolicy.OFF)
    assert used == AutoShardPolicy.OFF and len(elements(mine)) == 100
    # testFileShardingWithoutReaderDatasetOp: TF raises NotFoundError
    with pytest.raises(AutoShardError, match="reached the source Range"):
        _shard(Dataset.range(1024), 10, 0, AutoShardPolicy.FILE)
    # testInvalidWorkerIndex: TF raises InvalidArgumentError
    with pytest.raises(DatasetArgumentError, match=r"input_pipeline_id must be in \[0, 2\)"):
        auto_shard(Dataset.list_files(names).flat_map(TFRecordDataset), 2, 2)


def test_unknown_op_still_shards_at_the_end(names):
    # testUnknownOpInPipelineStillShardsAtTheEnd: unique() stops the walk, so DATA sharding
    ds = Dataset.list_files(names, shuffle=False).flat_map(TFRecordDataset).unique()
    mine, used, reason = _shard(ds, 5, 0)
    assert used == AutoShardPolicy.DATA and "Unique" in reason
    assert elements(mine) == [_record(f, r) for f in range(10) for r in (0, 5)]


def test_assert_cardinality_is_dropped(names):
    # testAssertCardinality: files 0 and 5, in batches of 5
    ds = Dataset.list_files(names, shuffle=False).flat_map(TFRecordDataset).batch(5)
    mine, used, _ = _shard(ds.assert_cardinality(42), 5, 0)
    assert used == AutoShardPolicy.FILE
    assert elements(mine) == _chunk([_record(f, r) for f in (0, 5) for r in range(10)], 5)


def test_hint_replaces_only_the_placeholders():
    # testHintShardingValidPattern, testHintShardingInvalidPattern
    hinted = Dataset.range(100).shard(experimental.SHARD_HINT, 0)
    mine, used, _ = _shard(hinted, 10, 0, AutoShardPolicy.HINT)
    assert used == AutoShardPolicy.HINT and elements(mine) == list(range(0, 100, 10))
    mine, _, _ = _shard(Dataset.range(100).shard(1, 0), 10, 0, AutoShardPolicy.HINT)
    assert elements(mine) == list(range(100))
    with pytest.raises(AutoShardError, match="placeholder"):
        list(hinted)


def test_too_few_elements_or_files(names):
    # testShardOutOfRange: the pipelines that get an element raise (TF: InvalidArgumentError);
    # the others are empty, as TF's require_non_empty shard
    with pytest.raises(AutoShardError, match="only 5 there"):
        list(auto_shard(Dataset.range(5), 10, 0)[0])
    with pytest.raises(AutoShardError, match="only 5 there"):
        list(auto_shard(Dataset.range(5), 10, 0)[0].batch(2))  # the index path
    assert list(auto_shard(Dataset.range(5), 10, 7)[0]) == []
    # testShardOutOfRangeEmptyDataset
    assert list(auto_shard(Dataset.range(0), 10, 0)[0]) == []
    # testWorkersGreaterThanNumFiles: 500 workers, worker 499 gets nothing
    ds = _reader_interleave(names, shuffle=True).batch(5)
    assert elements(auto_shard(ds, 500, 499)[0]) == []
    # phalanx knows the 10 files when the pipeline is built: FILE raises, AUTO shards by DATA
    mine, used, reason = auto_shard(ds, 20, 3)
    assert used == AutoShardPolicy.DATA and "10 files, fewer than the 20" in reason
    assert len(elements(mine)) == 1  # batch 3 of the 20
    with pytest.raises(AutoShardError, match="10 files, fewer than the 20"):
        auto_shard(ds, 20, 3, AutoShardPolicy.FILE)


def test_file_sharding_through_rebatch(tmp_path):
    # testFileShardingWithRebatch: 3 files of 5 records, worker 1 of 3
    names = _files(tmp_path, files=3, records=5)
    ds = Dataset.list_files(names, shuffle=False).flat_map(TFRecordDataset).batch(5)
    mine, used, _ = auto_shard(ds.rebatch([2, 1, 2]), 3, 1)
    assert used == AutoShardPolicy.FILE
    assert elements(mine) == [
        [_record(1, 0), _record(1, 1)],
        [_record(1, 2)],
        [_record(1, 3), _record(1, 4)],
    ]


@pytest.mark.parametrize("policy", [AutoShardPolicy.DATA, AutoShardPolicy.FILE])
def test_replicas_read_disjoint_shares_of_shuffled_files(names, policy):
    # testReplicateAndShardProduceDisjointData (shuffle=True)
    ds = Dataset.list_files(names, shuffle=True).flat_map(TFRecordDataset)
    a = set(elements(_shard(ds, 2, 0, policy)[0]))
    b = set(elements(_shard(ds, 2, 1, policy)[0]))
    assert not a & b and len(a | b) == 100


def test_checkpoint_of_a_sharded_pipeline(names):
    # AutoShardDatasetCheckpointTest.testCore: 20 elements, restored mid-way
    ds = auto_shard(_reader_interleave(names), 5, 3)[0]
    whole = elements(ds)
    assert len(whole) == 20
    it = iter(ds)
    first = [next(it).item() for _ in range(7)]
    state = json.loads(json.dumps(it.get_state()))
    rest = iter(auto_shard(_reader_interleave(names), 5, 3)[0])
    rest.set_state(state)
    assert first + [x.item() for x in rest] == whole


def test_global_batches_divide_the_batch(names):
    # strategy.experimental_distribute_dataset's share: each global batch of 10 is 5 rows
    # from this pipeline's files (FILE), or rows [5, 10) of every global batch (DATA)
    ds = Dataset.list_files(names, shuffle=False).flat_map(TFRecordDataset).batch(10)
    mine, used, reason = auto_shard(ds, 2, 1, global_batches=True)
    assert used == AutoShardPolicy.FILE and "is 5 per pipeline" in reason
    assert elements(mine) == _chunk([_record(f, r) for f in (1, 3, 5, 7, 9) for r in range(10)], 5)
    rows, used, _ = _shard(Dataset.range(20).batch(10), 2, 1, AutoShardPolicy.DATA)
    assert elements(rows) == [[10, 11, 12, 13, 14, 15, 16, 17, 18, 19]]
    rows, used, _ = auto_shard(
        Dataset.range(20).batch(10), 2, 1, AutoShardPolicy.DATA, global_batches=True
    )
    assert elements(rows) == [[5, 6, 7, 8, 9], [15, 16, 17, 18, 19]]
