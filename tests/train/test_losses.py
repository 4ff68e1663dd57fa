"""Losses: Keras's documented values, per-example shapes, label shapes, logits stability."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from phalanx import losses
from phalanx.losses import Logits

Y_PRED = jnp.array([[0.05, 0.95, 0.0], [0.1, 0.8, 0.1]])


def mean(loss, *args, **kwargs):
    return float(jnp.mean(loss(*args, **kwargs)))


def test_keras_documented_values():
    # Values from the Keras docstrings (sum_over_batch_size = mean of per-example).
    scce = losses.SparseCategoricalCrossentropy()
    assert mean(scce, jnp.array([1, 2]), Y_PRED) == pytest.approx(1.177, abs=1e-3)
    assert mean(scce, jnp.array([1, 2]), Y_PRED, jnp.array([0.3, 0.7])) == pytest.approx(
        0.814, abs=1e-3
    )
    cce = losses.CategoricalCrossentropy()
    onehot = jnp.array([[0, 1, 0], [0, 0, 1]])
    assert mean(cce, onehot, Y_PRED) == pytest.approx(1.177, abs=1e-3)
    assert mean(cce, onehot, Y_PRED, jnp.array([0.3, 0.7])) == pytest.approx(0.814, abs=1e-3)
    y_true, y_pred = jnp.array([[0.0, 1.0], [0.0, 0.0]]), jnp.array([[1.0, 1.0], [1.0, 0.0]])
    assert mean(losses.get("mse"), y_true, y_pred) == pytest.approx(0.5)
    assert mean(losses.get("mse"), y_true, y_pred, jnp.array([0.7, 0.3])) == pytest.approx(0.25)
    assert mean(losses.get("mae"), y_true, y_pred) == pytest.approx(0.5)
    assert mean(losses.get("mae"), y_true, y_pred, jnp.array([0.7, 0.3])) == pytest.approx(0.25)
    hp = jnp.array([[0.6, 0.4], [0.4, 0.6]])
    assert mean(losses.Huber(), y_true, hp) == pytest.approx(0.155, abs=1e-3)
    assert mean(losses.Huber(), y_true, hp, jnp.array([1.0, 0.0])) == pytest.approx(0.09, abs=1e-3)
    bce = losses.BinaryCrossentropy(from_logits=True)
    yb = jnp.array([[0.0, 1.0, 0.0, 0.0]]).T
    logits = jnp.array([[-18.6, 0.51, 2.94, -12.8]]).T
    assert mean(bce, yb, logits) == pytest.approx(0.865, abs=1e-3)


def test_binary_crossentropy_probabilities_match_keras_formula():
    y_true = jnp.array([[0.0, 1.0], [0.0, 0.0]])
    y_pred = jnp.array([[0.6, 0.4], [0.4, 0.6]])
    # Keras 2 docstring: 0.815; clipped at 1e-7 like Keras.
    assert mean(losses.BinaryCrossentropy(), y_true, y_pred) == pytest.approx(0.815, abs=1e-3)
    wrong = losses.binary_crossentropy(jnp.array([[1.0]]), jnp.array([[0.0]]))
    assert float(wrong[0]) == pytest.approx(-np.log(1e-7), rel=1e-4)


def test_per_example_shapes_and_label_shapes():
    scce = losses.get("sparse_categorical_crossentropy")
    a = scce(jnp.array([1, 2]), Y_PRED)
    b = scce(jnp.array([[1], [2]]), Y_PRED)
    assert a.shape == (2,) and np.allclose(a, b)
    # (batch,) labels vs (batch, 1) outputs are aligned as Keras does.
    mse = losses.get("mse")
    assert mse(jnp.array([1.0, 2.0]), jnp.array([[1.0], [0.0]])).tolist() == [0.0, 4.0]
    bce = losses.get("binary_crossentropy")
    assert bce(jnp.array([1.0, 0.0]), jnp.array([[0.9], [0.2]])).shape == (2,)
    # Sequence outputs: per example = mean over time (Keras's sum_over_batch_size).
    seq = scce(jnp.zeros((2, 5), jnp.int32), jnp.full((2, 5, 3), 1 / 3))
    assert seq.shape == (2,) and np.allclose(seq, np.log(3), atol=1e-5)


def test_zero_weight_masks_even_nan_predictions():
    mse = losses.get("mse")
    out = mse(jnp.array([[1.0], [1.0]]), jnp.array([[2.0], [jnp.nan]]), jnp.array([1.0, 0.0]))
    assert out.tolist() == [1.0, 0.0]


@pytest.mark.parametrize("extreme", [30.0, 100.0, 1000.0])
def test_softmax_output_with_logits_is_stable_and_equals_from_logits(extreme):
    z = jnp.array([[extreme, -extreme, 0.0], [-extreme, extreme, 0.0]])
    y_true = jnp.array([1, 0])  # both predictions are confidently wrong
    probs = jax.nn.softmax(z)
    scce = losses.SparseCategoricalCrossentropy(reduction="none")
    stable = scce(y_true, probs, logits=Logits(z, "softmax"))
    exact = losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")(y_true, z)
    assert np.all(np.isfinite(stable)) and np.allclose(stable, exact)
    assert float(stable[0]) == pytest.approx(2 * extreme, rel=1e-5)
    # Without logits Keras clips: finite but capped at -log(1e-7).
    assert float(scce(y_true, probs)[0]) == pytest.approx(-np.log(1e-7), rel=1e-4)
    cce = losses.CategoricalCrossentropy(reduction="none")
    onehot = jax.nn.one_hot(y_true, 3)
    assert np.allclose(cce(onehot, probs, logits=Logits(z, "softmax")), exact)
    # Gradients through the logits path are finite too.
    g = jax.grad(lambda z: scce(y_true, jax.nn.softmax(z), logits=Logits(z, "softmax")).sum())(z)
    assert np.all(np.isfinite(g))


def test_sigmoid_output_with_logits_is_stable():
    z = jnp.array([[80.0], [-80.0]])
    y_true = jnp.array([[0.0], [1.0]])
    bce = losses.BinaryCrossentropy(reduction="none")
    stable = bce(y_true, jax.nn.sigmoid(z), logits=Logits(z, "sigmoid"))
    exact = losses.BinaryCrossentropy(from_logits=True, reduction="none")(y_true, z)
    assert np.allclose(stable, exact) and float(stable[0]) == pytest.approx(80.0)
    # A softmax Logits is ignored by the binary loss (mismatched activation).
    assert np.allclose(
        bce(y_true, jax.nn.sigmoid(z), logits=Logits(z, "softmax")), bce(y_true, jax.nn.sigmoid(z))
    )
    with pytest.raises(TypeError, match="must be a phalanx Logits"):
        bce(y_true, z, logits=z)


def test_get_names_callables_and_reductions():
    assert isinstance(losses.get("huber"), losses.Huber)
    assert losses.get("mse").name == "mse"
    assert losses.get(losses.MeanAbsoluteError).name == "mean_absolute_error"
    assert losses.get(None) is None
    custom = losses.get(lambda y, p: jnp.mean((y - p) ** 2))  # scalar: spread over examples
    out = custom(jnp.array([0.0, 0.0]), jnp.array([1.0, 3.0]))
    assert out.tolist() == [5.0, 5.0]
    per = losses.get(lambda y, p: (y - p) ** 2)
    assert per(jnp.array([0.0, 0.0]), jnp.array([1.0, 3.0])).tolist() == [1.0, 9.0]
    with pytest.raises(ValueError, match="Unknown loss 'msee'"):
        losses.get("msee")
    total = losses.MeanSquaredError(reduction="sum")
    assert float(total(jnp.array([[0.0], [0.0]]), jnp.array([[1.0], [2.0]]))) == 5.0
    with pytest.raises(ValueError, match="reduction must be one of"):
        losses.MeanSquaredError(reduction="avg")


def test_losses_jit():
    scce = losses.get("sparse_categorical_crossentropy")
    f = jax.jit(lambda y, p, z: scce(y, p, logits=Logits(z, "softmax")))
    z = jnp.zeros((4, 3))
    assert np.allclose(f(jnp.zeros(4, jnp.int32), jax.nn.softmax(z), z), np.log(3))


def test_shape_mistakes_are_named_when_tracing():
    scce = losses.get("sparse_categorical_crossentropy")
    with pytest.raises(ValueError, match=r"expects integer class indices of shape \(None, 6, 6\)"):
        jax.jit(scce)(jnp.zeros(4, jnp.int32), jnp.zeros((4, 6, 6, 10)))
    with pytest.raises(ValueError, match="Targets look one-hot: use categorical_crossentropy"):
        scce(jnp.zeros((4, 10)), jnp.zeros((4, 10)))
    with pytest.raises(ValueError, match="element by element"):
        losses.get("mse")(jnp.zeros((4, 3)), jnp.zeros((4, 2)))
    # Broadcastable targets stay accepted, as Keras.
    assert losses.get("mse")(jnp.zeros((4, 1)), jnp.ones((4, 3))).tolist() == [1.0] * 4


def test_calling_a_loss_reduces_as_keras_3():
    """Keras 3 (and TF 2.21) values: the default reduction is the batch's mean; "none" (or
    tf.keras's Reduction.NONE) one value per example; a function's name, as Keras's function,
    per example."""
    y, z = jnp.array([1, 2]), jnp.array([[0.1, 2.0, 0.3], [0.5, 0.2, 3.0]])
    scce = losses.SparseCategoricalCrossentropy(from_logits=True)
    assert float(scce(y, z)) == pytest.approx(0.21021768, abs=1e-6)  # TF 2.21's print
    none = losses.SparseCategoricalCrossentropy(from_logits=True, reduction=losses.Reduction.NONE)
    np.testing.assert_allclose(none(y, z), [0.28687072, 0.13356471], rtol=1e-6)
    total = losses.SparseCategoricalCrossentropy(from_logits=True, reduction=losses.Reduction.SUM)
    assert float(total(y, z)) == pytest.approx(0.42043543, abs=1e-6)
    auto = losses.SparseCategoricalCrossentropy(from_logits=True, reduction=losses.Reduction.AUTO)
    assert float(auto(y, z)) == pytest.approx(0.21021768, abs=1e-6)
    assert losses.get("sparse_categorical_crossentropy").reduction == "none"
    assert losses.get("SparseCategoricalCrossentropy").reduction == "sum_over_batch_size"
    with pytest.raises(ValueError, match="reduction must be one of"):
        losses.MeanSquaredError(reduction="average")
