"""Child script: 2 processes save with one CheckpointManager, process 1 always late.

    manager_race.py DIR [--async] [--different-paths]

Process 1 sleeps before each ``save``, so process 0 would have written and renamed the
checkpoint before process 1 numbers its own from the folder. Each process prints
``saved <path>`` per save and, at the end, ``listed <checkpoints>``.
``--different-paths``: each process calls ``Checkpoint.write`` with its own path; both
must raise the same ``CheckpointError`` and nothing may be written.
"""

import os
import sys
import time

import jax
import numpy as np

import phalanx
from phalanx import layers
from phalanx.checkpoint import Checkpoint, CheckpointManager
from phalanx.errors import CheckpointError

folder = sys.argv[1]
async_save = "--async" in sys.argv
strategy = phalanx.MultiWorkerMirroredStrategy()
me = jax.process_index()
with strategy.scope():
    model = phalanx.Sequential([layers.Input(shape=(4,)), layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
model.fit(np.ones((16, 4), np.float32), np.zeros((16, 2), np.float32), batch_size=8, verbose=0)

if "--different-paths" in sys.argv:
    try:
        Checkpoint(model=model).write(os.path.join(folder, f"mine-{me}"))
    except CheckpointError as error:
        print(f"refused: {error}", flush=True)
    print(f"folder holds {sorted(os.listdir(folder)) if os.path.isdir(folder) else []}")
    sys.exit(0)

checkpoint = Checkpoint(model=model)
manager = CheckpointManager(folder, max_to_keep=2, checkpoint=checkpoint, async_save=async_save)
for _ in range(3):
    if me == 1:
        time.sleep(1.5)
    print(f"saved {manager.save()}", flush=True)
manager.wait_until_finished()
print(f"listed {[os.path.basename(p) for p in manager.checkpoints]}", flush=True)
manager.close()
