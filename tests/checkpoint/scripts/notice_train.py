"""A training script with ``BackupAndRestore(save_before_preemption=True)``, told to stop by a
termination notice other than SIGTERM; the tests relaunch it.

    python notice_train.py OUT.npz --backup DIR [--sleep-ms T] [--signal-at-step S --signal SIG]
        [--watch-file PATH --touch-at-step S]

Trains 3 epochs (13 steps each) of a small MLP with dropout and Adam on a
shuffled ``Dataset`` (``steps_per_execution=2``) and writes the final weights
to OUT.npz. ``--sleep-ms T``: each batch's end waits T ms (a step that takes
time, so that a notice polled every second lands mid-fit). ``--signal-at-step
S --signal SIG``: the process sends itself SIG when the execution holding step
S begins (Slurm's ``--signal=USR1@N`` does that from outside). A notice from
the GCE metadata server comes through ``GCE_METADATA_HOST`` (the test's fake
server). ``--watch-file PATH``: ``BackupAndRestore(termination_config=
TerminationConfig(termination_watcher_fn=...))`` with a watcher that is True
once PATH exists; ``--touch-at-step S`` creates it when step S begins. After a save on a notice the script exits with status 42; run again,
it resumes from the backup.
"""

import argparse
import os
import signal
import sys
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.pop("XLA_FLAGS", None)

import numpy as np

import phalanx
from phalanx import layers
from phalanx.data import Dataset

parser = argparse.ArgumentParser()
parser.add_argument("out")
parser.add_argument("--backup", required=True)
parser.add_argument("--sleep-ms", type=float, default=0.0)
parser.add_argument("--signal-at-step", type=int, default=None)
parser.add_argument("--signal", default="SIGUSR1")
parser.add_argument("--watch-file", default=None)
parser.add_argument("--touch-at-step", type=int, default=None)
args = parser.parse_args()

N, FEATURES, CLASSES, BATCH = 208, 12, 5, 16


class Slow(phalanx.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        time.sleep(args.sleep_ms / 1000.0)


class SignalAtStep(phalanx.callbacks.Callback):
    def on_train_batch_begin(self, batch, logs=None):
        done = self.model.optimizer.iterations
        if done <= args.signal_at_step < done + self.model.steps_per_execution:
            os.kill(os.getpid(), signal.Signals[args.signal])


class TouchAtStep(phalanx.callbacks.Callback):
    def on_train_batch_begin(self, batch, logs=None):
        if self.model.optimizer.iterations >= args.touch_at_step:
            open(args.watch_file, "a").close()


rng = np.random.default_rng(7)
x = rng.normal(size=(N, FEATURES)).astype(np.float32)
y = (np.abs(x[:, :CLASSES]).argmax(1)).astype(np.int32)
ds = Dataset.from_tensor_slices((x, y)).shuffle(64, seed=11).batch(BATCH)

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
config = None
if args.watch_file:
    watch_file = args.watch_file
    config = phalanx.checkpoint.TerminationConfig(
        termination_watcher_fn=lambda: os.path.exists(watch_file)
    )
callbacks = [
    phalanx.callbacks.BackupAndRestore(
        args.backup, save_freq=4, save_before_preemption=True, termination_config=config
    )
]
if args.touch_at_step is not None:
    callbacks.append(TouchAtStep())
if args.sleep_ms:
    callbacks.append(Slow())
if args.signal_at_step is not None:
    callbacks.append(SignalAtStep())
history = model.fit(ds, epochs=3, callbacks=callbacks, verbose=0)
np.savez(args.out, *model.get_weights(), loss=np.asarray(history.history["loss"]))
print("steps", model.optimizer.iterations, "epochs run", len(history.history["loss"]))
sys.stdout.flush()
