"""Child script: ``fit_mlp.train`` under a ``ModelParallelStrategy`` on a (2, 2) mesh.

Two processes of two devices: the mesh's rows are the processes (``"data"``,
one replica each) and its columns their devices (``"model"``): the first
kernel's units and the second kernel's rows are split over each process's two
devices. Writes what ``fit_mlp.train`` returns (weights gathered whole,
history, evaluation, predictions) to ``OUT_DIR/<process>.npz``, with the local
shape of the first kernel.
"""

import os
import sys

import jax
import numpy as np
from fit_mlp import train

from phalanx.distribute import DeviceMesh, LayoutMap, ModelParallelStrategy

if __name__ == "__main__":
    out_dir = sys.argv[1]
    layout_map = LayoutMap(DeviceMesh((2, 2), ("data", "model")))
    layout_map["dense/kernel"] = (None, "model")
    layout_map["dense/bias"] = ("model",)
    layout_map["dense_1/kernel"] = ("model", None)
    strategy = ModelParallelStrategy(layout_map, batch_dim_name="data")
    path = os.path.join(out_dir, "weights_numpy.npz")
    results = {f"numpy/{k}": v for k, v in train(strategy, "numpy", path).items()}
    kernel = strategy.distribute_variables({"dense": {"kernel": np.zeros((784, 128), np.float32)}})
    results["kernel_local_shape"] = np.array(
        kernel["dense"]["kernel"].addressable_shards[0].data.shape
    )
    results["replicas"] = np.array(strategy.num_replicas_in_sync)
    np.savez(os.path.join(out_dir, f"{jax.process_index()}.npz"), **results)
