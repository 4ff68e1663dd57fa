"""The seeds' TensorFlow spellings, ported with ``tf`` -> ``phalanx`` (README's name table).

Seed 000's ``init_tpu`` and seed 002's strategies and pipeline, as a reader
writes them: ``tf.config.experimental_connect_to_cluster`` ->
``px.config.experimental_connect_to_cluster``, ``tf.data.experimental.AUTOTUNE``
-> ``px.data.experimental.AUTOTUNE``. On a machine without a TPU the resolver
says how to run the same program on simulated TPU cores.
"""

from __future__ import annotations

import numpy as np
import pytest

import phalanx as px

TPU_VARIABLES = (
    "TPU_PROCESS_ADDRESSES",
    "TPU_WORKER_HOSTNAMES",
    "TPU_WORKER_ID",
    "TPU_ACCELERATOR_TYPE",
    "COLAB_TPU_ADDR",
)


def init_tpu():
    """Seed 000, as ported: the TPU VM path."""
    resolver = px.cluster.TPUClusterResolver()
    px.config.experimental_connect_to_cluster(resolver)
    px.cluster.initialize_tpu_system(resolver)
    strategy = px.TPUStrategy(resolver)
    print("All TPU systems initialized.")
    return strategy


def test_init_tpu_off_a_tpu_vm_names_the_simulated_path(monkeypatch):
    for name in TPU_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(
        px.errors.ClusterConfigError,
        match=r"found no TPU.*TPUStrategy\(experimental_simulate_on_cpu=True\)",
    ):
        init_tpu()


def test_tf_config_and_tf_data_experimental_spellings():
    assert px.config.experimental_connect_to_cluster is px.cluster.connect_to_cluster
    assert px.data.experimental.AUTOTUNE == px.data.AUTOTUNE
    assert px.data.experimental.AutoShardPolicy is px.data.AutoShardPolicy
    # Without a cluster in the environment, connecting is a no-op, as initialize().
    assert px.config.experimental_connect_to_cluster(None) is None


def test_seed_002_pipeline_and_fit():
    strategy = px.MirroredStrategy()
    with strategy.scope():
        model = px.models.Sequential(
            [px.layers.Dense(16, activation="relu"), px.layers.Dense(10, activation="softmax")]
        )
    rng = np.random.default_rng(0)
    features, labels = rng.random((256, 8), dtype=np.float32), rng.integers(0, 10, 256)
    batch_size, num_epochs = 64, 2
    dataset = px.data.Dataset.from_tensor_slices((features, labels))
    dataset = dataset.batch(batch_size).repeat(num_epochs)
    dataset = dataset.prefetch(buffer_size=px.data.experimental.AUTOTUNE)
    with strategy.scope():
        model.compile(
            optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"]
        )
    history = model.fit(dataset, epochs=2, verbose=0)
    assert sorted(history.history) == ["accuracy", "loss"]
    assert len(history.history["loss"]) == 2
