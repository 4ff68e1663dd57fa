"""Child script: which examples each process feeds; ``datasets.py OUT_DIR RECORDS_DIR``.

Writes ``OUT_DIR/<process>.npz`` with, per input kind, the example ids that
this process's devices received (the addressable rows of every global batch),
one array per epoch: ``distribute_datasets_from_function`` (2 epochs),
``experimental_distribute_dataset`` with the DATA and OFF policies, and with the FILE
policy over the TFRecord files the test wrote in RECORDS_DIR.
"""

import logging
import os
import sys
from pathlib import Path

import jax
import numpy as np

import phalanx
from phalanx.data import AutoShardPolicy, Dataset, Options, TFRecordDataset

EXAMPLES, GLOBAL_BATCH = 48, 8


def local_ids(batch: jax.Array) -> np.ndarray:
    """The rows of a global batch that this process's devices hold."""
    shards = sorted(batch.addressable_shards, key=lambda s: s.index[0].start)
    return np.concatenate([np.asarray(s.data) for s in shards])


def fed(dist_dataset) -> np.ndarray:
    batches = [local_ids(b) for b in dist_dataset]
    assert all(b.shape == (GLOBAL_BATCH // jax.process_count(),) for b in batches), batches
    return np.concatenate(batches)


def with_policy(ds: Dataset, policy: AutoShardPolicy) -> Dataset:
    options = Options()
    options.experimental_distribute.auto_shard_policy = policy
    return ds.with_options(options)


def main(out_dir: str, records_dir: str) -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    strategy = phalanx.MultiWorkerMirroredStrategy()

    def dataset_fn(ctx):
        per_replica = ctx.get_per_replica_batch_size(GLOBAL_BATCH)  # as in TensorFlow
        ds = Dataset.range(EXAMPLES).shard(ctx.num_input_pipelines, ctx.input_pipeline_id)
        return ds.shuffle(EXAMPLES, seed=ctx.input_pipeline_id).batch(per_replica)

    from_function = strategy.distribute_datasets_from_function(dataset_fn)
    data = with_policy(Dataset.range(EXAMPLES).batch(GLOBAL_BATCH), AutoShardPolicy.DATA)
    # An unseeded shuffle: the processes must still agree on the one global order.
    unseeded = with_policy(
        Dataset.range(EXAMPLES).shuffle(EXAMPLES).batch(GLOBAL_BATCH), AutoShardPolicy.DATA
    )
    off = with_policy(Dataset.range(EXAMPLES).batch(GLOBAL_BATCH), AutoShardPolicy.OFF)
    files = sorted(str(p) for p in Path(records_dir).glob("*.tfrecord"))
    records = (
        TFRecordDataset(files)
        .map(lambda r: np.int64(int(np.asarray(r).item())))
        .batch(GLOBAL_BATCH)
    )
    out = {
        "from_function_epoch0": fed(from_function),
        "from_function_epoch1": fed(from_function),
        "data_policy": fed(strategy.experimental_distribute_dataset(data)),
        "data_unseeded_shuffle": fed(strategy.experimental_distribute_dataset(unseeded)),
        "off_policy": fed(strategy.experimental_distribute_dataset(off)),
        "file_policy": fed(
            strategy.experimental_distribute_dataset(with_policy(records, AutoShardPolicy.FILE))
        ),
    }
    np.savez(os.path.join(out_dir, f"{jax.process_index()}.npz"), **out)


if __name__ == "__main__":
    main(*sys.argv[1:3])
