"""``fit`` on the seeds' input pipelines, phalanx side by side with TensorFlow.

The seeds' MLP (784-128-10, relu then softmax, Adam, sparse categorical
cross-entropy), global batch 1024, 60000 MNIST-shaped examples, fed by:

- ``arrays``: numpy ``x``/``y`` straight into ``fit`` (shuffled);
- ``memory``: ``from_tensor_slices -> shuffle(10000) -> batch(drop_remainder)
  -> prefetch`` over float32 arrays;
- ``map+cache``: uint8 28x28 images, ``from_tensor_slices -> map(scale) ->
  cache -> shuffle -> batch -> prefetch``;
- ``seed map``: the seeds' ``get_dataset``: ``from_tensor_slices -> map(scale)
  -> shuffle -> repeat -> batch``, ``steps_per_epoch`` given;
- ``tfrecord``: the README's ``list_files -> interleave(TFRecordDataset) ->
  shuffle -> batch -> map(parse_example) -> prefetch`` over 4 files (with a
  ``repeat`` and ``steps_per_epoch``: TensorFlow cannot count the records);

each with ``steps_per_execution`` 1 or 50, on one device (and ``memory`` on
two: ``MirroredStrategy`` over 2 simulated CPU devices, 2 logical CPUs for
TensorFlow). Prints steady-state examples/s (the median epoch after the first,
which compiles; 6 epochs by default, as phalanx's first 2-3 epochs on streamed
input also page-fault fresh host buffer sets), per second of wall time and per
second of the process's CPU time (the steadier figure when other work shares
the machine), each a median over ``--rounds`` rounds; every framework runs in
its own process, and a round runs each once, so all see the same load.
``--only tfrecord,calls`` runs only those pipelines (and the ``fit`` calls).
The ratio columns are phalanx / TensorFlow. Then phalanx alone: ``fit(x, y,
epochs=1)`` called 10 times, and ``fit`` with a validation pass every epoch,
against one long ``fit`` in the same process (steady state = 1.0).

``--before SRC`` also runs another phalanx (``PYTHONPATH=SRC``, e.g. an
older commit's ``src``) in the same rounds: the ``x`` column is this one over it.

TensorFlow runs when ``tensorflow`` and ``tf_keras`` import in this
interpreter (``pip install -e ".[bench]"``) or in the one ``--tf-python``
names (a separate environment, so that TensorFlow's pins do not touch
phalanx's); phalanx itself never imports it. Without it the TensorFlow
columns say so.

    python bench/fit_vs_tensorflow.py [--epochs 6] [--rounds 3] [--tf-python PATH] [--only tfrecord]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

N, D, H, C, BATCH, SHUFFLE = 60000, 784, 128, 10, 1024, 10000
STEPS = N // BATCH
CASES = [  # (pipeline, steps_per_execution, devices)
    ("arrays", 50, 1),
    ("memory", 1, 1),
    ("memory", 50, 1),
    ("map+cache", 50, 1),
    ("seed map", 1, 1),
    ("seed map", 50, 1),
    ("tfrecord", 50, 1),
    ("arrays", 50, 2),
    ("memory", 1, 2),
    ("memory", 50, 2),
]
FRAMEWORKS = ("phalanx", "tf_keras", "keras3")
CLOCKS = {  # on a shared machine, CPU time is the steadier measure of the work done
    "wall": "wall time",
    "cpu": "the process's CPU time (all its threads)",
}


def _arrays():
    import numpy as np

    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (N, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, C, N).astype(np.int64)
    return images, labels


def write_records(folder: str) -> str:
    """The images as 4 TFRecord files of ``tf.train.Example`` (image: 784 float32, label)."""
    from phalanx import data

    images, labels = _arrays()
    flat = images.reshape(N, D).astype("float32") / 255.0
    for shard in range(4):
        with data.TFRecordWriter(os.path.join(folder, f"train-{shard}.tfrecord")) as writer:
            for i in range(shard, N, 4):
                writer.write(data.serialize_example({"image": flat[i], "label": labels[i]}))
    return os.path.join(folder, "train-*.tfrecord")


# -- phalanx -------------------------------------------------------------------------------


def _phalanx_dataset(name: str, pattern: str):
    import numpy as np

    from phalanx import data

    images, labels = _arrays()

    def scale(x, y):
        return x.astype(np.float32).reshape(*x.shape[:-2], D) / np.float32(255.0), y

    if name == "memory":
        x = images.reshape(N, D).astype(np.float32) / np.float32(255.0)
        ds = data.Dataset.from_tensor_slices((x, labels)).shuffle(SHUFFLE, seed=0)
        return ds.batch(BATCH, drop_remainder=True).prefetch(2)
    if name == "map+cache":
        ds = data.Dataset.from_tensor_slices((images, labels)).map(scale).cache()
        return ds.shuffle(SHUFFLE, seed=0).batch(BATCH, drop_remainder=True).prefetch(2)
    if name == "seed map":
        ds = data.Dataset.from_tensor_slices((images, labels)).map(scale)
        return ds.shuffle(SHUFFLE, seed=0).repeat().batch(BATCH)
    spec = {
        "image": data.FixedLenFeature([D], np.float32),
        "label": data.FixedLenFeature([], np.int64),
    }

    def parse(records):
        parsed = data.parse_example(records, spec)
        return parsed["image"], parsed["label"]

    files = data.Dataset.list_files(pattern, shuffle=True, seed=0)
    return (
        files.interleave(data.TFRecordDataset, cycle_length=4, block_length=1)
        .shuffle(SHUFFLE, seed=1)
        .batch(BATCH, drop_remainder=True)
        .map(parse)
        .repeat()  # steps_per_epoch given: TensorFlow cannot count files' records
        .prefetch(2)
    )


def _phalanx_model(spe: int, devices: int):
    import jax

    import phalanx
    from phalanx import layers

    strategy = (
        phalanx.OneDeviceStrategy()
        if devices == 1
        else phalanx.MirroredStrategy(jax.devices()[:devices])
    )
    with strategy.scope():
        model = phalanx.Sequential(
            [
                layers.Input(shape=(D,)),
                layers.Dense(H, activation="relu"),
                layers.Dense(C, activation="softmax"),
            ]
        )
        model.compile(
            optimizer="adam", loss="sparse_categorical_crossentropy", steps_per_execution=spe
        )
    return model


def _phalanx_timer(times: list):
    import phalanx

    class Timer(phalanx.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.t = (time.perf_counter(), time.process_time())

        def on_epoch_end(self, epoch, logs=None):
            times.append((time.perf_counter() - self.t[0], time.process_time() - self.t[1]))

    return Timer()


def _rates(times: list, examples: int = STEPS * BATCH, skip: int = 1) -> dict:
    """Examples per second of wall time and per second of this process's CPU time (all
    its threads), from the median epoch after the first ``skip`` (which compile)."""
    return {
        "wall": examples / statistics.median(t[0] for t in times[skip:]),
        "cpu": examples / statistics.median(t[1] for t in times[skip:]),
    }


def _warm_epochs(name: str) -> int:
    """Epochs before the steady state: a cache fills in the first, and phalanx then
    compiles the program that reads it as indices in the second."""
    return 2 if name == "map+cache" else 1


def phalanx_case(name: str, spe: int, devices: int, epochs: int, pattern: str) -> dict:
    """Steady-state examples/s of phalanx ``fit`` on one pipeline."""
    model = _phalanx_model(spe, devices)
    times: list[float] = []
    epochs += _warm_epochs(name) - 1
    if name == "arrays":
        images, labels = _arrays()
        x = images.reshape(N, D).astype("float32") / 255.0
        model.fit(
            x, labels, batch_size=BATCH, epochs=epochs, verbose=0, callbacks=[_phalanx_timer(times)]
        )
    else:
        steps = STEPS if name in ("seed map", "tfrecord") else None
        ds = _phalanx_dataset(name, pattern)
        model.fit(
            ds, epochs=epochs, steps_per_epoch=steps, verbose=0, callbacks=[_phalanx_timer(times)]
        )
    return _rates(times, skip=_warm_epochs(name))


def phalanx_calls(epochs: int) -> dict:
    """``fit(epochs=1)`` x10 and ``fit`` with validation each epoch, vs one long ``fit``."""
    images, labels = _arrays()
    x = images.reshape(N, D).astype("float32") / 255.0
    model = _phalanx_model(50, 1)
    times: list[float] = []
    model.fit(
        x, labels, batch_size=BATCH, epochs=epochs + 2, verbose=0, callbacks=[_phalanx_timer(times)]
    )
    steady = _rates(times, N)
    calls = []
    for _ in range(10):
        start = (time.perf_counter(), time.process_time())
        model.fit(x, labels, batch_size=BATCH, epochs=1, verbose=0)
        calls.append((time.perf_counter() - start[0], time.process_time() - start[1]))
    val = (x[:10000], labels[:10000])
    times.clear()
    model.fit(
        x,
        labels,
        batch_size=BATCH,
        epochs=epochs + 2,
        verbose=0,
        validation_data=val,
        callbacks=[_phalanx_timer(times)],
    )
    repeated, validated = _rates([None, *calls], N), _rates(times, N)
    out = {}
    for clock in ("wall", "cpu"):
        out[f"fit(epochs=1) x10|{clock}"] = repeated[clock] / steady[clock]
        out[f"fit + validation each epoch|{clock}"] = validated[clock] / steady[clock]
    return out


# -- TensorFlow ----------------------------------------------------------------------------


def _tf_dataset(tf, name: str, pattern: str):
    images, labels = _arrays()

    def scale(x, y):
        return tf.reshape(tf.cast(x, tf.float32) / 255.0, [D]), y

    if name == "memory":
        x = images.reshape(N, D).astype("float32") / 255.0
        ds = tf.data.Dataset.from_tensor_slices((x, labels)).shuffle(SHUFFLE, seed=0)
        return ds.batch(BATCH, drop_remainder=True).prefetch(2)
    if name == "map+cache":
        ds = tf.data.Dataset.from_tensor_slices((images, labels)).map(scale).cache()
        return ds.shuffle(SHUFFLE, seed=0).batch(BATCH, drop_remainder=True).prefetch(2)
    if name == "seed map":
        ds = tf.data.Dataset.from_tensor_slices((images, labels)).map(scale)
        return ds.shuffle(SHUFFLE, seed=0).repeat().batch(BATCH)
    spec = {
        "image": tf.io.FixedLenFeature([D], tf.float32),
        "label": tf.io.FixedLenFeature([], tf.int64),
    }

    def parse(records):
        parsed = tf.io.parse_example(records, spec)
        return parsed["image"], parsed["label"]

    files = tf.data.Dataset.list_files(pattern, shuffle=True, seed=0)
    return (
        files.interleave(tf.data.TFRecordDataset, cycle_length=4, block_length=1)
        .shuffle(SHUFFLE, seed=1)
        .batch(BATCH, drop_remainder=True)
        .map(parse)
        .repeat()  # steps_per_epoch given: TensorFlow cannot count files' records
        .prefetch(2)
    )


def tf_case(keras, tf, name, spe, devices, epochs, pattern) -> dict:
    """Steady-state examples/s of TensorFlow ``fit`` on one pipeline."""
    strategy = (
        tf.distribute.OneDeviceStrategy("/cpu:0")
        if devices == 1
        else tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(devices)])
    )
    with strategy.scope():
        model = keras.Sequential(
            [
                keras.Input(shape=(D,)),
                keras.layers.Dense(H, activation="relu"),
                keras.layers.Dense(C, activation="softmax"),
            ]
        )
        model.compile(
            optimizer="adam", loss="sparse_categorical_crossentropy", steps_per_execution=spe
        )
    times: list[float] = []
    epochs += _warm_epochs(name) - 1

    class Timer(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.t = (time.perf_counter(), time.process_time())

        def on_epoch_end(self, epoch, logs=None):
            times.append((time.perf_counter() - self.t[0], time.process_time() - self.t[1]))

    if name == "arrays":
        images, labels = _arrays()
        x = images.reshape(N, D).astype("float32") / 255.0
        model.fit(x, labels, batch_size=BATCH, epochs=epochs, verbose=0, callbacks=[Timer()])
    else:
        steps = STEPS if name in ("seed map", "tfrecord") else None
        ds = _tf_dataset(tf, name, pattern)
        model.fit(ds, epochs=epochs, steps_per_epoch=steps, verbose=0, callbacks=[Timer()])
    return _rates(times, skip=_warm_epochs(name))


def _tf_setup(framework: str):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if framework == "tf_keras":
        os.environ["TF_USE_LEGACY_KERAS"] = "1"
    else:
        os.environ["KERAS_BACKEND"] = "tensorflow"
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    if framework == "tf_keras":
        import tf_keras as keras
    else:
        import keras
    return tf, keras


# -- driver --------------------------------------------------------------------------------


def child(framework: str, devices: int, epochs: int, pattern: str) -> None:
    """Runs one framework's cases on ``devices`` devices; prints one JSON line."""
    out = {}
    only = os.environ.get("BENCH_ONLY", "")
    cases = [c for c in CASES if c[2] == devices and (not only or c[0] in only.split(","))]
    if framework == "phalanx":
        for name, spe, dev in cases:
            for clock, rate in phalanx_case(name, spe, dev, epochs, pattern).items():
                out[f"{name}|{spe}|{dev}|{clock}"] = rate
        if devices == 1 and (not only or "calls" in only.split(",")):
            out.update(phalanx_calls(epochs))
    else:
        tf, keras = _tf_setup(framework)
        for name, spe, dev in cases:
            if framework == "keras3" and dev > 1:
                continue
            for clock, rate in tf_case(keras, tf, name, spe, dev, epochs, pattern).items():
                out[f"{name}|{spe}|{dev}|{clock}"] = rate
    print(json.dumps(out))


