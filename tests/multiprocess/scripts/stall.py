"""Child script: a 2-process ``fit`` whose process 1 stalls in a callback.

``stall.py`` (or ``stall.py batch``): in ``on_train_batch_end`` of step 3, inside the
epoch's loop (its watchdog deadline runs); ``stall.py epoch``: in ``on_epoch_end`` of the
first epoch, outside any step (its loop stopped its watchdog), while process 0 goes on
into the next epoch and waits for it there. Run with ``PHALANX_WATCHDOG_TIMEOUT`` set:
the job must end naming process 1.
"""

import sys
import time

import jax
import numpy as np

import phalanx
from phalanx import layers

MODE = sys.argv[1] if len(sys.argv) > 1 else "batch"


def stall_in_batch(batch, logs):
    if batch == 3 and jax.process_index() == 1:
        print("stalling in on_train_batch_end of step 3", flush=True)
        time.sleep(600)


def stall_in_epoch_end(epoch, logs):
    if epoch == 0 and jax.process_index() == 1:
        print("stalling in on_epoch_end of epoch 0", flush=True)
        time.sleep(600)


hooks = (
    {"on_train_batch_end": stall_in_batch}
    if MODE == "batch"
    else {"on_epoch_end": stall_in_epoch_end}
)
strategy = phalanx.MultiWorkerMirroredStrategy()
with strategy.scope():
    model = phalanx.Sequential([layers.Dense(8, activation="relu"), layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
x = np.ones((64, 4), np.float32)
model.fit(
    x,
    np.zeros((64, 2), np.float32),
    batch_size=8,
    epochs=100,
    verbose=0,
    callbacks=[phalanx.callbacks.LambdaCallback(**hooks)],
)
print("fit ended: the watchdog did not fire", flush=True)
