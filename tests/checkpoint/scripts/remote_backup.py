"""Child script: 2 processes back up ``fit`` to a URL asynchronously; one is killed once.

    phalanx launch -n 2 --max-restarts 1 -- remote_backup.py OUT_DIR BACKUP_URL [--die-at-step S]

Each process builds a ``MultiWorkerMirroredStrategy``, fits a small MLP with
dropout and Adam for 3 epochs with ``BackupAndRestore(BACKUP_URL, save_freq=5,
async_save=True)`` and writes its final weights and the step it started from
to ``OUT_DIR/<process>.npz``. With ``--die-at-step S`` process 1 sends itself
SIGKILL when the execution holding step S begins, in the first attempt only
(``OUT_DIR/died`` marks it). The URL's file system is configured by the
environment (``FSSPEC_S3_ENDPOINT_URL`` ...).
"""

import argparse
import os
import signal
import sys

import jax
import numpy as np

import phalanx
from phalanx import layers

parser = argparse.ArgumentParser()
parser.add_argument("out_dir")
parser.add_argument("backup")
parser.add_argument("--die-at-step", type=int, default=None)
args = parser.parse_args()

N, FEATURES, CLASSES, BATCH = 192, 12, 5, 16  # 12 steps an epoch


class DieAtStep(phalanx.callbacks.Callback):
    """Process 1 sends itself SIGKILL when the execution holding ``step`` begins (once)."""

    def __init__(self, step, marker):
        super().__init__()
        self.step, self.marker = step, marker

    def on_train_batch_begin(self, batch, logs=None):
        done = self.model.optimizer.iterations
        if jax.process_index() != 1 or os.path.exists(self.marker):
            return
        if done <= self.step < done + self.model.steps_per_execution:
            with open(self.marker, "w") as f:
                f.write(str(self.step))
            os.kill(os.getpid(), signal.SIGKILL)


class FirstStep(phalanx.callbacks.Callback):
    """Records the global step the run (re)started from."""

    first = None

    def on_train_batch_begin(self, batch, logs=None):
        if FirstStep.first is None:
            FirstStep.first = int(self.model.optimizer.iterations)


strategy = phalanx.MultiWorkerMirroredStrategy()
with strategy.scope():
    model = phalanx.Sequential(
        [
            layers.Input(shape=(FEATURES,)),
            layers.Dense(32, activation="relu"),
            layers.Dropout(0.25),
            layers.Dense(CLASSES, activation="softmax"),
        ]
    )
    model.compile(
        optimizer="adam", loss="sparse_categorical_crossentropy", steps_per_execution=2, seed=3
    )
callbacks = [phalanx.callbacks.BackupAndRestore(args.backup, save_freq=5, async_save=True)]
callbacks.append(FirstStep())
if args.die_at_step is not None:
    callbacks.append(DieAtStep(args.die_at_step, os.path.join(args.out_dir, "died")))
rng = np.random.default_rng(7)
x = rng.normal(size=(N, FEATURES)).astype(np.float32)
y = (np.abs(x[:, :CLASSES]).argmax(1)).astype(np.int32)
model.fit(x, y, batch_size=BATCH, epochs=3, callbacks=callbacks, verbose=0)
np.savez(
    os.path.join(args.out_dir, f"{jax.process_index()}.npz"),
    **{f"weight_{i}": w for i, w in enumerate(model.get_weights())},
    first_step=np.asarray(-1 if FirstStep.first is None else FirstStep.first),
    steps=np.asarray(int(model.optimizer.iterations)),
)
print("done steps", int(model.optimizer.iterations), "first", FirstStep.first)
sys.stdout.flush()
