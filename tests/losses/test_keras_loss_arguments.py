"""Keras 3's loss arguments on every phalanx loss that Keras gives them (issue 26 item 6):
``ignore_class=``, ``axis=``, ``dtype=`` and every reduction, compared with Keras 3 case by
case (values, gradients, configs, the raising cases), and inside ``compile``/``fit`` (with
sample_weight, and 8 replicas against 1 device)."""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import phalanx as px
from phalanx import layers
from phalanx.errors import CompileArgumentError, LossArgumentError

os.environ.setdefault("KERAS_BACKEND", "jax")
keras = pytest.importorskip("keras")

RNG = np.random.default_rng(7)
PROBS = RNG.random((6, 4)).astype(np.float32) + 0.05
LOGITS = RNG.normal(size=(6, 4)).astype(np.float32)
LABELS = np.array([0, 2, 1, 2, 3, 2])
WEIGHTS = np.array([1.0, 2.0, 0.5, 0.0, 3.0, 1.5], np.float32)
SEQ_PROBS = RNG.random((3, 5, 4)).astype(np.float32) + 0.05
SEQ_LABELS = np.array([[0, 2, 1, 2, 3], [2, 2, 1, 0, 0], [1, 2, 3, 3, 2]])
ONE_HOT = np.eye(4, dtype=np.float32)[LABELS]
CUBE = RNG.random((3, 4, 5)).astype(np.float32) + 0.05
CUBE_TRUE = RNG.random((3, 4, 5)).round().astype(np.float32)
REDUCTIONS = ["sum_over_batch_size", "sum", "mean", "mean_with_sample_weight", None, "none"]


def _both(cls, **kwargs):
    return getattr(px.losses, cls)(**kwargs), getattr(keras.losses, cls)(**kwargs)


def _per_example(values):
    """Keras's "none" values as phalanx's: each example's mean over its entries."""
    return jnp.mean(values, axis=tuple(range(1, values.ndim))) if values.ndim > 1 else values


def _compare(ours, theirs, y_true, y_pred, sample_weight=None, rtol=1e-5, atol=1e-6):
    got = np.asarray(ours(y_true, y_pred, sample_weight), np.float32)
    want = np.asarray(theirs(y_true, y_pred, sample_weight), np.float32)
    if want.ndim > 1:  # "none": phalanx gives each example's mean over its entries
        want = want.mean(axis=tuple(range(1, want.ndim)))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("ignore_class", [None, 2, 0, -1])
