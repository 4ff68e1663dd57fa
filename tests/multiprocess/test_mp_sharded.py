"""Sharded parameters across 2 processes x 2 devices equal replicated training on 1 x 4.

Each process stores a quarter of every large parameter and Adam moment; ``fit``,
``evaluate``, ``predict``, ``get_weights`` (gathered from both processes) and
``save_weights`` give what replicated training on one process gives.
"""

import jax
import numpy as np
import pytest
from mp_procs import assert_all_close, assert_identical, launch, load

import phalanx


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_sharded_fit_two_processes_equals_replicated_one_process(tmp_path):
    import fit_mlp

    launch("fit_mlp_sharded.py", tmp_path, timeout=120)
    results = load(tmp_path)
    assert_identical(results)
    assert results[0]["kernel_local_shape"].tolist() == [784 // 4, 128]
    want = fit_mlp.train(phalanx.MirroredStrategy(jax.devices()[:4]), "numpy")
    got = {k.split("/", 1)[1]: v for k, v in results[0].items() if k.startswith("numpy/")}
    assert_all_close(got, want, atol=2e-5, what="sharded 2 x 2 vs replicated 1 x 4")
    with np.load(tmp_path / "weights_numpy.npz") as saved:
        assert len(saved.files) == len(want) - 5
