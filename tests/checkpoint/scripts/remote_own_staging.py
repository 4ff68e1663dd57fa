"""Child script: 2 processes, each with its OWN staging folder (as on separate machines), back up
``fit`` to a URL; the relaunch resumes from it.

    phalanx launch -n 2 -- remote_own_staging.py OUT_DIR BACKUP_URL STAGING_ROOT
        [--shard-parameters] [--stop-at-step S] [--async-save] [--shared-staging]

Each process sets ``PHALANX_CHECKPOINT_STAGING`` to ``STAGING_ROOT/process_<i>`` (a folder no
other process sees; ``--shared-staging``: ``STAGING_ROOT`` itself, shared), builds a ``MultiWorkerMirroredStrategy`` (``shard_parameters=True`` splits
the variables over the processes), fits a small MLP with dropout and Adam for 3 epochs of 12
steps with ``BackupAndRestore(BACKUP_URL, save_freq=5)``, and writes to ``OUT_DIR/<i>.npz`` its
final weights and the step it started from, or, on an error, the error's type and message to
``OUT_DIR/<i>.error``. ``--stop-at-step S``: every process exits (code 3) when step S begins,
leaving the backup for the next run to resume from. The URL's file system is configured by the
environment (``FSSPEC_S3_ENDPOINT_URL`` ...).
"""

import argparse
import os
import sys
import time

import jax
import numpy as np

import phalanx
from phalanx import layers

parser = argparse.ArgumentParser()
parser.add_argument("out_dir")
parser.add_argument("backup")
parser.add_argument("staging_root")
parser.add_argument("--shard-parameters", action="store_true")
parser.add_argument("--stop-at-step", type=int, default=None)
parser.add_argument("--async-save", action="store_true")
parser.add_argument("--shared-staging", action="store_true")
args = parser.parse_args()

N, FEATURES, CLASSES, BATCH = 192, 12, 5, 16  # 12 steps an epoch


class Stop(Exception):
    pass


class StopAtStep(phalanx.callbacks.Callback):
    def on_train_batch_begin(self, batch, logs=None):
        if self.model.optimizer.iterations == args.stop_at_step:
            raise Stop


class FirstStep(phalanx.callbacks.Callback):
    first = None

    def on_train_batch_begin(self, batch, logs=None):
        if FirstStep.first is None:
            FirstStep.first = int(self.model.optimizer.iterations)


strategy = phalanx.MultiWorkerMirroredStrategy(shard_parameters=args.shard_parameters)
me = jax.process_index()
staging = (
    args.staging_root if args.shared_staging else os.path.join(args.staging_root, f"process_{me}")
)
os.makedirs(staging, exist_ok=True)
os.environ["PHALANX_CHECKPOINT_STAGING"] = staging
with strategy.scope():
    model = phalanx.Sequential(
        [
            layers.Input(shape=(FEATURES,)),
            layers.Dense(128, activation="relu"),  # 1536 weights: split by shard_parameters
            layers.Dropout(0.25),
            layers.Dense(CLASSES, activation="softmax"),
        ]
    )
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", seed=3)
backup = phalanx.callbacks.BackupAndRestore(args.backup, save_freq=5, async_save=args.async_save)
callbacks = [backup, FirstStep()]
if args.stop_at_step is not None:
    callbacks.append(StopAtStep())
rng = np.random.default_rng(7)
x = rng.normal(size=(N, FEATURES)).astype(np.float32)
y = (np.abs(x[:, :CLASSES]).argmax(1)).astype(np.int32)
try:
    model.fit(x, y, batch_size=BATCH, epochs=3, callbacks=callbacks, verbose=0)
except Stop:
    print("stopped at step", args.stop_at_step)
    sys.stdout.flush()
    os._exit(3)
except phalanx.errors.CheckpointError as error:
    with open(os.path.join(args.out_dir, f"{me}.error"), "w") as f:
        f.write(f"{type(error).__name__}: {error}")
    print("checkpoint error:", error)
    sys.stdout.flush()
    # Process 0's exit ends the job (JAX's coordinator lives there): it waits for the others
    # to have written their error first, as every process raised at the same agreement.
    deadline = time.monotonic() + 30
    while me == 0 and time.monotonic() < deadline:
        if all(os.path.exists(os.path.join(args.out_dir, f"{p}.error")) for p in range(2)):
            break
        time.sleep(0.05)
    os._exit(4)
weights = model.get_weights()
np.savez(
    os.path.join(args.out_dir, f"{me}.npz"),
    **{f"weight_{i}": w for i, w in enumerate(weights)},
    first_step=np.asarray(-1 if FirstStep.first is None else FirstStep.first),
    steps=np.asarray(int(model.optimizer.iterations)),
)
print("done steps", int(model.optimizer.iterations), "first", FirstStep.first)
sys.stdout.flush()
