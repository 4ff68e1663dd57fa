"""The seeds' ``tf.distribute.cluster_resolver`` and ``tf.distribute.experimental``
spellings, ported with the one rename ``tf.distribute`` -> ``phalanx.distribute``.

Seeds 000, 001, 002 and 004 write ``tf.distribute.cluster_resolver.TPUClusterResolver``;
seed 004 builds ``tf.distribute.experimental.TPUStrategy(tpu)``. Both namespaces
existed in TensorFlow 2.21 and not in phalanx (AttributeError on the first line).
"""

from __future__ import annotations

import numpy as np
import pytest

import phalanx

TPU_VARIABLES = (
    "TPU_PROCESS_ADDRESSES",
    "TPU_WORKER_HOSTNAMES",
    "TPU_WORKER_ID",
    "TPU_ACCELERATOR_TYPE",
    "COLAB_TPU_ADDR",
)


def test_seed_004_connect_off_a_tpu_names_the_simulated_path(monkeypatch):
    for name in TPU_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(
        phalanx.errors.ClusterConfigError,
        match=r"found no TPU.*TPUStrategy\(experimental_simulate_on_cpu=True\)",
    ):
        tpu = phalanx.distribute.cluster_resolver.TPUClusterResolver()
        phalanx.config.experimental_connect_to_cluster(tpu)
        phalanx.cluster.initialize_tpu_system(tpu)


def test_seed_004_experimental_tpu_strategy_trains():
    strategy = phalanx.distribute.experimental.TPUStrategy(experimental_simulate_on_cpu=True)
    assert strategy.num_replicas_in_sync == 8
    rng = np.random.default_rng(0)
    x_train = rng.random((400, 784), dtype=np.float32)
    y_train = phalanx.utils.to_categorical(rng.integers(0, 10, 400), 10)
    with strategy.scope():
        model = phalanx.models.Sequential()
        model.add(phalanx.layers.Dense(32, input_shape=(784,)))
        model.add(phalanx.layers.Activation("relu"))
        model.add(phalanx.layers.Dense(10, activation="softmax"))
        model.compile(
            loss="categorical_crossentropy", optimizer=phalanx.optimizers.Adam(), metrics=["acc"]
        )
    history = model.fit(x_train, y_train, epochs=2, steps_per_epoch=2, verbose=0)
    assert sorted(history.history) == ["acc", "loss"]


def test_the_other_experimental_and_resolver_names_are_phalanxs():
    experimental = phalanx.distribute.experimental
    assert experimental.MultiWorkerMirroredStrategy is phalanx.MultiWorkerMirroredStrategy
    assert experimental.CommunicationOptions is phalanx.distribute.CommunicationOptions
    assert experimental.CommunicationImplementation.NCCL.name == "NCCL"
    assert experimental.ValueContext is phalanx.ValueContext
    assert experimental.TerminationConfig is phalanx.checkpoint.TerminationConfig
    handler = experimental.PreemptionCheckpointHandler
    assert handler is phalanx.checkpoint.PreemptionCheckpointHandler
    resolvers = phalanx.distribute.cluster_resolver
    assert resolvers.TFConfigClusterResolver is phalanx.cluster.TFConfigClusterResolver
    assert resolvers.SlurmClusterResolver is phalanx.cluster.SlurmClusterResolver
    with pytest.raises(AttributeError, match="ParameterServerStrategy"):
        _ = experimental.ParameterServerStrategy
    options = experimental.CommunicationOptions(
        implementation=experimental.CommunicationImplementation.AUTO
    )
    assert isinstance(options, phalanx.distribute.CommunicationOptions)