@pytest.mark.parametrize("from_logits", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_ignore_class_and_reductions_as_keras(reduction, ignore_class, from_logits, weighted):
    labels = LABELS if ignore_class != -1 else np.where(LABELS == 2, -1, LABELS)
    kwargs = {"from_logits": from_logits, "ignore_class": ignore_class, "reduction": reduction}
    ours, theirs = _both("SparseCategoricalCrossentropy", **kwargs)
    y_pred = LOGITS if from_logits else PROBS
    _compare(ours, theirs, labels, y_pred, WEIGHTS if weighted else None)


@pytest.mark.parametrize("reduction", ["sum_over_batch_size", "sum", "mean_with_sample_weight"])
def test_ignore_class_on_sequences_divides_by_the_valid_entries_as_keras(reduction):
    ours, theirs = _both("SparseCategoricalCrossentropy", ignore_class=2, reduction=reduction)
    _compare(ours, theirs, SEQ_LABELS, SEQ_PROBS)
    weight = np.array([1.0, 0.0, 2.0], np.float32)[:, None] * np.ones((3, 5), np.float32)
    _compare(ours, theirs, SEQ_LABELS, SEQ_PROBS, weight)
    # every entry ignored: 0, as Keras's divide_no_nan
    _compare(ours, theirs, np.full((3, 5), 2), SEQ_PROBS)


@pytest.mark.parametrize("from_logits", [False, True])
def test_ignore_class_gradients_as_keras(from_logits):
    ours, theirs = _both("SparseCategoricalCrossentropy", ignore_class=2, from_logits=from_logits)
    y_pred = jnp.asarray(LOGITS if from_logits else PROBS)
    for sw in (None, WEIGHTS):
        got = jax.grad(lambda p, sw=sw: ours(LABELS, p, sw))(y_pred)
        want = jax.grad(lambda p, sw=sw: theirs(LABELS, p, sw))(y_pred)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
        assert np.all(np.asarray(got)[LABELS == 2] == 0)


@pytest.mark.parametrize(
    ("cls", "kwargs", "y_true", "y_pred"),
    [
        ("CategoricalCrossentropy", {"axis": 1}, CUBE_TRUE, CUBE),
        ("CategoricalCrossentropy", {"axis": 0, "from_logits": True}, CUBE_TRUE, CUBE),
        ("CategoricalCrossentropy", {"axis": -2, "label_smoothing": 0.2}, CUBE_TRUE, CUBE),
        ("CategoricalCrossentropy", {"axis": -1}, ONE_HOT, PROBS),
        ("BinaryCrossentropy", {"axis": 1}, CUBE_TRUE, CUBE / 1.1),
        ("BinaryCrossentropy", {"axis": 0, "from_logits": True}, CUBE_TRUE, CUBE),
        ("BinaryCrossentropy", {"axis": -2, "label_smoothing": 0.1}, CUBE_TRUE, CUBE / 1.1),
        ("BinaryFocalCrossentropy", {"axis": 1}, CUBE_TRUE, CUBE / 1.1),
        ("CategoricalFocalCrossentropy", {"axis": 1}, CUBE_TRUE, CUBE),
        ("CosineSimilarity", {"axis": 1}, CUBE_TRUE, CUBE),
        ("Dice", {"axis": (1, 2)}, CUBE_TRUE, CUBE / 1.1),
        ("Tversky", {"axis": (1, 2), "alpha": 0.3, "beta": 0.7}, CUBE_TRUE, CUBE / 1.1),
        # Keras 3's JAX rule for a sparse class axis other than the last: the labels have
        # the predictions' shape less the last axis, one-hot along `axis`
        (
            "SparseCategoricalCrossentropy",
            {"axis": 1},
            np.array([[0, 2, 1, 2]] * 2),
            CUBE[:2, :, :4],
        ),
        (
            "SparseCategoricalCrossentropy",
            {"axis": 1, "ignore_class": 2},
            np.array([[0, 2, 1, 3]] * 2),
            CUBE[:2, :, :4],
        ),
    ],
)
@pytest.mark.parametrize("reduction", ["sum_over_batch_size", "sum", "none"])
def test_axis_as_keras(cls, kwargs, y_true, y_pred, reduction):
    ours, theirs = _both(cls, reduction=reduction, **kwargs)
    _compare(ours, theirs, y_true, y_pred)
    # weights of the unreduced values' shape (Keras 3 broadcasts [batch] ones against the
    # last axis of [batch, time] values, an error)
    shape = getattr(keras.losses, cls)(reduction="none", **kwargs)(y_true, y_pred).shape
    if reduction != "none":
        sw = np.random.default_rng(1).uniform(0.5, 2.0, shape).astype(np.float32)
        _compare(ours, theirs, y_true, y_pred, sw)
    got = jax.grad(lambda p: jnp.sum(ours(y_true, p)))(jnp.asarray(y_pred))
    want = jax.grad(lambda p: jnp.sum(_per_example(theirs(y_true, p))))(jnp.asarray(y_pred))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize(
    ("make", "args"),
    [  # Keras 3 raises on each; phalanx too, with Keras's words
        (lambda m: m.SparseCategoricalCrossentropy(axis=1), (np.zeros((2, 4), int), CUBE[:2])),
        (lambda m: m.SparseCategoricalCrossentropy(axis=0), (np.zeros((2, 4), int), CUBE[:2])),
        (lambda m: m.CategoricalCrossentropy(axis=True), (ONE_HOT, PROBS)),
        (lambda m: m.CategoricalCrossentropy(axis=1), (ONE_HOT[:, :3], PROBS)),
    ],
)
def test_axis_raising_cases_raise_as_keras(make, args):
    with pytest.raises((ValueError, TypeError)):
        make(keras.losses)(*args)
    with pytest.raises(LossArgumentError):
        make(px.losses)(*args)


DTYPE_CASES = [
    ("MeanSquaredError", {}, np.ones((4, 3), np.float32), PROBS[:4, :3]),
    ("MeanAbsoluteError", {}, np.ones((4, 3), np.float32), PROBS[:4, :3]),
    ("Huber", {"delta": 0.5}, np.ones((4, 3), np.float32), PROBS[:4, :3]),
    ("SparseCategoricalCrossentropy", {"ignore_class": 2}, LABELS, PROBS),
    ("SparseCategoricalCrossentropy", {"from_logits": True}, LABELS, LOGITS),
    ("CategoricalCrossentropy", {}, ONE_HOT, PROBS),
    ("BinaryCrossentropy", {"from_logits": True}, CUBE_TRUE, CUBE),
    ("Poisson", {}, CUBE_TRUE, CUBE),
    ("KLDivergence", {}, ONE_HOT, PROBS / PROBS.sum(-1, keepdims=True)),
    ("LogCosh", {}, CUBE_TRUE, CUBE),
]


@pytest.mark.parametrize(("cls", "kwargs", "y_true", "y_pred"), DTYPE_CASES)
@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "mixed_bfloat16", "float32"])
@pytest.mark.parametrize("reduction", ["sum_over_batch_size", "mean_with_sample_weight"])
def test_dtype_computes_in_it_as_keras(cls, kwargs, y_true, y_pred, dtype, reduction):
    ours, theirs = _both(cls, dtype=dtype, reduction=reduction, **kwargs)
    assert ours.dtype == theirs.dtype
    shape = getattr(keras.losses, cls)(reduction="none", **kwargs)(y_true, y_pred).shape
    sw = np.random.default_rng(2).uniform(0.5, 2.0, shape).astype(np.float32)
    for weight in (None, sw):
        got, want = ours(y_true, y_pred, weight), theirs(y_true, y_pred, weight)
        assert str(got.dtype) == str(want.dtype) == ours.dtype
        tol = 1e-5 if ours.dtype == "float32" else 2e-2
        np.testing.assert_allclose(np.float32(got), np.float32(want), rtol=tol, atol=tol)


