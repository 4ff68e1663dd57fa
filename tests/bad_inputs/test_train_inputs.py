"""Bad inputs to ``phalanx.train`` (``fit``/``evaluate``/``predict``, losses, schedules, saving):
each raises a phalanx error naming the argument, value, step or file, through the real calls."""

import math

import jax
import numpy as np
import pytest
from catalog import Case, run

import phalanx
from phalanx import layers
from phalanx.errors import (
    CompileArgumentError,
    FitInputError,
    LabelOutOfRangeError,
    LayerArgumentError,
    LearningRateValueError,
    LossArgumentError,
    OptimizerArgumentError,
    UnknownNameError,
    WeightsFileError,
)

schedules = phalanx.optimizers.schedules

X = np.random.default_rng(0).random((8, 3), np.float32)
Y = np.random.default_rng(1).random((8, 1), np.float32)


def _model(loss="mse", units=1, learning_rate=None):
    strategy = phalanx.OneDeviceStrategy(jax.devices()[0])
    with strategy.scope():
        model = phalanx.Sequential([layers.Input(shape=(3,)), layers.Dense(units)])
        optimizer = "sgd" if learning_rate is None else phalanx.optimizers.SGD(learning_rate)
        model.compile(optimizer=optimizer, loss=loss)
    return model


def _fit(*args, model=None, **kwargs):
    kwargs.setdefault("verbose", 0)
    return lambda: (model or _model()).fit(*args, **kwargs)


def _sparse_fit(labels):
    model = _model("sparse_categorical_crossentropy", units=4)
    return lambda: model.fit(
        X, np.asarray(labels, np.float32), batch_size=4, verbose=0, shuffle=False
    )


def _evaluate_twice(generator):
    model = _model()
    model.evaluate(generator, verbose=0)
    return model.evaluate(generator, verbose=0)


def _schedule_fit(schedule, **kwargs):
    return _fit(X, Y, model=_model(learning_rate=schedule), batch_size=2, **kwargs)


def _stream(*batches):
    return (b for b in batches)  # a generator of (x, y[, sample_weight]) batches


def _file(tmp_path):
    (tmp_path / "f").write_text("a file, not a folder")
    return tmp_path / "f"


def _checkpoint(tmp_path, name):
    ckpt = phalanx.callbacks.ModelCheckpoint(str(_file(tmp_path) / name))
    model = _model()
    model.fit(X, Y, epochs=1, verbose=0)  # built and trained once without it
    weights = [w.copy() for w in model.get_weights()]
    with pytest.raises(WeightsFileError):
        model.fit(X, Y, epochs=1, verbose=0, callbacks=[ckpt])
    # refused in on_train_begin: no step ran
    for before, after in zip(weights, model.get_weights(), strict=True):
        np.testing.assert_array_equal(before, after)
    return model.fit(X, Y, epochs=1, verbose=0, callbacks=[ckpt])