def _spawn(python, framework, devices, epochs, pattern, before=None) -> dict:
    env = dict(
        os.environ,
        JAX_PLATFORMS="cpu",
        XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}",
    )
    if framework == "before":  # phalanx from another source tree
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [before, env.get("PYTHONPATH")]))
        framework = "phalanx"
    args = [python, __file__, "--child", framework, "--devices", str(devices)]
    args += ["--epochs", str(epochs), "--pattern", pattern]
    done = subprocess.run(args, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        print(f"{framework} ({devices} devices) failed:\n{done.stderr[-2000:]}", file=sys.stderr)
        return {}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _tf_python(given: str | None) -> str | None:
    """The interpreter that has TensorFlow and tf_keras, or None."""
    for python in [given] if given else [sys.executable]:
        probe = subprocess.run(
            [python, "-c", "import tensorflow, tf_keras, keras"], capture_output=True
        )
        if probe.returncode == 0:
            return python
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tf-python", default=os.environ.get("BENCH_TF_PYTHON"))
    parser.add_argument(
        "--before",
        default=None,
        help="a src/ folder of another phalanx (e.g. an older commit): run it too, same rounds",
    )
    parser.add_argument(
        "--only", default="", help="pipelines to run, comma-separated (and 'calls')"
    )
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--devices", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--pattern", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child, args.devices, args.epochs, args.pattern)
    os.environ["BENCH_ONLY"] = args.only  # the children read it
    tf_python = _tf_python(args.tf_python)
    frameworks = FRAMEWORKS if tf_python else ("phalanx",)
    if args.before:
        frameworks = ("before", *frameworks)
    results: dict[str, dict[str, list[float]]] = {f: {} for f in ("before", *FRAMEWORKS)}
    with tempfile.TemporaryDirectory() as folder:
        pattern = write_records(folder)
        for done in range(1, args.rounds + 1):
            for framework in frameworks:
                python = tf_python if framework in ("tf_keras", "keras3") else sys.executable
                for devices in (1, 2):
                    if framework == "keras3" and devices == 2:
                        continue
                    res = _spawn(python, framework, devices, args.epochs, pattern, args.before)
                    for key, value in res.items():
                        results[framework].setdefault(key, []).append(value)
            _report(results, done, tf_python)  # after every round: a long run shows progress