def test_dtype_policies_and_refusals():
    policy = px.mixed_precision.Policy("mixed_float16")
    assert px.losses.MeanSquaredError(dtype=policy).dtype == "float16"
    assert px.losses.Dice(dtype=keras.DTypePolicy("mixed_bfloat16")).dtype == "bfloat16"
    with pytest.raises(ValueError):  # Keras 3 refuses an unknown name too
        keras.losses.MeanSquaredError(dtype="foo")
    with pytest.raises(LossArgumentError, match=r"MeanSquaredError\(dtype='foo'\)"):
        px.losses.MeanSquaredError(dtype="foo")
    # Keras 3 takes an integer dtype and casts the predictions to it; phalanx refuses it
    with pytest.raises(LossArgumentError, match=r"Poisson\(dtype='int32'\).*0.3 becomes 0"):
        px.losses.Poisson(dtype="int32")
    assert not jax.config.jax_enable_x64
    with pytest.raises(LossArgumentError, match=r"dtype='float64'\).*jax_enable_x64"):
        px.losses.CategoricalCrossentropy(dtype="float64")


def test_float64_with_x64_computes_in_float64():
    script = (
        "import jax; jax.config.update('jax_enable_x64', True)\n"
        "import numpy as np, phalanx as px\n"
        "l = px.losses.MeanSquaredError(dtype='float64')\n"
        "v = l(np.ones((2, 3)), np.full((2, 3), 0.3))\n"
        "assert l.dtype == 'float64' and str(v.dtype) == 'float64', v.dtype\n"
        "assert abs(float(v) - 0.49) < 1e-15, float(v)\n"
    )
    import subprocess
    import sys

    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True)
    assert done.returncode == 0, done.stderr.decode()[-2000:]


