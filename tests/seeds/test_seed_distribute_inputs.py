"""The seeds' strategy calls with a reader's mistakes: phalanx errors (that still are the
builtin TensorFlow-era code catches: ``RuntimeError``, ``ValueError``, ``TypeError``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

import phalanx as px
from phalanx.errors import DistributeArgumentError, TPUNotFoundError


def test_tpu_strategy_without_a_tpu_names_the_simulated_path():
    with pytest.raises(TPUNotFoundError, match=r"found no TPU.*experimental_simulate_on_cpu=True"):
        px.TPUStrategy()
    with pytest.raises(RuntimeError):  # what code written before phalanx's errors catches
        px.TPUStrategy()


@pytest.mark.parametrize(
    "call, match",
    [
        (
            lambda: px.TPUStrategy(experimental_simulate_on_cpu=True, compute_dtype="float16"),
            r"compute_dtype must be 'bfloat16' or 'float32', got 'float16'",
        ),
        (
            lambda: px.compute_average_loss(jnp.ones(4), global_batch_size="64"),
            r"global_batch_size must be a positive int .*got str '64'",
        ),
        (
            lambda: px.compute_average_loss(jnp.ones(4), global_batch_size=0),
            r"global_batch_size must be positive .*got 0",
        ),
        (
            lambda: px.compute_average_loss(jnp.float32(1.0), global_batch_size=4),
            r"per-example losses .*got a scalar",
        ),
        (lambda: px.MirroredStrategy(devices=[]), r"at least one device; got an empty list"),
        (
            lambda: px.MirroredStrategy(devices=[jax.devices()[0], jax.devices()[0]]),
            r"Each device may appear once",
        ),
        (lambda: px.MirroredStrategy(devices=[1.5]), r"A device is a jax.Device.*float 1.5"),
        (
            lambda: px.distribute.CommunicationOptions(timeout_seconds=-1),
            r"timeout_seconds must be a positive number or None, got -1",
        ),
    ],
)
def test_bad_arguments_raise_distribute_argument_error(call, match):
    with pytest.raises(DistributeArgumentError, match=match):
        call()