CASES = [
    # x, y and sample_weight of a kind no adapter takes
    Case(
        "fit str x",
        _fit("train.tfrecord", Y),
        FitInputError,
        r"fit's x is a str \('train.tfrecord'\), not data.*TFRecordDataset",
    ),
    Case(
        "evaluate str x",
        lambda: _model().evaluate("abc", verbose=0),
        FitInputError,
        r"evaluate's x is a str",
    ),
    Case(
        "predict bytes x",
        lambda: _model().predict(b"abc", verbose=0),
        FitInputError,
        r"predict's x is a bytes",
    ),
    Case(
        "fit str array x",
        _fit(np.array(["a"] * 8), Y),
        FitInputError,
        r"fit's x is an array of dtype <U1 \(strings\); models take numbers",
    ),
    Case(
        "fit object array y",
        _fit(X, np.array([object()] * 8)),
        FitInputError,
        r"fit's y is an array of dtype object \(Python objects\)",
    ),
    Case(
        "fit dict x with a str",
        _fit({"a": "abc"}, Y),
        FitInputError,
        r"fit's x\['a'\] is a str \('abc'\)",
    ),
    Case(
        "fit list of rows",
        _fit([[1.0, 2.0, 3.0]] * 8, Y),
        FitInputError,
        r"fit's x is a Python list of 8 rows of numbers. As in Keras 3.*np.asarray\(x",
    ),
    Case(
        "fit list of rows without y",
        _fit([[1.0, 2.0, 3.0]] * 8),
        FitInputError,
        r"fit's x is a Python list of 8 rows",
    ),
    Case(
        "fit y list of numbers",
        _fit(X, [0.0] * 8),
        FitInputError,
        r"fit's y is a Python list of 8 rows of numbers.*np.asarray\(y",
    ),
    Case(
        "predict list of one row",
        lambda: _model().predict([[1.0, 2.0, 3.0]], verbose=0),
        FitInputError,
        r"predict's x is a Python list of 1 row of numbers",
    ),
    Case(
        "fit tuple of rows",
        _fit(((1.0, 2.0, 3.0),) * 8, Y),
        FitInputError,
        r"fit's x is a Python tuple of 8 rows",
    ),
    Case("fit epochs -1", _fit(X, Y, epochs=-1), FitInputError, r"epochs must be an int >= 0"),
    Case(
        "fit validation_freq 0",
        _fit(X, Y, validation_freq=0),
        FitInputError,
        r"validation_freq must be a positive int, got 0",
    ),
    Case(
        "fit given an input function",
        _fit(lambda: (X, Y)),
        FitInputError,
        r"fit\(\) got the function <lambda>, not data.*Call it",
    ),
    # numbers of examples
    Case(
        "fit x and y rows differ",
        _fit(X, Y[:6]),
        FitInputError,
        r"x has 8 \(shape \(8, 3\)\), y has 6 \(shape \(6, 1\)\)",
    ),
    Case(
        "fit sample_weight short",
        _fit(X, Y, sample_weight=np.ones(5)),
        FitInputError,
        r"fit's sample_weight needs one weight per example: shape \(8,\) .*got shape \(5,\)",
    ),
    Case(
        "fit sample_weight 2-D",
        _fit(X, Y, sample_weight=np.ones((8, 3))),
        FitInputError,
        r"sample_weight .*got shape \(8, 3\).*class_weight",
    ),
    Case(
        "fit sample_weight with validation_split",
        _fit(X, Y, sample_weight=np.ones(9), validation_split=0.25),
        FitInputError,
        r"got shape \(9,\)",
    ),
    Case(
        "evaluate sample_weight long",
        lambda: _model().evaluate(X, Y, sample_weight=np.ones(10), verbose=0),
        FitInputError,
        r"evaluate's sample_weight .*got shape \(10,\)",
    ),
    Case(
        "fit validation_data rows differ",
        _fit(X, Y, validation_data=(X, Y[:3])),
        FitInputError,
        r"fit's validation_data inputs .*y has 3",
    ),
    Case(
        "fit validation_data a str",
        _fit(X, Y, validation_data="val.tfrecord"),
        FitInputError,
        r"fit's validation_data x is a str \('val.tfrecord'\)",
    ),
    Case(
        "fit validation_data sample_weight",
        _fit(X, Y, validation_data=(X, Y, np.ones(3))),
        FitInputError,
        r"fit's validation_data sample_weight .*got shape \(3,\)",
    ),
    Case(
        "streamed batch sample_weight short",
        _fit(_stream((X[:4], Y[:4], np.ones(4)), (X[4:], Y[4:], np.ones(3)))),
        FitInputError,
        r"Batch 1 of the input has 4 examples in x, but its sample_weight has shape \(3,\)",
    ),
    Case(
        "streamed batch y short",
        _fit(_stream((X[:4], Y[:3]))),
        FitInputError,
        r"Batch 0 of the input has 4 examples in x, but its y has shape \(3, 1\)",
    ),
    # learning rates
    Case(
        "schedule inf at step 2",
        _schedule_fit(schedules.InverseTimeDecay(0.1, 1, -0.5), epochs=3),
        LearningRateValueError,
        r"schedule InverseTimeDecay\(initial_learning_rate=0.1.*gave inf at step 2 "
        r"\(optimizer.iterations; this fit takes steps 0..11\)",
    ),
    Case(
        "lambda schedule nan in the second epoch",
        _schedule_fit(lambda step: 0.1 * (step - 5) / (step - 5), epochs=2),
        LearningRateValueError,
        r"schedule <lambda>.* gave nan at step 5 .*steps 0..7",
    ),
    Case(
        "LearningRateScheduler nan",
        _fit(
            X,
            Y,
            callbacks=[phalanx.callbacks.LearningRateScheduler(lambda epoch, lr: math.nan)],
        ),
        LearningRateValueError,
        r"learning rate must be a finite number; got nan.*LearningRateScheduler",
    ),
    # sparse losses: labels must be class indices
    Case(
        "sparse loss half label",
        _sparse_fit([0, 1, 2, 3, 0.5, 1, 2, 3]),
        LabelOutOfRangeError,
        r"label value of 0.5, which is not a class index \(a whole number in \[0, 4\)\) "
        r"\(sparse_categorical_crossentropy\), at batch 1",
    ),
    Case(
        "sparse loss nan label",
        _sparse_fit([0, 1, 2, math.nan, 0, 1, 2, 3]),
        LabelOutOfRangeError,
        r"label value of nan, which is not a class index .*at batch 0",
    ),
    Case(
        "sparse loss label out of range",
        _sparse_fit([0, 1, 2, 4.0, 0, 1, 2, 3]),
        LabelOutOfRangeError,
        r"label value of 4 which is outside the valid range of \[0, 4\)",
    ),
    # paths
    Case(
        "save_weights under a file",
        lambda tmp_path: _model().save_weights(str(_file(tmp_path) / "w.weights.npz")),
        WeightsFileError,
        r"Cannot write '.*/f/w.weights.npz': '.*/f' is a file, not a directory",
    ),
    Case(
        "ModelCheckpoint under a file",
        lambda tmp_path: _checkpoint(tmp_path, "ckpt.weights.npz"),
        WeightsFileError,
        r"ModelCheckpoint cannot write '.*/f/ckpt.weights.npz': '.*/f' is a file, not a folder",
    ),
    Case(
        "ModelCheckpoint formatted under a file",
        lambda tmp_path: _checkpoint(tmp_path, "{epoch:02d}/w.npz"),
        WeightsFileError,
        r"'.*/f' is a file, not a folder",
    ),
    # steps, class_weight and empty inputs
    Case(
        "fit Dataset steps_per_epoch 0",
        _fit(phalanx.data.Dataset.from_tensor_slices((X, Y)).batch(4), steps_per_epoch=0),
        FitInputError,
        r"steps_per_epoch must be a positive int, got 0 \(int\)",
    ),
    Case(
        "fit Dataset steps_per_epoch a str",
        _fit(phalanx.data.Dataset.from_tensor_slices((X, Y)).batch(4), steps_per_epoch="3"),
        FitInputError,
        r"steps_per_epoch must be a positive int, got '3' \(str\)",
    ),
    Case(
        "fit arrays with batch_size and steps_per_epoch 0",
        _fit(X, Y, batch_size=4, steps_per_epoch=0),
        FitInputError,
        r"steps_per_epoch must be a positive int, got 0",
    ),
    Case(
        "evaluate Dataset steps -1",
        lambda: _model().evaluate(
            phalanx.data.Dataset.from_tensor_slices((X, Y)).batch(4), steps=-1, verbose=0
        ),
        FitInputError,
        r"got -1 .*evaluate's or predict's steps",
    ),
    Case(
        "fit empty Dataset",
        _fit(phalanx.data.Dataset.from_tensor_slices((X[:0], Y[:0])).batch(4)),
        FitInputError,
        r"The input yielded no batches: the dataset is empty",
    ),
    Case(
        "fit empty filtered Dataset",
        _fit(phalanx.data.Dataset.from_tensor_slices((X, Y)).filter(lambda x, y: False).batch(4)),
        FitInputError,
        r"The input yielded no batches",
    ),
    Case(
        "evaluate a used-up generator",
        lambda: _evaluate_twice(_stream((X[:4], Y[:4]))),
        FitInputError,
        r"The input yielded no batches: .*a generator that was used up already",
    ),
    Case(
        "fit empty arrays",
        _fit(X[:0], Y[:0]),
        FitInputError,
        r"The input arrays hold no examples",
    ),
    Case(
        "fit class_weight a list",
        _fit(X, Y, class_weight=[1.0, 2.0]),
        FitInputError,
        r"class_weight must be a dict \{class index: weight\}, got list \[1.0, 2.0\]",
    ),
    Case(
        "fit class_weight named classes",
        _fit(X, Y, class_weight={"cat": 1.0}),
        FitInputError,
        r"class_weight maps class indices \(ints >= 0\) to weights \(numbers\); got 'cat': 1.0",
    ),
    Case(
        "fit class_weight negative class",
        _fit(X, Y, class_weight={-1: 2.0}),
        FitInputError,
        r"got -1: 2.0",
    ),
    # compile's arguments
    Case(
        "compile steps_per_execution 0",
        lambda: _model().compile("sgd", "mse", steps_per_execution=0),
        CompileArgumentError,
        r"steps_per_execution must be >= 1 .*got 0 \(int\)",
    ),
    Case(
        "compile steps_per_execution float",
        lambda: _model().compile("sgd", "mse", steps_per_execution=2.0),
        CompileArgumentError,
        r"steps_per_execution .*got 2.0 \(float\)",
    ),
    Case(
        "compile unknown optimizer",
        lambda: _model().compile(optimizer="nonesuch", loss="mse"),
        UnknownNameError,
        r"Unknown optimizer 'nonesuch'. The known optimizer names are \['adadelta', .*'adam',",
    ),
    Case(
        "compile misspelt optimizer",
        lambda: _model().compile(optimizer="adamm", loss="mse"),
        UnknownNameError,
        r"Unknown optimizer 'adamm'. Did you mean 'adam'\?",
    ),
    Case(
        "compile unknown loss",
        lambda: _model().compile(optimizer="sgd", loss="nonesuch"),
        UnknownNameError,
        r"Unknown loss 'nonesuch'. The known loss names are \[.*'mse'.*\]. Or give",
    ),
    Case(
        "compile misspelt loss",
        lambda: _model().compile(optimizer="sgd", loss="sparse_categorical_crosentropy"),
        UnknownNameError,
        r"Did you mean 'sparse_categorical_crossentropy'\?",
    ),
    Case(
        "compile unknown metric",
        lambda: _model().compile(optimizer="sgd", loss="mse", metrics=["nonesuch"]),
        UnknownNameError,
        r"Unknown metric 'nonesuch'. The known metric names are \['accuracy', 'AUC',",
    ),
    Case(
        "compile misspelt metric",
        lambda: _model().compile(optimizer="sgd", loss="mse", metrics=["Precison"]),
        UnknownNameError,
        r"Did you mean 'Precision'\?",
    ),
    Case(
        "compile metrics not a list",
        lambda: _model().compile(optimizer="sgd", loss="mse", metrics="mae"),
        CompileArgumentError,
        r"metrics must be a list, got str: write metrics=\['mae'\]",
    ),
    Case(
        "compile optimizer an int",
        lambda: _model().compile(optimizer=3, loss="mse"),
        CompileArgumentError,
        r"Cannot use int 3 as an optimizer",
    ),
    # constructor arguments a typo or a unit slip gets wrong
    Case(
        "SGD momentum 2",
        lambda: phalanx.optimizers.SGD(momentum=2),
        OptimizerArgumentError,
        r"SGD momentum must be a number in \[0, 1\], got 2; e.g. SGD\(learning_rate=0.01, "
        r"momentum=0.9\)",
    ),
    Case(
        "SGD momentum a word",
        lambda: phalanx.optimizers.SGD(momentum="high"),
        OptimizerArgumentError,
        r"SGD momentum .*got 'high'",
    ),
    Case(
        "AdamW without weight_decay",
        lambda: phalanx.optimizers.AdamW(weight_decay=None),
        OptimizerArgumentError,
        r"AdamW needs a weight_decay",
    ),
    Case(
        "two clipping arguments",
        lambda: phalanx.optimizers.Adam(clipnorm=1.0, clipvalue=0.5),
        OptimizerArgumentError,
        r"Only one of clipnorm, clipvalue and global_clipnorm",
    ),
    Case(
        "loss reduction unknown",
        lambda: phalanx.losses.MeanSquaredError(reduction="avg"),
        LossArgumentError,
        r"reduction must be one of .*got 'avg'",
    ),
    Case(
        "fit one-hot targets of the wrong width",
        _fit(
            X,
            np.eye(3, dtype=np.float32)[np.arange(8) % 3],
            model=_model("categorical_crossentropy", units=4),
        ),
        LossArgumentError,
        r"categorical_crossentropy expects one-hot targets of the output's shape. Received "
        r"targets of shape \(3,\) and predictions of shape \(4,\) per example",
    ),
    Case(
        "Adam negative learning rate",
        lambda: phalanx.optimizers.Adam(-1.0),
        LearningRateValueError,
        r"Adam\(learning_rate=...\) takes a finite number >= 0 or a schedule.*got -1.0",
    ),
    Case(
        "SGD learning rate as a word",
        lambda: phalanx.optimizers.SGD("fast"),
        LearningRateValueError,
        r"SGD\(learning_rate=...\).*got 'fast' \(str\)",
    ),
    Case(
        "Dense units as a str",
        lambda: layers.Dense("128"),
        LayerArgumentError,
        r"Dense units must be a positive int, got '128' \(str\); e.g. Dense\(128\)",
    ),
]


