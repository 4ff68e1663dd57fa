"""2 processes x 2 devices compute what 1 process x 4 devices computes: run/reduce/gather, a loop."""

import jax
import pytest
from mp_procs import assert_all_close, assert_identical, launch, load

import phalanx


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_run_reduce_gather_and_custom_loop_match_one_process(tmp_path):
    import strategy_ops

    launch("strategy_ops.py", tmp_path)
    results = load(tmp_path)
    want = strategy_ops.compute(phalanx.MirroredStrategy(jax.devices()[:4]))
    assert_identical(results)
    assert_all_close(results[0], want, atol=1e-5, what="2 x 2 vs 1 x 4")
    assert want["losses"][-1] < want["losses"][0]  # the loop trained
