"""Bad inputs to ``phalanx.distribute``: each raises a phalanx error naming what is wrong."""

import jax
import numpy as np
import pytest
from catalog import Case, run

import phalanx
from phalanx.distribute import InputOptions, InputReplicationMode
from phalanx.errors import (
    BatchNotDivisibleError,
    DistributeArgumentError,
    DistributedInputError,
    DistributedValueError,
    NotCheckpointableError,
    RunArgumentError,
    RunCompilationError,
)


@pytest.fixture(scope="module")
def two():
    return phalanx.MirroredStrategy(devices=jax.devices()[:2])


def _shard(rows_x, rows_y):
    return lambda s: s.shard_batch((np.zeros((rows_x, 2)), np.zeros(rows_y)))


def _run(fn, *args):
    return lambda s: s.run(fn, args=args)


class Text:  # an object that is not an array
    pass


CASES = [
    # shard_batch
    Case(
        "shard_batch rows differ",
        _shard(4, 6),
        DistributedValueError,
        r"shard_batch's batch .*same number of rows; got \[0\] of shape \(4, 2\) \(4 rows\), "
        r"\[1\] of shape \(6,\) \(6 rows\)",
    ),
    Case(
        "shard_batch dict rows differ",
        lambda s: s.shard_batch({"x": np.zeros((4, 3)), "y": np.zeros(2)}),
        DistributedValueError,
        r"\['x'\] of shape \(4, 3\) \(4 rows\), \['y'\] of shape \(2,\) \(2 rows\)",
    ),
    Case(
        "shard_batch rows differ inside jit",
        lambda s: jax.jit(lambda x, y: s.shard_batch((x, y)))(np.zeros(4), np.zeros(2)),
        DistributedValueError,
        r"\[0\] of shape \(4,\) \(4 rows\), \[1\] of shape \(2,\) \(2 rows\)",
    ),
    Case(
        "shard_batch scalar",
        lambda s: s.shard_batch(np.float32(1.0)),
        BatchNotDivisibleError,
        r"got a scalar",
    ),
    Case(
        "shard_batch odd rows",
        lambda s: s.shard_batch(np.zeros(3)),
        BatchNotDivisibleError,
        r"global batch of 3 does not split evenly over the 2 replicas",
    ),
    # run: what fn returns, what it is given
    Case(
        "run returns a str",
        _run(lambda: "done"),
        RunCompilationError,
        r"fn must return arrays, Python numbers or None .*its output is str: 'done'",
    ),
    Case(
        "run returns an object",
        _run(lambda: Text()),
        RunCompilationError,
        r"its output is Text: <.*Text object",
    ),
    Case(
        "run returns a str inside a tuple",
        lambda s: s.run(lambda x: (x * 2, "label"), args=(s.shard_batch(np.zeros(4)),)),
        RunCompilationError,
        r"its output\[1\] is str: 'label'",
    ),
    Case(
        "run returns a str array",
        _run(lambda: {"names": np.array(["a", "b"])}),
        RunCompilationError,
        r"its output\['names'\] is an array of dtype <U1",
    ),
    Case(
        "run given an object",
        _run(lambda t: 1.0, Text()),
        RunArgumentError,
        r"strategy.run arguments must be arrays .*got Text",
    ),
    Case(
        "run of a non-callable",
        lambda s: s.run(3),
        RunArgumentError,
        r"expects a callable fn, got int",
    ),
    Case(
        "run with args not a tuple",
        lambda s: s.run(lambda x: x, args=np.ones(2)),
        RunArgumentError,
        r"takes args as a tuple, got ndarray; write args=\(x,\)",
    ),
    Case(
        "run with kwargs not a dict",
        lambda s: s.run(lambda x: x, args=(), kwargs=[1]),
        RunArgumentError,
        r"takes kwargs as a dict, got list",
    ),
    # distributed input
    Case(
        "InputOptions PER_REPLICA",
        lambda s: InputOptions(experimental_replication_mode=InputReplicationMode.PER_REPLICA),
        DistributedValueError,
        r"PER_REPLICA\) is not supported.*Use PER_WORKER",
    ),
    Case(
        "InputOptions place on device",
        lambda s: InputOptions(experimental_place_dataset_on_device=True),
        DistributedValueError,
        r"experimental_place_dataset_on_device=True is not supported",
    ),
    Case(
        "InputOptions buffer 0",
        lambda s: InputOptions(experimental_per_replica_buffer_size=0),
        DistributedValueError,
        r"experimental_per_replica_buffer_size must be >= 1, got 0",
    ),
    Case(
        "InputOptions partial_batch",
        lambda s: InputOptions(partial_batch="keep"),
        DistributedValueError,
        r"partial_batch must be one of \('error', 'drop', 'pad'\), got 'keep'",
    ),
    Case(
        "stacked 0 steps",
        lambda s: s.experimental_distribute_dataset(phalanx.data.Dataset.range(4).batch(2)).stacked(
            0
        ),
        DistributedValueError,
        r"stacked\(num_steps\) needs a positive int, got 0",
    ),
    Case(
        "datasets_from_function of a dataset",
        lambda s: s.distribute_datasets_from_function(phalanx.data.Dataset.range(4)),
        DistributedInputError,
        r"expects a function of an InputContext, got RangeDataset",
    ),
    Case(
        "dataset_fn returns a number",
        lambda s: s.distribute_datasets_from_function(lambda ctx: 5),
        DistributedInputError,
        r"dataset_fn must return a Dataset .*got int",
    ),
    Case(
        "state of a plain iterable",
        lambda s: iter(s.experimental_distribute_dataset([np.zeros(2)])).get_state(),
        NotCheckpointableError,
        r"not checkpointable: it has no get_state",
    ),
    # PerReplica and what uses it
    Case(
        "PerReplica of a list",
        lambda s: phalanx.PerReplica([np.zeros(2), np.ones(2)]),
        DistributedValueError,
        r"not a list of per-replica values .*got a list of 2 item\(s\).*np.stack",
    ),
    Case(
        "reduce of a PerReplica for other replicas",
        lambda s: s.reduce("SUM", phalanx.PerReplica(np.ones((3, 2))), axis=None),
        DistributedValueError,
        r"2 replicas needs a leading replica axis of length 2; got shape \(3, 2\)",
    ),
    Case(
        "run of a PerReplica scalar",
        _run(lambda v: v, phalanx.PerReplica(np.float32(1.0))),
        DistributedValueError,
        r"leading replica axis of length 2; got a scalar",
    ),
    Case(
        "distributed dataset rows differ",
        lambda s: next(iter(s.experimental_distribute_dataset([(np.zeros((4, 2)), np.zeros(2))]))),
        DistributedValueError,
        r"distributed dataset's batch .*\[0\] of shape \(4, 2\) \(4 rows\), \[1\] of shape "
        r"\(2,\) \(2 rows\)",
    ),
    Case(
        "distributed dataset of scalars",
        lambda s: next(iter(s.experimental_distribute_dataset([np.float32(1.0)]))),
        DistributedValueError,
        r"must be batches .*got an element with a scalar: the element: shape \(\)",
    ),
]


