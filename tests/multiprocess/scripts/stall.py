"""Child script: a 2-process ``fit`` whose process 1 stalls in a callback after step 3.

Run with ``PHALANX_WATCHDOG_TIMEOUT`` set: the fit loop beats the watchdog
once per execution, so a watchdog must end the job naming the stuck step.
"""

import time

import jax
import numpy as np

import phalanx
from phalanx import layers


def stall(batch, logs):
    if batch == 3 and jax.process_index() == 1:
        print("stalling in on_train_batch_end of step 3", flush=True)
        time.sleep(600)


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
    callbacks=[phalanx.callbacks.LambdaCallback(on_train_batch_end=stall)],
)
print("fit ended: the watchdog did not fire", flush=True)
