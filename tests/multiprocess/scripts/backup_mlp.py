"""Child script: ``fit`` with ``BackupAndRestore`` across processes, killed or preempted once.

    phalanx launch -n 2 --max-restarts 1 -- backup_mlp.py OUT_DIR BACKUP_DIR
        [--input numpy|dataset] [--save-freq K] [--die-at-step S --die-process P
        --signal KILL|TERM]

Each process builds a ``MultiWorkerMirroredStrategy``, fits a small MLP with
dropout and Adam for 3 epochs with ``BackupAndRestore(BACKUP_DIR, save_freq=K,
save_before_preemption=True)`` and writes its final weights and the step it
resumed from to ``OUT_DIR/<process>.npz``. With ``--die-at-step S``, process P
sends itself SIGKILL or SIGTERM when the execution holding step S begins, in
the first attempt only (``OUT_DIR/died`` marks that it happened).
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
parser.add_argument("--input", default="numpy")
parser.add_argument("--save-freq", default="epoch")
parser.add_argument("--die-at-step", type=int, default=None)
parser.add_argument("--die-process", type=int, default=1)
parser.add_argument("--signal", default="KILL")
args = parser.parse_args()

N, FEATURES, CLASSES, BATCH = 192, 12, 5, 16  # 12 steps an epoch


def arrays():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(N, FEATURES)).astype(np.float32)
    y = (np.abs(x[:, :CLASSES]).argmax(1)).astype(np.int32)
    return x, y


class DieAtStep(phalanx.callbacks.Callback):
    """Process ``process`` sends itself ``sig`` when the execution holding ``step`` begins."""

    def __init__(self, step, process, sig, marker):
        super().__init__()
        self.step, self.process, self.sig, self.marker = step, process, sig, marker

    def on_train_batch_begin(self, batch, logs=None):
        done = self.model.optimizer.iterations
        steps = self.model.steps_per_execution
        if self.params.get("steps"):
            steps = min(steps, self.params["steps"] - batch)
        mine = jax.process_index() == self.process
        if mine and done <= self.step < done + steps and not os.path.exists(self.marker):
            with open(self.marker, "w") as f:
                f.write(str(self.step))
            os.kill(os.getpid(), self.sig)


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
        optimizer="adam",
        loss="sparse_categorical_crossentropy",
        steps_per_execution=2,
        seed=3,
    )
save_freq = args.save_freq if args.save_freq == "epoch" else int(args.save_freq)
callbacks = [
    phalanx.callbacks.BackupAndRestore(
        args.backup, save_freq=save_freq, save_before_preemption=True
    ),
    FirstStep(),
]
if args.die_at_step is not None:
    sig = {"KILL": signal.SIGKILL, "TERM": signal.SIGTERM}[args.signal]
    marker = os.path.join(args.out_dir, "died")
    callbacks.append(DieAtStep(args.die_at_step, args.die_process, sig, marker))
x, y = arrays()
if args.input == "numpy":
    history = model.fit(x, y, batch_size=BATCH, epochs=3, callbacks=callbacks, verbose=0)
else:
    ds = phalanx.data.Dataset.from_tensor_slices((x, y)).shuffle(64, seed=11).batch(BATCH)
    history = model.fit(ds, epochs=3, callbacks=callbacks, verbose=0)
weights = {f"weight_{i}": w for i, w in enumerate(model.get_weights())}
np.savez(
    os.path.join(args.out_dir, f"{jax.process_index()}.npz"),
    **weights,
    loss=np.asarray(history.history["loss"]),
    first_step=np.asarray(-1 if FirstStep.first is None else FirstStep.first),
    steps=np.asarray(int(model.optimizer.iterations)),
)
print("done steps", int(model.optimizer.iterations), "first", FirstStep.first)
sys.stdout.flush()
