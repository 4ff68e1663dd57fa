"""Child script: ``fit`` with ``BackupAndRestore`` under ``phalanx launch -n N``; killed mid-epoch
under one process count, resumed under another.

    phalanx launch -n N -- reshard_train.py OUT_DIR BACKUP_DIR [--input numpy|dataset|files]
        [--data DIR] [--die-at-step S]

Each process builds a ``MultiWorkerMirroredStrategy`` (one device a process),
fits a small MLP without dropout (each replica draws its own dropout keys, so
masks depend on the replica count) with Adam for 3 epochs of 12 steps, global
batch 16, backing up every 5 steps, and writes to ``OUT_DIR/<process>.npz``
its final weights, the step it started from and ``(epoch, batch, loss)`` after
every step (the epoch's running mean: the same batches in the same order give
the same values). Inputs: arrays; a shuffled ``Dataset`` ending with
``batch(16)`` (auto-sharded by DATA: each process takes rows of every global
batch); TFRecord files (auto-sharded by FILE). ``--die-at-step S``: process 0
sends itself SIGKILL when step S begins (no restart: the backup stays).
"""

import argparse
import os
import signal
import sys

import jax
import numpy as np

import phalanx
from phalanx import layers
from phalanx.data import Dataset, FixedLenFeature, TFRecordDataset, parse_example

parser = argparse.ArgumentParser()
parser.add_argument("out_dir")
parser.add_argument("backup")
parser.add_argument("--input", default="dataset")
parser.add_argument("--data", default=None)
parser.add_argument("--die-at-step", type=int, default=None)
args = parser.parse_args()

N, FEATURES, CLASSES, BATCH = 192, 12, 5, 16


def arrays():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(N, FEATURES)).astype(np.float32)
    y = (np.abs(x[:, :CLASSES]).argmax(1)).astype(np.int32)
    return x, y


def training_input():
    x, y = arrays()
    if args.input == "numpy":
        return x, y, BATCH
    if args.input == "dataset":
        return Dataset.from_tensor_slices((x, y)).shuffle(64, seed=11).batch(BATCH), None, None
    spec = {"x": FixedLenFeature([FEATURES], np.float32), "y": FixedLenFeature([], np.int64)}
    files = sorted(os.path.join(args.data, f) for f in os.listdir(args.data))
    ds = (
        TFRecordDataset(files)
        .shuffle(50, seed=5)
        .batch(BATCH)
        .map(lambda r: parse_example(r, spec))
        .map(lambda e: (e["x"], e["y"].astype(np.int32)))
    )
    return ds, None, None


class DieAtStep(phalanx.callbacks.Callback):
    def on_train_batch_begin(self, batch, logs=None):
        if jax.process_index() == 0 and self.model.optimizer.iterations == args.die_at_step:
            os.kill(os.getpid(), signal.SIGKILL)


LOSSES = []  # (epoch, batch, running loss) after every step


class Record(phalanx.callbacks.Callback):
    first = None
    epoch = 0

    def on_epoch_begin(self, epoch, logs=None):
        Record.epoch = epoch

    def on_train_batch_begin(self, batch, logs=None):
        if Record.first is None:
            Record.first = int(self.model.optimizer.iterations)

    def on_train_batch_end(self, batch, logs=None):
        LOSSES.append((Record.epoch, batch, float(logs["loss"])))


strategy = phalanx.MultiWorkerMirroredStrategy()
with strategy.scope():
    model = phalanx.Sequential(
        [
            layers.Input(shape=(FEATURES,)),
            layers.Dense(32, activation="relu"),
            layers.Dense(CLASSES, activation="softmax"),
        ]
    )
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", seed=3)
callbacks = [phalanx.callbacks.BackupAndRestore(args.backup, save_freq=5), Record()]
if args.die_at_step is not None:
    callbacks.append(DieAtStep())
x, y, batch_size = training_input()
model.fit(x, y, batch_size=batch_size, epochs=3, callbacks=callbacks, verbose=0)
np.savez(
    os.path.join(args.out_dir, f"{jax.process_index()}.npz"),
    *model.get_weights(),
    losses=np.asarray(LOSSES, np.float64).reshape(-1, 3),
    first_step=np.asarray(-1 if Record.first is None else Record.first),
    steps=np.asarray(int(model.optimizer.iterations)),
)
print("done steps", int(model.optimizer.iterations), "first", Record.first)
sys.stdout.flush()
