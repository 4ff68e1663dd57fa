"""A custom training loop the TensorFlow way, ported to phalanx.

The seeds' loop: a model, optimizer and metric created under the strategy's
scope; ``distribute_datasets_from_function``; ``strategy.run(train_step)``
with several steps inside one compiled function; ``strategy.reduce`` of the
loss; a metric accumulated across replicas.

    python examples/custom_loop.py            # every local device
    PHALANX_CPU_DEVICES=4 python examples/custom_loop.py
"""

from __future__ import annotations

import flax.nnx as nnx
import jax
import jax.numpy as jnp
import optax

import phalanx
from phalanx import layers

EPOCHS = 5
STEPS_PER_CALL = 4  # training steps inside one compiled function


def main() -> dict:
    strategy = phalanx.MirroredStrategy()
    print(f"Number of devices: {strategy.num_replicas_in_sync}")
    batch_per_replica = 16
    global_batch = batch_per_replica * strategy.num_replicas_in_sync
    (x, y), (xt, yt) = phalanx.datasets.digits.load_data()

    def dataset_fn(ctx: phalanx.InputContext):
        batch = ctx.get_per_replica_batch_size(global_batch)  # as in TensorFlow
        ds = phalanx.data.Dataset.from_tensor_slices((x, y))
        ds = ds.shard(ctx.num_input_pipelines, ctx.input_pipeline_id)
        return ds.shuffle(len(x), seed=0).batch(batch, drop_remainder=True).prefetch(2)

    # Each replica takes one per-replica batch per step; a last step with fewer batches
    # than replicas is skipped (TensorFlow would run it with some replicas idle).
    dist_dataset = strategy.distribute_datasets_from_function(
        dataset_fn, options=phalanx.InputOptions(partial_batch="drop")
    )

    with strategy.scope():
        model = phalanx.Sequential(
            [layers.Input(shape=(64,)), layers.Dense(128, activation="relu"), layers.Dense(10)]
        )
        model.build()
        graphdef, params = nnx.split(model.module, nnx.Param)
        optimizer = optax.adam(1e-3)
        params = strategy.replicate(params)
        opt_state = strategy.replicate(optimizer.init(params))
        accuracy = phalanx.metrics.SparseCategoricalAccuracy(name="train_accuracy")

    def compute_loss(labels, logits):
        per_example = optax.softmax_cross_entropy_with_integer_labels(logits, labels)
        return phalanx.compute_average_loss(per_example, global_batch_size=global_batch)

    def train_steps(params, opt_state, acc_state, images, labels):
        """STEPS_PER_CALL steps on this replica's slices ``[steps, batch/N, ...]``."""
        ctx = phalanx.get_replica_context()

        def step(carry, batch):
            params, opt_state, acc_state, loss_sum = carry
            xb, yb = batch

            def loss_fn(p):
                logits = nnx.merge(graphdef, p)(xb)
                return compute_loss(yb, logits), logits

            (loss, logits), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
            # Gradients of replicated parameters arrive summed over replicas.
            updates, opt_state = optimizer.update(grads, opt_state, params)
            params = optax.apply_updates(params, updates)
            increment = accuracy.update(accuracy.init(), yb, logits)
            acc_state = phalanx.metrics.merge_states(acc_state, ctx.all_reduce("sum", increment))
            return (params, opt_state, acc_state, loss_sum + loss), None

        zero = jnp.zeros_like(compute_loss(labels[0], jnp.zeros(labels[0].shape + (10,))))
        (params, opt_state, acc_state, loss_sum), _ = jax.lax.scan(
            step, (params, opt_state, acc_state, zero), (images, labels)
        )
        return params, opt_state, acc_state, loss_sum

    history = {}
    for epoch in range(EPOCHS):
        acc_state = strategy.replicate(accuracy.init())
        total_loss, steps = 0.0, 0
        for images, labels in dist_dataset.stacked(STEPS_PER_CALL):
            params, opt_state, acc_state, per_replica_loss = strategy.run(
                train_steps, args=(params, opt_state, acc_state, images, labels)
            )
            total_loss += float(strategy.reduce("SUM", per_replica_loss, axis=None))
            steps += images.shape[0]
        train_loss = total_loss / steps
        train_acc = float(accuracy.result(acc_state))
        history[epoch] = (train_loss, train_acc)
        print(f"Epoch {epoch + 1}, Loss: {train_loss:.4f}, Accuracy: {train_acc * 100:.2f}")
    logits = nnx.merge(graphdef, jax.device_get(params))(xt)
    test_acc = float((logits.argmax(-1) == yt).mean())
    print(f"Test accuracy: {test_acc * 100:.2f}")
    return {"history": history, "test_accuracy": test_acc}


if __name__ == "__main__":
    main()
