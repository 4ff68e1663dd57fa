"""The seeds' custom loop ("Use TPUs", seed 001) as a reader ports it to phalanx.

TensorFlow's ``@tf.function def train_step(iterator): strategy.run(step_fn,
args=(next(iterator),))`` becomes a ``jax.jit`` function that takes the
iterator's batch; inside it, ``strategy.shard_batch`` splits the batch (the
README's table), and a reader unpacks it as outside:
``images, labels = strategy.shard_batch((images, labels))``.
"""

from __future__ import annotations

import flax.nnx as nnx
import jax
import numpy as np
import optax

import phalanx as px

GLOBAL_BATCH = 32


def _data():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (128, 8, 8, 1), dtype=np.uint8)
    return x, rng.integers(0, 10, 128)


def create_model():
    regularizer = px.regularizers.L2(1e-5)
    return px.Sequential(
        [
            px.layers.Conv2D(4, 3, input_shape=(8, 8, 1), activation="relu"),
            px.layers.Flatten(),
            px.layers.Dense(16, activation="relu", kernel_regularizer=regularizer),
            px.layers.Dense(10, kernel_regularizer=regularizer),
        ]
    )


def get_dataset(batch_size):
    def scale(image, label):
        image = image.astype(np.float32)
        image /= 255.0
        return image, label

    dataset = px.data.Dataset.from_tensor_slices(_data()).map(scale)
    return dataset.shuffle(10000, seed=0).repeat().batch(batch_size)


def _train(strategy, steps=3):
    """The seed's loop: returns the metrics' results and the final parameters."""
    with strategy.scope():
        model = create_model()
        optimizer = px.optimizers.Adam()
        training_loss = px.metrics.Mean("training_loss", dtype="float32")
        training_accuracy = px.metrics.SparseCategoricalAccuracy("training_accuracy")
        model.build()
        graphdef, params = nnx.split(model.module, nnx.Param)
        params = strategy.replicate(params)
        opt_state = strategy.replicate(optimizer.init(params))
    per_replica_batch_size = GLOBAL_BATCH // strategy.num_replicas_in_sync
    train_dataset = strategy.distribute_datasets_from_function(
        lambda _: get_dataset(per_replica_batch_size)
    )

    @jax.jit
    def train_step(params, opt_state, loss_state, acc_state, images, labels):
        def step_fn(params, opt_state, loss_state, acc_state, images, labels):
            def loss_fn(p):
                net = nnx.merge(graphdef, p)
                logits = net(images, training=True)
                per_example_loss = px.losses.sparse_categorical_crossentropy(
                    labels, logits, from_logits=True
                )
                loss = px.compute_average_loss(per_example_loss)
                if net.losses:
                    loss += px.scale_regularization_loss(sum(net.losses))
                return loss, logits

            (loss, logits), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
            updates, opt_state = optimizer.update(grads, opt_state, params)
            params = optax.apply_updates(params, updates)
            ctx = px.get_replica_context()
            replicas = strategy.num_replicas_in_sync
            loss_inc = training_loss.update(training_loss.init(), loss * replicas)
            acc_inc = training_accuracy.update(training_accuracy.init(), labels, logits)
            loss_state = px.metrics.merge_states(loss_state, ctx.all_reduce("sum", loss_inc))
            acc_state = px.metrics.merge_states(acc_state, ctx.all_reduce("sum", acc_inc))
            return params, opt_state, loss_state, acc_state

        images, labels = strategy.shard_batch((images, labels))  # unpacked, as outside jit
        return strategy.run(
            step_fn, args=(params, opt_state, loss_state, acc_state, images, labels)
        )

    iterator = iter(train_dataset)
    loss_state, acc_state = training_loss.init(), training_accuracy.init()
    for _ in range(steps):
        images, labels = next(iterator)
        params, opt_state, loss_state, acc_state = train_step(
            params, opt_state, loss_state, acc_state, images, labels
        )
    results = (float(training_loss.result(loss_state)), float(training_accuracy.result(acc_state)))
    return results, jax.device_get(params)


def test_custom_loop_unpacks_shard_batch_inside_jit():
    tpu = px.TPUStrategy(experimental_simulate_on_cpu=True, compute_dtype="float32")
    one = px.MirroredStrategy(devices=jax.devices()[:1])
    (loss8, acc8), params8 = _train(tpu)
    (loss1, acc1), params1 = _train(one)
    assert np.isfinite(loss8) and 0.0 <= acc8 <= 1.0
    np.testing.assert_allclose(loss8, loss1, rtol=1e-5)
    np.testing.assert_allclose(acc8, acc1)
    for a, b in zip(jax.tree.leaves(params8), jax.tree.leaves(params1), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)


def test_shard_batch_inside_jit_keeps_the_batch_structure():
    strategy = px.MirroredStrategy(devices=jax.devices()[:4])

    @jax.jit
    def f(x, y):
        split = strategy.shard_batch({"x": x, "y": (y, y)})
        assert set(split) == {"x", "y"} and isinstance(split["y"], tuple)
        xs, ys = strategy.shard_batch((x, y))
        return strategy.run(lambda a, b, d: (a.sum() + b.sum(), d["x"].sum()), args=(xs, ys, split))

    out, total = f(np.ones((8, 3), np.float32), np.ones(8, np.float32))
    np.testing.assert_allclose(strategy.reduce("SUM", out, axis=None), 24 + 8)
    np.testing.assert_allclose(strategy.reduce("SUM", total, axis=None), 24)
