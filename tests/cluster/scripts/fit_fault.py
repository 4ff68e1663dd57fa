"""Child script: ``fit`` over 2 processes, whose process 1 stops (SIGSTOP) or leaves early.

    phalanx launch -n 2 -- fit_fault.py stop|leave

``stop``: process 1 sends itself SIGSTOP at step 3 of epoch 3 (suspended, not
dead, as a hung machine), after printing ``stopping at <time.time()>``.
``leave``: process 1 exits 0 at the end of epoch 2 (``os._exit(0)``), as a
script that ends its loop early on one process, after printing ``leaving at
<time.time()>``. The launcher must name process 1 in both.
"""

import os
import signal
import sys
import time

import jax
import numpy as np

import phalanx
from phalanx import layers

mode = sys.argv[1]


class Fault(phalanx.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.epoch = 0

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_begin(self, batch, logs=None):
        if mode == "stop" and self.epoch == 2 and batch == 3 and jax.process_index() == 1:
            print(f"stopping at {time.time()}", flush=True)
            os.kill(os.getpid(), signal.SIGSTOP)

    def on_epoch_end(self, epoch, logs=None):
        if mode == "leave" and epoch == 1 and jax.process_index() == 1:
            print(f"leaving at {time.time()}", flush=True)
            os._exit(0)


strategy = phalanx.MultiWorkerMirroredStrategy()
with strategy.scope():
    model = phalanx.Sequential(
        [layers.Input(shape=(8,)), layers.Dense(16, activation="relu"), layers.Dense(2)]
    )
    model.compile(optimizer="adam", loss="mse")
rng = np.random.default_rng(0)
x, y = rng.normal(size=(256, 8)).astype(np.float32), rng.normal(size=(256, 2)).astype(np.float32)
print("ready", flush=True)
model.fit(x, y, batch_size=32, epochs=50, callbacks=[Fault()], verbose=0)
print("finished all epochs", flush=True)
