"""Dataset.rejection_resample (issue 28 item 7).

TF 2.21 yields ``(class, element)`` pairs whose classes follow ``target_dist``
(rejection_resample_test.py checks the class distribution of the output against the
target); its estimate of the initial distribution starts every class count at 10 and
updates them per batch of 32. The elements kept are random, so the checks are on the
distribution (with a seed, the same elements each run), not on TF's exact elements.
"""

import json

import numpy as np
import pytest
from data_support import elements

from phalanx.data import Dataset, experimental
from phalanx.errors import DatasetArgumentError

RNG = np.random.default_rng(0)
LABELS = (RNG.random(4000) < 0.1).astype(np.int64)  # 10% of class 1


@pytest.mark.parametrize("initial", [[0.9, 0.1], None])
def test_classes_follow_the_target(initial):
    ds = Dataset.from_tensor_slices((np.arange(4000), LABELS))
    out = ds.rejection_resample(lambda i, y: y, [0.5, 0.5], initial_dist=initial, seed=3)
    got = elements(out)
    classes = np.array([c for c, _ in got])
    assert 700 < len(got) < 1000 and abs(classes.mean() - 0.5) < 0.05
    assert all(c == y and LABELS[i] == y for c, (i, y) in got)  # (class, element) pairs
    assert elements(out) == got  # seeded: the same elements each time


def test_experimental_spelling_and_checkpoint():
    ds = Dataset.from_tensor_slices(LABELS).apply(
        experimental.rejection_resample(lambda y: y, [0.2, 0.8], seed=1)
    )
    it = iter(ds)
    _ = [next(it) for _ in range(50)]
    rest = iter(ds)
    rest.set_state(json.loads(json.dumps(it.get_state())))
    assert elements(rest, 20) == elements(it, 20)
    kept = np.array([c for c, _ in elements(ds)])
    assert abs(kept.mean() - 0.8) < 0.05


def test_bad_arguments():
    ds = Dataset.from_tensor_slices(LABELS)
    with pytest.raises(DatasetArgumentError, match="target_dist must be non-negative"):
        ds.rejection_resample(lambda y: y, [-1.0, 2.0])
    with pytest.raises(DatasetArgumentError, match="initial_dist has 3 classes"):
        ds.rejection_resample(lambda y: y, [0.5, 0.5], initial_dist=[0.2, 0.3, 0.5])
    with pytest.raises(DatasetArgumentError, match=r"class in \[0, 2\)"):
        elements(ds.rejection_resample(lambda y: y + 5, [0.5, 0.5], initial_dist=[0.5, 0.5]))
