"""A training script as a user writes it, with BackupAndRestore; the tests kill and relaunch it.

    python train.py OUT.npz --input numpy|dataset|tfrecord --spe N --devices D
        --backup DIR --save-freq K [--kill-at-step S [--kill-delay-ms T]]
        [--hang-in-save M] [--data DIR] [--sigterm-at-step S]

Trains 3 epochs of a small MLP with dropout and Adam (the seeds' model,
smaller) under MirroredStrategy over D simulated CPU devices, and writes the
final weights to OUT.npz. ``--kill-at-step S``: when the execution that holds
step S begins, a thread sends this process SIGKILL after T ms (mid-execution
when it lands while the compiled program runs). ``--hang-in-save M``: the
M-th backup hangs after its file is written and before its commit (the rename),
after writing ``<backup>.hung``; the test kills the process there.
``--sigterm-at-step S``: the process sends itself SIGTERM when the execution
holding step S begins (``BackupAndRestore(save_before_preemption=True)``
then saves after it and exits with status 42).
"""

import argparse
import os
import signal
import sys
import threading
import time

parser = argparse.ArgumentParser()
parser.add_argument("out")
parser.add_argument("--input", default="numpy")
parser.add_argument("--spe", type=int, default=1)
parser.add_argument("--devices", type=int, default=1)
parser.add_argument("--backup", required=True)
parser.add_argument("--save-freq", default="epoch")
parser.add_argument("--kill-at-step", type=int, default=None)
parser.add_argument("--kill-delay-ms", type=float, default=0.0)
parser.add_argument("--hang-in-save", type=int, default=None)
parser.add_argument("--data", default=None)
parser.add_argument("--dropout", type=float, default=0.25)
parser.add_argument("--sigterm-at-step", type=int, default=None)
args = parser.parse_args()

_flags = [f for f in os.environ.get("XLA_FLAGS", "").split() if "device_count" not in f]
os.environ["XLA_FLAGS"] = " ".join(
    [*_flags, f"--xla_force_host_platform_device_count={args.devices}"]
)
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import numpy as np  # noqa: E402

import phalanx  # noqa: E402
from phalanx import layers  # noqa: E402
from phalanx.data import Dataset, FixedLenFeature, TFRecordDataset, parse_example  # noqa: E402

N, FEATURES, CLASSES, BATCH = 200, 12, 5, 16


def arrays():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(N, FEATURES)).astype(np.float32)
    y = (np.abs(x[:, :CLASSES]).argmax(1)).astype(np.int32)
    return x, y


def training_input():
    """(x, y, batch_size) for fit: arrays, a shuffled Dataset, or a TFRecord pipeline."""
    x, y = arrays()
    if args.input == "numpy":
        return x, y, BATCH
    if args.input == "dataset":
        ds = Dataset.from_tensor_slices((x, y)).shuffle(64, seed=11).batch(BATCH)
        return ds.map(lambda a, b: (a * 1.0, b)).prefetch(2), None, None
    spec = {"x": FixedLenFeature([FEATURES], np.float32), "y": FixedLenFeature([], np.int64)}
    files = sorted(os.path.join(args.data, f) for f in os.listdir(args.data))
    ds = (
        TFRecordDataset(files)
        .shuffle(50, seed=5)
        .batch(BATCH)
        .map(lambda r: parse_example(r, spec))
        .map(lambda e: (e["x"], e["y"].astype(np.int32)))
        .prefetch(2)
    )
    return ds, None, None


def kill_later(delay_s):
    time.sleep(delay_s)
    os.kill(os.getpid(), signal.SIGKILL)


class KillAtStep(phalanx.callbacks.Callback):
    """Sends ``sig`` to this process while the execution holding step ``step`` runs."""

    def __init__(self, step, delay_s, sig=signal.SIGKILL):
        super().__init__()
        self.step, self.delay_s, self.sig = step, delay_s, sig

    def on_train_batch_begin(self, batch, logs=None):
        done = self.model.optimizer.iterations  # the steps dispatched before this execution
        steps = self.model.steps_per_execution
        if self.params.get("steps"):  # the epoch's last execution may be shorter
            steps = min(steps, self.params["steps"] - batch)
        if done <= self.step < done + steps:
            if self.sig == signal.SIGKILL:
                threading.Thread(target=kill_later, args=(self.delay_s,), daemon=True).start()
            else:
                os.kill(os.getpid(), self.sig)


def hang_in_save(m):
    """Makes the m-th checkpoint hang after its file is written, before its commit (the rename)."""
    from phalanx.checkpoint import _file

    original = _file.commit
    calls = [0]

    def commit(tmp, path):
        calls[0] += 1
        if calls[0] == m:
            with open(args.backup + ".hung", "w") as f:
                f.write(str(path))
            time.sleep(600)
        return original(tmp, path)

    _file.commit = commit


if args.hang_in_save:
    hang_in_save(args.hang_in_save)

strategy = phalanx.MirroredStrategy(devices=jax.devices()[: args.devices])
with strategy.scope():
    model = phalanx.Sequential(
        [
            layers.Input(shape=(FEATURES,)),
            layers.Dense(32, activation="relu"),
            layers.Dropout(args.dropout),
            layers.Dense(CLASSES, activation="softmax"),
        ]
    )
    model.compile(
        optimizer="adam",
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
        steps_per_execution=args.spe,
        seed=3,
    )
save_freq = args.save_freq if args.save_freq == "epoch" else int(args.save_freq)
preempt = args.sigterm_at_step is not None
callbacks = [
    phalanx.callbacks.BackupAndRestore(
        args.backup, save_freq=save_freq, save_before_preemption=preempt
    )
]
if args.kill_at_step is not None:
    callbacks.append(KillAtStep(args.kill_at_step, args.kill_delay_ms / 1000.0))
if preempt:
    callbacks.append(KillAtStep(args.sigterm_at_step, 0.0, signal.SIGTERM))
x, y, batch_size = training_input()
history = model.fit(x, y, batch_size=batch_size, epochs=3, callbacks=callbacks, verbose=0)
np.savez(args.out, *model.get_weights(), loss=np.asarray(history.history["loss"]))
print("steps", model.optimizer.iterations, "epochs run", len(history.history["loss"]))
sys.stdout.flush()