@pytest.mark.parametrize("case", [c.param() for c in CASES])
def test_bad_train_input(case, tmp_path):
    run(case, tmp_path)


def test_whole_number_float_labels_train_as_integer_labels():
    """Keras accepts float labels that are whole numbers: the same run as int32 labels."""
    labels = np.array([0, 1, 2, 3, 3, 2, 1, 0])
    runs = []
    for y in (labels.astype(np.int32), labels.astype(np.float32)):
        model = _model("sparse_categorical_crossentropy", units=4)
        model.set_weights([np.full_like(w, 0.1) for w in model.get_weights()])
        history = model.fit(X, y, batch_size=4, epochs=2, verbose=0, shuffle=False)
        runs.append((history.history["loss"], model.get_weights()))
    assert runs[0][0] == runs[1][0]
    for a, b in zip(runs[0][1], runs[1][1], strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_schedule_is_checked_only_over_the_steps_fit_takes():
    """NaN after the last step of this fit is not this fit's problem; the next fit's check
    starts at the optimizer's count."""
    model = _model(learning_rate=lambda step: 0.01 * (step - 8) / (step - 8))  # nan at 8
    model.fit(X, Y, batch_size=2, epochs=2, verbose=0)  # steps 0..7
    assert model.optimizer.iterations == 8
    with pytest.raises(LearningRateValueError, match=r"gave nan at step 8 .*steps 8..11"):
        model.fit(X, Y, batch_size=2, epochs=1, verbose=0)
