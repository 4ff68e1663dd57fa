"""Child script: a custom training loop of 2 processes checkpoints its parameters and optax
state by name (``Checkpoint(model=params, optimizer=opt_state)``) with a CheckpointManager.

    ctl_trees.py DIR OUT

Trains steps 0-2, saves, trains 3-5 (the run that went on); then restores
``latest_checkpoint(DIR)`` into fresh trees and trains 3-5 again. Writes ``OUT/<process>.npz``:
``went_on`` and ``resumed`` (the losses of steps 3-5), ``params`` (the restored weights).
"""

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax

import phalanx
from phalanx.checkpoint import Checkpoint, CheckpointManager, latest_checkpoint

folder, out = sys.argv[1], Path(sys.argv[2])
strategy = phalanx.MultiWorkerMirroredStrategy()
me = jax.process_index()
rng = np.random.default_rng(0)
XS = rng.normal(size=(6, 16, 4)).astype(np.float32)
YS = rng.integers(0, 3, size=(6, 16)).astype(np.int32)
OPT = optax.adam(1e-2)


def init():
    params = {"w": jax.random.normal(jax.random.key(0), (4, 3)) * 0.5, "b": jnp.zeros(3)}
    with strategy.scope():
        params = strategy.replicate(params)
        return params, strategy.replicate(OPT.init(params))


def step(params, opt_state, x, y):
    def loss_fn(p):
        per_example = optax.softmax_cross_entropy_with_integer_labels(x @ p["w"] + p["b"], y)
        return phalanx.compute_average_loss(per_example, global_batch_size=16)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    updates, opt_state = OPT.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss


def train(params, opt_state, steps):
    losses = []
    for i in steps:
        # Each process gives its half of the global batch of 16.
        rows = slice(me * 8, me * 8 + 8)
        x, y = strategy.shard_batch((XS[i][rows], YS[i][rows]))
        params, opt_state, loss = strategy.run(step, args=(params, opt_state, x, y))
        losses.append(float(strategy.reduce("SUM", loss, axis=None)))
    return params, opt_state, losses


params, opt_state = init()
checkpoint = Checkpoint(model=params, optimizer=opt_state)
manager = CheckpointManager(checkpoint, folder, max_to_keep=1)
params, opt_state, _ = train(params, opt_state, range(3))
checkpoint.model, checkpoint.optimizer = params, opt_state
print(f"saved {manager.save()}", flush=True)
_, _, went_on = train(params, opt_state, range(3, 6))
manager.close()

fresh = Checkpoint(model=init()[0], optimizer=init()[1])
fresh.restore(latest_checkpoint(folder))
_, _, resumed = train(fresh.model, fresh.optimizer, range(3, 6))
out.mkdir(parents=True, exist_ok=True)
np.savez(
    out / f"{me}.npz",
    went_on=np.array(went_on),
    resumed=np.array(resumed),
    params=np.asarray(jax.device_get(fresh.model["w"])),
)
print("done", flush=True)
