"""``phalanx demo``: the seeds' model trained on real digits, on the local devices.

``Dense(128, relu)`` then ``Dense(10, softmax)``, Adam, sparse categorical
cross-entropy and accuracy, on scikit-learn's 1797 real 8x8 handwritten digits
(bundled, offline) or MNIST (``--dataset mnist``). It prints the progress bar,
the test accuracy and the training throughput, and writes TensorBoard logs.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from ._strategy import NAMES, choose_strategy


def register(sub: argparse._SubParsersAction) -> None:
    """Adds ``demo`` to the ``phalanx`` command."""
    p = sub.add_parser("demo", help="train the seeds' model on real handwritten digits")
    p.add_argument("--dataset", choices=("digits", "mnist"), default="digits")
    p.add_argument("--data-dir", default=None, help="where MNIST's files are (or go)")
    p.add_argument("--strategy", choices=NAMES, default="auto")
    p.add_argument(
        "--devices",
        dest="demo_devices",
        type=int,
        default=None,
        metavar="N",
        help="simulate N CPU devices (same as phalanx --devices N)",
    )
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=64, help="the global batch")
    p.add_argument("--steps-per-execution", type=int, default=1)
    p.add_argument("--logdir", default="logs/demo", help="TensorBoard logs ('' for none)")
    p.add_argument("--verbose", type=int, default=None, help="0 silent, 1 bar, 2 a line per epoch")
    p.set_defaults(handler=run)


def _load(args):
    import phalanx

    if args.dataset == "digits":
        return phalanx.datasets.digits.load_data()
    (x, y), (xt, yt) = phalanx.datasets.mnist.load_data(args.data_dir)
    prep = lambda a: (a.reshape(len(a), -1) / 255.0).astype(np.float32)  # noqa: E731
    return (prep(x), y.astype(np.int32)), (prep(xt), yt.astype(np.int32))


class _EpochTimer:
    """Times each epoch (a callback), for the throughput line."""

    def __init__(self):
        from phalanx.callbacks import Callback

        timer = self

        class _Timer(Callback):
            def on_epoch_begin(self, epoch, logs=None):
                timer._start = time.perf_counter()

            def on_epoch_end(self, epoch, logs=None):
                timer.seconds.append(time.perf_counter() - timer._start)

        self.seconds: list[float] = []
        self.callback = _Timer()


def run(args: argparse.Namespace) -> int:
    """Trains, evaluates and reports; returns the exit status."""
    import phalanx
    from phalanx import layers

    if args.demo_devices is not None:
        phalanx.cluster.set_cpu_device_count(args.demo_devices)
    started = time.perf_counter()
    (x, y), (xt, yt) = _load(args)
    choice = choose_strategy(args.strategy)
    strategy = choice.build()
    verbose = args.verbose if args.verbose is not None else 1
    replicas = strategy.num_replicas_in_sync
    print(
        f"phalanx demo: {args.dataset} ({len(x)} train, {len(xt)} test) on "
        f"{choice.class_name} ({replicas} replica{'s' if replicas > 1 else ''}; {choice.reason})"
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
    if args.logdir:
        callbacks.append(phalanx.callbacks.TensorBoard(log_dir=args.logdir))
    model.fit(
        x,
        y,
        batch_size=args.batch_size,
        epochs=args.epochs,
        verbose=verbose,
        callbacks=callbacks,
        validation_data=(xt, yt),
    )
    loss, accuracy = model.evaluate(xt, yt, batch_size=args.batch_size, verbose=0)
    steady = timer.seconds[1:] or timer.seconds
    throughput = len(x) / statistics.median(steady)
    print(f"test accuracy: {accuracy:.4f}  test loss: {loss:.4f}")
    print(
        f"throughput: {throughput:,.0f} examples/s (median epoch after the first); "
        f"total time {time.perf_counter() - started:.1f} s"
    )
    if args.logdir:
        print(f"TensorBoard logs: {args.logdir}  (tensorboard --logdir {args.logdir})")
    return 0
