"""A functional and a subclassed model (dropout included) trained by fit on 2 processes x 2
devices equal 1 process x 4 devices, and both processes end with identical weights."""

import jax
import pytest
from mp_procs import assert_all_close, assert_identical, launch, load

import phalanx


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_keras_models_two_processes_equal_one_process_four_devices(tmp_path):
    import keras_models

    launch("keras_models.py", tmp_path, timeout=120)
    results = load(tmp_path)
    assert_identical(results)
    want = keras_models.train(phalanx.MirroredStrategy(jax.devices()[:4]))
    assert_all_close(results[0], want, atol=2e-5, what="2 x 2 vs 1 x 4")
