"""A 2-D layout across 2 processes x 2 devices equals replicated training on 1 x 2.

The ``(2, 2)`` mesh's rows are the processes (the batch is split over them),
its columns each process's devices (the MLP's kernels are split over them);
``fit``, ``evaluate``, ``predict``, ``get_weights`` (gathered) and
``save_weights`` give what one process with two replicas gives.
"""

import jax
import pytest
from mp_procs import assert_all_close, assert_identical, launch, load

import phalanx


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_layout_fit_two_processes_equals_one_process(tmp_path):
    import fit_mlp

    launch("fit_mlp_layout.py", tmp_path, timeout=120)
    results = load(tmp_path)
    assert_identical(results)
    assert results[0]["kernel_local_shape"].tolist() == [784, 64]
    assert int(results[0]["replicas"]) == 2
    want = fit_mlp.train(phalanx.MirroredStrategy(jax.devices()[:2]), "numpy")
    got = {k.split("/", 1)[1]: v for k, v in results[0].items() if k.startswith("numpy/")}
    assert_all_close(got, want, atol=2e-5, what="(2, 2) layout over 2 processes vs 1 x 2")
    assert (tmp_path / "weights_numpy.npz").exists()