def _per_replica(s):
    return s.run(lambda: jax.numpy.ones(2))


CASES += [
    # second sweep (h11): each raised a builtin error, or was accepted
    Case(
        "reduce with a str axis",
        lambda s: s.reduce("SUM", _per_replica(s), axis="x"),
        DistributeArgumentError,
        r"strategy.reduce: axis must be an int .*got 'x' \(str\)",
    ),
    Case(
        "gather with a str axis",
        lambda s: s.gather(_per_replica(s), axis="0"),
        DistributeArgumentError,
        r"strategy.gather: axis must be an int .*got '0' \(str\)",
    ),
    Case(
        "gather along an axis the value lacks",
        lambda s: s.gather(_per_replica(s), axis=7),
        DistributedValueError,
        r"axis=7 does not exist in a per-replica value of shape \(2,\)",
    ),
    Case(
        "distribute an int as a dataset",
        lambda s: s.experimental_distribute_dataset(3),
        DistributedInputError,
        r"expects a phalanx.data.Dataset \(or an iterable\) of global batches, got 3 \(int\)",
    ),
    Case(
        "distribute a str as a dataset",
        lambda s: s.distribute_dataset("data/train"),
        DistributedInputError,
        r"got 'data/train' \(str\)",
    ),
    Case(
        "run with an int for args",
        lambda s: s.run(lambda x: x, args=5),
        RunArgumentError,
        r"takes args as a tuple, got int; write args=\(x,\)",
    ),
    Case(
        "MirroredStrategy with a device count",
        lambda s: phalanx.MirroredStrategy(devices=5),
        DistributeArgumentError,
        r"devices must be a list of devices .*got 5 \(int\).*devices=jax.local_devices\(\)\[:5\]",
    ),
    Case(
        "MirroredStrategy with a float for devices",
        lambda s: phalanx.MirroredStrategy(devices=2.0),
        DistributeArgumentError,
        r"devices must be a list of devices .*got 2.0 \(float\)",
    ),
]


@pytest.mark.parametrize("case", [c.param() for c in CASES])
def test_bad_distribute_input(case, two):
    run(case, two)


def test_a_stacked_per_replica_and_a_tuple_still_work(two):
    """What PerReplica takes: leaves stacked on the replica axis, in any pytree but a list."""
    v = phalanx.PerReplica((np.arange(2.0), {"w": np.ones((2, 3))}))
    total = two.reduce("SUM", v, axis=None)
    assert float(total[0]) == 1.0 and total[1]["w"].shape == (3,)
    # shard_batch of a list inside jit keeps the list, each array a PerReplica (as outside jit)
    out = jax.jit(lambda x: two.shard_batch([x, x]))(np.zeros(4))
    assert isinstance(out, list) and len(out) == 2
    assert all(isinstance(v, phalanx.PerReplica) and len(v.values) == 2 for v in out)


def test_what_tensorflow_accepts_stays_accepted(two):
    """args as a list (TensorFlow takes a list or tuple), one device name, a device list."""
    out = two.run(lambda a: a * 2, args=[np.ones(2, np.float32)])
    assert float(two.reduce("SUM", out, axis=None)[0]) == 4.0
    assert phalanx.MirroredStrategy(devices="cpu:1").num_replicas_in_sync == 1
    assert phalanx.MirroredStrategy(devices=[0, 1]).num_replicas_in_sync == 2
    assert np.asarray(two.reduce("SUM", _per_replica(two), axis=np.int64(0))) == 4.0