def _report(results: dict, rounds: int, tf_python: str | None) -> None:
    med = {f: {k: statistics.median(v) for k, v in r.items()} for f, r in results.items()}
    print(f"MLP {D}-{H}-{C}, Adam, {N} examples, global batch {BATCH}; steady-state examples/s,")
    print(f"medians of {rounds} rounds; ratio = phalanx / TensorFlow")
    if not tf_python:
        print("TensorFlow not found (pip install -e '.[bench]', or --tf-python PATH)")
    for clock, what in CLOCKS.items():
        print(f"-- examples per second of {what}")
        head = f"{'pipeline':<12} {'spe':>3} {'dev':>3} {'phalanx':>9}"
        if med["before"]:
            head += f" {'before':>9} {'x':>5}"
        print(head + f" {'tf_keras':>9} {'ratio':>5} {'Keras 3':>9} {'ratio':>5}")
        for name, spe, devices in CASES:
            key = f"{name}|{spe}|{devices}|{clock}"
            ours = med["phalanx"].get(key)
            row = f"{name:<12} {spe:>3} {devices:>3} {_fmt(ours)}"
            if med["before"]:
                row += f" {_fmt(med['before'].get(key))} {_ratio(ours, med['before'].get(key))}"
            for framework in ("tf_keras", "keras3"):
                theirs = med[framework].get(key)
                row += f" {_fmt(theirs)} {_ratio(ours, theirs)}"
            print(row)
        for name in ("fit(epochs=1) x10", "fit + validation each epoch"):
            key = f"{name}|{clock}"
            if key in med["phalanx"]:
                line = f"phalanx {name}: {med['phalanx'][key]:.2f} of one long fit's rate"
                if key in med["before"]:
                    line += f" (before: {med['before'][key]:.2f})"
                print(line)
    print(flush=True)


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:>5.2f}" if a and b else f"{'-':>5}"


def _fmt(value: float | None) -> str:
    return f"{value:>9,.0f}" if value else f"{'-':>9}"


if __name__ == "__main__":
    main()
