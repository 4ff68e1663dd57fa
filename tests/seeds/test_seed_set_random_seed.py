"""``keras.utils.set_random_seed(0)`` ported as ``phalanx.utils.set_random_seed(0)``: the
script that follows, run again, gives the same weights, dropout masks, dataset shuffles and
history; another seed gives others; Python's ``random`` and numpy's global generator are
seeded as Keras seeds them. A seed that is not an int in [0, 2**32) is a phalanx error."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import numpy as np
import pytest

import phalanx
from phalanx.data import Dataset
from phalanx.errors import RandomSeedError


def _script(seed: int):
    """A reader's script: seed, data with an unseeded shuffle, a model with dropout, fit."""
    phalanx.utils.set_random_seed(seed)
    x = np.random.rand(96, 6).astype(np.float32)  # numpy's global generator, seeded
    y = (x.sum(axis=1, keepdims=True) > 3).astype(np.float32)
    ds = Dataset.from_tensor_slices((x, y)).shuffle(96).batch(16)
    model = phalanx.Sequential(
        [
            phalanx.layers.Input(shape=(6,)),
            phalanx.layers.Dense(16, activation="relu"),
            phalanx.layers.Dropout(0.5),
            phalanx.layers.Dense(1, activation="sigmoid"),
        ]
    )
    initial = [np.asarray(w) for w in model.get_weights()]
    model.compile(optimizer="adam", loss="binary_crossentropy")
    history = model.fit(ds, epochs=2, verbose=0)
    order = [b[0][:, 0].tolist() for b in ds.take(2)]
    return initial, [np.asarray(w) for w in model.get_weights()], history.history, order


def test_same_seed_same_run():
    first, second = _script(0), _script(0)
    for a, b in zip(first[0] + first[1], second[0] + second[1], strict=True):
        np.testing.assert_array_equal(a, b)
    assert first[2] == second[2]
    assert first[3] == second[3]


def test_another_seed_another_run():
    zero, one = _script(0), _script(1)
    assert not np.array_equal(zero[0][0], one[0][0])  # initial kernels
    assert zero[2] != one[2]
    assert zero[3] != one[3]


def test_models_built_one_after_the_other_differ_as_in_keras():
    phalanx.utils.set_random_seed(7)
    a = phalanx.Sequential([phalanx.layers.Input(shape=(4,)), phalanx.layers.Dense(3)])
    b = phalanx.Sequential([phalanx.layers.Input(shape=(4,)), phalanx.layers.Dense(3)])
    assert not np.array_equal(a.get_weights()[0], b.get_weights()[0])
    phalanx.utils.set_random_seed(7)
    again = phalanx.Sequential([phalanx.layers.Input(shape=(4,)), phalanx.layers.Dense(3)])
    np.testing.assert_array_equal(a.get_weights()[0], again.get_weights()[0])


def test_explicit_seeds_are_kept():
    """A seeded shuffle gives the same order whatever the global seed."""
    orders = []
    for seed in (0, 1):
        phalanx.utils.set_random_seed(seed)
        orders.append([int(v) for v in Dataset.range(20).shuffle(20, seed=5)])
    assert orders[0] == orders[1]


def test_python_and_numpy_are_seeded_as_keras_seeds_them():
    phalanx.utils.set_random_seed(123)
    assert random.random() == random.Random(123).random()
    np.testing.assert_array_equal(np.random.rand(3), np.random.RandomState(123).rand(3))


@pytest.mark.parametrize(
    ("seed", "match"),
    [
        (1.5, r"expects an int, got float 1.5"),
        ("0", r"expects an int, got str '0'"),
        (True, r"expects an int, got bool True"),
        (-1, r"in \[0, 2\*\*32\).*got -1"),
        (2**32, r"in \[0, 2\*\*32\).*got 4294967296"),
    ],
)
def test_bad_seed_is_a_phalanx_error(seed, match):
    with pytest.raises(RandomSeedError, match=match):
        phalanx.utils.set_random_seed(seed)
    model = phalanx.Sequential([phalanx.layers.Input(shape=(4,)), phalanx.layers.Dense(3)])
    seed_zero = phalanx.Sequential([phalanx.layers.Input(shape=(4,)), phalanx.layers.Dense(3)])
    # nothing was set: models still build from seed 0, as in a fresh process
    np.testing.assert_array_equal(model.get_weights()[0], seed_zero.get_weights()[0])


_IN_A_PROCESS = """
import json
import numpy as np
import phalanx
from phalanx.data import Dataset

phalanx.utils.set_random_seed(11)
shuffled = Dataset.range(30).shuffle(30)
model = phalanx.Sequential([phalanx.layers.Input(shape=(4,)), phalanx.layers.Dense(3)])
print(json.dumps([[int(v) for v in shuffled], [int(v) for v in shuffled]]))
print(np.asarray(model.get_weights()[0]).tobytes().hex())
"""


@pytest.mark.slow
def test_two_processes_with_one_seed_draw_the_same_shuffles_and_weights():
    """What the docs promise processes of one job: nothing depends on the process (its
    hash seed, its pid, fresh randomness), only on the seed and the order of the draws."""
    outs = []
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        run = subprocess.run(
            [sys.executable, "-c", _IN_A_PROCESS],
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
            check=True,
        )
        outs.append(run.stdout)
    assert outs[0] == outs[1]
    first_epoch, second_epoch = json.loads(outs[0].splitlines()[0])
    assert sorted(first_epoch) == list(range(30)) and first_epoch != second_epoch
