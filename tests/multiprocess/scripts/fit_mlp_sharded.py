"""Child script: ``fit_mlp.train`` under ``MultiWorkerMirroredStrategy(shard_parameters=True)``.

Each process holds a slice of every large parameter and Adam moment (split over
the replicas of both processes); it writes what ``fit_mlp.train`` returns
(weights gathered whole, history, evaluation, predictions) to
``OUT_DIR/<process>.npz`` and the local shape of the first kernel it stores.
"""

import os
import sys

import jax
import numpy as np
from fit_mlp import train

import phalanx

if __name__ == "__main__":
    out_dir = sys.argv[1]
    strategy = phalanx.MultiWorkerMirroredStrategy(shard_parameters=True)
    path = os.path.join(out_dir, "weights_numpy.npz")
    results = {f"numpy/{k}": v for k, v in train(strategy, "numpy", path).items()}
    kernel = strategy.distribute_variables(np.zeros((784, 128), np.float32))
    results["kernel_local_shape"] = np.array(kernel.addressable_shards[0].data.shape)
    np.savez(os.path.join(out_dir, f"{jax.process_index()}.npz"), **results)
