"""``phalanx demo``: a small Keras model trained on real digits, on the local devices.

``Dense(128, relu)`` then ``Dense(10, softmax)``, Adam, sparse categorical
cross-entropy and accuracy, on the 1797 real 8x8 handwritten digits (UCI) shipped inside phalanx
(bundled, offline) or MNIST (``--dataset mnist``). ``fit`` holds out the last 10%
of the (already shuffled) training examples for validation (``validation_split``);
the test set is used once, at the end. It prints the progress bar, the test
accuracy and the training throughput, and writes TensorBoard logs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

import phalanx
from phalanx import layers
from phalanx.callbacks import Callback

from ._strategy import NAMES, choose_strategy

VALIDATION_SPLIT = 0.1


class _ShowDefaults(argparse.ArgumentDefaultsHelpFormatter):
    """Appends ``(default: X)`` to every option's help, except where there is none."""

    def _get_help_string(self, action):
        if action.default is None:
            return action.help
        return super()._get_help_string(action)


def register(sub: argparse._SubParsersAction) -> None:
    """Adds ``demo`` to the ``phalanx`` command."""
    p = sub.add_parser(
        "demo",
        help="train a small Keras model on real handwritten digits (offline)",
        description=(
            "Train Dense(128, relu) -> Dense(10, softmax) with Adam on real handwritten digits, "
            f"holding out {VALIDATION_SPLIT:.0%} of the training examples for validation, then "
            "report the accuracy on the test set (never seen in training) and the throughput."
        ),
        formatter_class=_ShowDefaults,
    )
    p.add_argument(
        "--dataset",
        choices=("digits", "mnist"),
        default="digits",
        help="digits: 1797 real 8x8 images shipped with phalanx, offline; mnist: 70000 28x28, downloaded once",
    )
    p.add_argument(
        "--data-dir",
        default=None,
        help="where MNIST's files are (or go); default: $PHALANX_DATA_DIR, else ~/.cache/phalanx/datasets",
    )
    p.add_argument(
        "--strategy", choices=NAMES, default="auto", help="auto: as phalanx info reports"
    )
    p.add_argument(
        "--devices",
        dest="demo_devices",
        type=int,
        default=None,
        metavar="N",
        help="simulate N CPU devices (same as phalanx --devices N); default: the real devices",
    )
    p.add_argument("--epochs", type=int, default=20, help="passes over the training split")
    p.add_argument("--batch-size", type=int, default=64, help="the global batch")
    p.add_argument(
        "--steps-per-execution", type=int, default=1, help="training steps per compiled call"
    )
    p.add_argument(
        "--logdir",
        default="logs/demo",
        help="TensorBoard logs, a new run folder in it per run ('' for none)",
    )
    p.add_argument(
        "--verbose", type=int, default=1, help="0 silent, 1 progress bar, 2 one line per epoch"
    )
    p.set_defaults(handler=run)


def _load(args):
    if args.dataset == "digits":
        return phalanx.datasets.digits.load_data()
    (x, y), (xt, yt) = phalanx.datasets.mnist.load_data(args.data_dir)
    prep = lambda a: (a.reshape(len(a), -1) / 255.0).astype(np.float32)  # noqa: E731
    return (prep(x), y.astype(np.int32)), (prep(xt), yt.astype(np.int32))


def _run_dir(logdir: str) -> str:
    """A new run folder under ``logdir`` (its start time), so TensorBoard shows each run as
    its own curve rather than every run's points in one."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    run, n = f"{logdir.rstrip('/')}/{stamp}", 1
    while "://" not in logdir and os.path.exists(run):
        n += 1
        run = f"{logdir.rstrip('/')}/{stamp}-{n}"
    return run


def _throughput(examples: int, seconds: list[float]) -> str:
    """The throughput line: steady epochs when there are any, else says it includes compiling."""
    if len(seconds) > 1:
        rate = examples / statistics.median(seconds[1:])
        return (
            f"throughput: {rate:,.0f} examples/s ({_steady(len(seconds))}, "
            "validation included; epoch 1 compiles)"
        )
    rate = examples / seconds[0]
    return (
        f"throughput: {rate:,.0f} examples/s over the only epoch, compilation included "
        "(run --epochs 2 or more for the steady rate)"
    )


def _steady(epochs: int) -> str:
    return "epoch 2" if epochs == 2 else f"median of epochs 2-{epochs}"


class _EpochTimer:
    """Times each epoch (a callback), for the throughput line."""

    def __init__(self):
        timer = self

        class _Timer(Callback):
            def on_epoch_begin(self, epoch, logs=None):
                timer._start = time.perf_counter()

            def on_epoch_end(self, epoch, logs=None):
                timer.seconds.append(time.perf_counter() - timer._start)

        self.seconds: list[float] = []
        self.callback = _Timer()


def _check_options(args: argparse.Namespace) -> str | None:
    """The first option out of range, as a one-line message; None when all are usable."""
    for flag, value in (
        ("--epochs", args.epochs),
        ("--batch-size", args.batch_size),
        ("--steps-per-execution", args.steps_per_execution),
        ("--devices", args.demo_devices),
    ):
        if value is not None and value < 1:
            return f"{flag} must be >= 1, got {value}."
    if args.verbose not in (0, 1, 2):
        return f"--verbose must be 0, 1 or 2, got {args.verbose}."
    return None


def run(args: argparse.Namespace) -> int:
    """Trains, evaluates and reports; returns the exit status (2 for a bad option)."""
    problem = _check_options(args)
    if problem:
        print(f"phalanx demo: {problem}", file=sys.stderr)
        return 2
    if args.demo_devices is not None:
        phalanx.cluster.set_cpu_device_count(args.demo_devices)
    started = time.perf_counter()
    (x, y), (xt, yt) = _load(args)
    choice = choose_strategy(args.strategy)
    strategy = choice.build()
    verbose = args.verbose
    replicas = strategy.num_replicas_in_sync
    n_val = int(len(x) * VALIDATION_SPLIT)
    print(
        f"phalanx demo: {args.dataset}: {len(x) - n_val} train, {n_val} validation (held out "
        f"from the training examples), {len(xt)} test; on {choice.class_name} "
        f"({replicas} replica{'s' if replicas > 1 else ''}; {choice.reason})"
    )
    with strategy.scope():
        model = phalanx.Sequential(
            [
                layers.Input(shape=x.shape[1:]),
                layers.Dense(128, activation="relu"),
                layers.Dense(10, activation="softmax"),
            ]
        )
        model.compile(
            optimizer="adam",
            loss="sparse_categorical_crossentropy",
            metrics=["accuracy"],
            steps_per_execution=args.steps_per_execution,
        )
    timer = _EpochTimer()
    callbacks = [timer.callback]
    run_dir = _run_dir(args.logdir) if args.logdir else None
    if run_dir:
        callbacks.append(phalanx.callbacks.TensorBoard(log_dir=run_dir))
    model.fit(
        x,
        y,
        batch_size=args.batch_size,
        epochs=args.epochs,
        verbose=verbose,
        callbacks=callbacks,
        validation_split=VALIDATION_SPLIT,
    )
    loss, accuracy = model.evaluate(xt, yt, batch_size=args.batch_size, verbose=0)
    print(
        f"test accuracy: {accuracy:.4f}  test loss: {loss:.4f}  "
        f"({len(xt)} test examples, never used in training)"
    )
    print(
        f"{_throughput(len(x) - n_val, timer.seconds)}; total time "
        f"{time.perf_counter() - started:.1f} s"
    )
    if run_dir:
        print(f"TensorBoard logs: {run_dir}  (tensorboard --logdir {args.logdir})")
    return 0