def test_reductions_refused_as_keras():
    for bad in ("bogus", "avg", 3):
        with pytest.raises(ValueError, match="Invalid value for argument `reduction`"):
            keras.losses.MeanSquaredError(reduction=bad)
        with pytest.raises(LossArgumentError, match="reduction must be one of"):
            px.losses.MeanSquaredError(reduction=bad)
    with pytest.raises(LossArgumentError, match=r"ignore_class='a'"):
        px.losses.SparseCategoricalCrossentropy(ignore_class="a")


CONFIG_CASES = [
    ("SparseCategoricalCrossentropy", {"ignore_class": -1, "reduction": "mean_with_sample_weight"}),
    ("SparseCategoricalCrossentropy", {"axis": 1, "reduction": None, "from_logits": True}),
    ("CategoricalCrossentropy", {"axis": 1, "label_smoothing": 0.1}),
    ("BinaryCrossentropy", {"axis": 0, "dtype": "bfloat16"}),
    ("MeanSquaredError", {"reduction": "mean", "dtype": "float16"}),
    ("Huber", {"reduction": "sum"}),
    ("CategoricalFocalCrossentropy", {"axis": 1, "reduction": "mean_with_sample_weight"}),
    ("Tversky", {"axis": (1, 2), "dtype": "mixed_bfloat16"}),
]


@pytest.mark.parametrize(("cls", "kwargs"), CONFIG_CASES)
def test_configs_round_trip_and_keras_rebuilds_them(cls, kwargs):
    ours, theirs = _both(cls, **kwargs)
    config = ours.get_config()
    for key, value in theirs.get_config().items():
        assert config[key] == value, key
    again = type(ours).from_config(config)
    assert again.get_config() == config and again.dtype == ours.dtype
    rebuilt = getattr(keras.losses, cls).from_config(config)  # Keras reads phalanx's config
    assert rebuilt.dtype == ours.dtype


# -- inside compile/fit -------------------------------------------------------------------
FEATURES, CLASSES = 5, 4


def _data(n=48):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(n, FEATURES)).astype(np.float32)
    y = rng.integers(0, CLASSES, n)
    y[::5] = 3  # some of the ignored class
    return x, y, rng.uniform(0.2, 2.0, n).astype(np.float32)


def _keras_fit(loss, x, y, sw, w0, batch, epochs=2):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((FEATURES,)), keras.layers.Dense(CLASSES)])
    model.set_weights(w0)
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss=loss)
    h = model.fit(x, y, sample_weight=sw, batch_size=batch, epochs=epochs, shuffle=False, verbose=0)
    return (
        h.history["loss"],
        model.get_weights(),
        model.evaluate(x, y, sample_weight=sw, batch_size=batch, verbose=0),
    )


def _phalanx_fit(loss, x, y, sw, w0, batch, strategy=None, epochs=2):
    strategy = strategy or px.OneDeviceStrategy()
    with strategy.scope():
        model = px.Sequential([layers.Input(shape=(FEATURES,)), layers.Dense(CLASSES)])
        model.compile(optimizer=px.optimizers.SGD(0.1), loss=loss)
    model.set_weights(w0)
    h = model.fit(x, y, sample_weight=sw, batch_size=batch, epochs=epochs, shuffle=False, verbose=0)
    return (
        h.history["loss"],
        model.get_weights(),
        model.evaluate(x, y, sample_weight=sw, batch_size=batch, verbose=0),
    )


def _w0():
    rng = np.random.default_rng(11)
    return [
        rng.normal(size=(FEATURES, CLASSES)).astype(np.float32) * 0.5,
        np.zeros(CLASSES, np.float32),
    ]


