"""``Model.fit`` of the seeds' model across 2 processes x 2 devices equals 1 process x 4 devices.

From numpy arrays (the same full arrays on every process, each places its
share) and from a ``phalanx.data.Dataset`` (auto-sharded: each process reads
its share of every batch), and from a Dataset under ``AutoShardPolicy.OFF``, whose
``batch(64)`` is TF's global batch (32 rows a process, the same on both: equal to one
process fitting ``batch(32)``; phalanx had a global batch of 128). Both processes end with identical weights, and
``save_weights`` is written by process 0.
"""

import jax
import numpy as np
import pytest
from mp_procs import assert_all_close, assert_identical, launch, load

import phalanx


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_fit_two_processes_equals_one_process_four_devices(tmp_path):
    import fit_mlp

    launch("fit_mlp.py", tmp_path, timeout=90)
    results = load(tmp_path)
    assert_identical(results)
    strategy = phalanx.MirroredStrategy(jax.devices()[:4])
    for kind in ("numpy", "dataset", "dataset_off"):
        want = fit_mlp.train(strategy, kind)
        got = {k.split("/", 1)[1]: v for k, v in results[0].items() if k.startswith(f"{kind}/")}
        assert_all_close(got, want, atol=2e-5, what=f"{kind}: 2 x 2 vs 1 x 4")
        assert want["history_loss"][-1] < want["history_loss"][0]
        assert got["predictions"].shape == (100, fit_mlp.CLASSES)
        np.testing.assert_allclose(got["ds_predictions"], got["predictions"], atol=1e-6)
        with np.load(tmp_path / f"weights_{kind}.npz") as saved:
            assert len(saved.files) == len(want) - 5  # the weights, no history/eval/predictions