FIT_CASES = [
    ("SparseCategoricalCrossentropy", {"from_logits": True, "ignore_class": 3}),
    (
        "SparseCategoricalCrossentropy",
        {"from_logits": True, "ignore_class": 3, "reduction": "mean_with_sample_weight"},
    ),
    ("SparseCategoricalCrossentropy", {"from_logits": True, "reduction": "sum"}),
    (
        "SparseCategoricalCrossentropy",
        {"from_logits": True, "reduction": "mean_with_sample_weight"},
    ),
    ("SparseCategoricalCrossentropy", {"from_logits": True, "dtype": "bfloat16"}),
    ("CategoricalCrossentropy", {"from_logits": True, "axis": -1, "reduction": "mean"}),
]


@pytest.mark.parametrize(("cls", "kwargs"), FIT_CASES)
@pytest.mark.parametrize("weighted", [False, True])
def test_fit_and_evaluate_as_keras(cls, kwargs, weighted):
    x, y, sw = _data()
    if cls == "CategoricalCrossentropy":
        y = np.eye(CLASSES, dtype=np.float32)[y]
    sw = sw if weighted else None
    w0 = _w0()
    theirs = _keras_fit(getattr(keras.losses, cls)(**kwargs), x, y, sw, w0, batch=16)
    ours = _phalanx_fit(getattr(px.losses, cls)(**kwargs), x, y, sw, w0, batch=16)
    tol = 2e-2 if "dtype" in kwargs else 1e-5
    np.testing.assert_allclose(ours[0], theirs[0], rtol=tol, atol=tol)
    for a, b in zip(ours[1], theirs[1], strict=True):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
    np.testing.assert_allclose(ours[2], theirs[2], rtol=tol, atol=tol)


@pytest.mark.parametrize("reduction", ["sum_over_batch_size", "mean_with_sample_weight", "sum"])
def test_fit_with_ignore_class_on_8_replicas_equals_1_device(reduction):
    x, y, sw = _data(64)
    w0 = _w0()

    def loss():
        return px.losses.SparseCategoricalCrossentropy(
            from_logits=True, ignore_class=3, reduction=reduction
        )

    one = _phalanx_fit(
        loss(), x, y, sw, w0, batch=32, strategy=px.MirroredStrategy(jax.devices()[:1])
    )
    many = _phalanx_fit(loss(), x, y, sw, w0, batch=32, strategy=px.MirroredStrategy())
    assert px.MirroredStrategy().num_replicas_in_sync == 8
    np.testing.assert_allclose(many[0], one[0], rtol=1e-5)
    for a, b in zip(many[1], one[1], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(many[2], one[2], rtol=1e-5)


def test_compile_refuses_a_loss_of_one_value_per_example():
    model = px.Sequential([layers.Input(shape=(FEATURES,)), layers.Dense(CLASSES)])
    for reduction in ("none", None):
        with pytest.raises(CompileArgumentError, match="Gradient only defined for scalar"):
            model.compile(optimizer="sgd", loss=px.losses.MeanSquaredError(reduction=reduction))
    model.compile(optimizer="sgd", loss="mse")  # a function's name: reduced per batch
    x, _, _ = _data(8)
    assert np.isfinite(model.fit(x, np.zeros((8, CLASSES)), verbose=0).history["loss"][0])


def test_multi_output_refuses_what_it_does_not_reduce():
    inputs = layers.Input(shape=(FEATURES,))
    model = px.Model(inputs, [layers.Dense(CLASSES)(inputs), layers.Dense(1)(inputs)])
    scce = px.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=3)
    with pytest.raises(CompileArgumentError, match=r"ignore_class=3"):
        model.compile(optimizer="sgd", loss=[scce, "mse"])
    with pytest.raises(CompileArgumentError, match=r"reduction='sum'"):
        model.compile(optimizer="sgd", loss=["mse", px.losses.MeanSquaredError(reduction="sum")])
