"""``compile(optimizer=...)`` with no ``loss=`` on a model whose layers call ``add_loss``, as
Keras 3: the loss is the sum of the layers' losses (``Trainer.compute_loss``). A model with no
loss at all is refused before any step is traced, with Keras's "No loss to compute" (Keras 3's
JAX backend trains it on a loss of 0; its other backends raise this)."""

import os

import jax.numpy as jnp
import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "jax")
keras = pytest.importorskip("keras")

import phalanx  # noqa: E402
from phalanx import layers  # noqa: E402
from phalanx.errors import NotCompiledError  # noqa: E402

RNG = np.random.default_rng(0)
X = RNG.normal(size=(12, 3)).astype(np.float32)
Y = RNG.normal(size=(12, 2)).astype(np.float32)


def _layer(lib, ops):
    class Penalty(lib.layers.Layer):
        """Adds the mean squared distance of its inputs from 1 as a loss."""

        def call(self, inputs):
            self.add_loss(0.5 * ops.mean(ops.square(inputs - 1.0)))
            return inputs

    return Penalty


def _models():
    ours = phalanx.Sequential(
        [layers.Input((3,)), layers.Dense(4), _layer(phalanx, jnp)(), layers.Dense(2)]
    )
    theirs = keras.Sequential(
        [
            keras.Input((3,)),
            keras.layers.Dense(4),
            _layer(keras, keras.ops)(),
            keras.layers.Dense(2),
        ]
    )
    theirs.set_weights(ours.get_weights())
    return ours, theirs


@pytest.mark.parametrize("with_y", [True, False])
def test_add_loss_alone_is_the_loss_as_keras(with_y):
    ours, theirs = _models()
    ours.compile(optimizer=phalanx.optimizers.SGD(0.1))
    theirs.compile(optimizer=keras.optimizers.SGD(0.1))
    y = Y if with_y else None
    h_ours = ours.fit(X, y, batch_size=4, epochs=2, shuffle=False, verbose=0).history
    h_theirs = theirs.fit(X, y, batch_size=4, epochs=2, shuffle=False, verbose=0).history
    assert list(h_ours) == list(h_theirs) == ["loss"]
    np.testing.assert_allclose(h_ours["loss"], h_theirs["loss"], rtol=1e-5)
    assert h_ours["loss"][0] > 0
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6)
    np.testing.assert_allclose(
        ours.evaluate(X, y, batch_size=4, verbose=0),
        theirs.evaluate(X, y, batch_size=4, verbose=0),
        rtol=1e-5,
    )


def test_a_weight_regularizer_alone_is_the_loss_as_keras():
    ours = phalanx.Sequential(
        [layers.Input((3,)), layers.Dense(2, kernel_regularizer=phalanx.regularizers.L2(0.1))]
    )
    theirs = keras.Sequential(
        [keras.Input((3,)), keras.layers.Dense(2, kernel_regularizer=keras.regularizers.L2(0.1))]
    )
    theirs.set_weights(ours.get_weights())
    ours.compile(optimizer=phalanx.optimizers.SGD(0.1))
    theirs.compile(optimizer=keras.optimizers.SGD(0.1))
    h_ours = ours.fit(X, Y, batch_size=4, shuffle=False, verbose=0).history["loss"]
    h_theirs = theirs.fit(X, Y, batch_size=4, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(h_ours, h_theirs, rtol=1e-5)


def test_no_loss_at_all_is_refused_before_tracing():
    plain = phalanx.Sequential([layers.Input((3,)), layers.Dense(2)])
    plain.compile(optimizer="sgd")
    with pytest.raises(NotCompiledError, match=r"No loss to compute.*Provide a `loss` argument"):
        plain.fit(X, Y, verbose=0)
    assert plain._state is None  # refused before the state, let alone a step, was made

    class Quiet(layers.Layer):  # a call of its own that adds no loss
        def call(self, inputs):
            return inputs

    model = phalanx.Sequential([layers.Input((3,)), Quiet(), layers.Dense(2)])
    model.compile(optimizer="sgd")
    with pytest.raises(NotCompiledError, match=r"No loss to compute"):
        model.fit(X, Y, verbose=0)
    # the first batch's abstract check refused it: the step was never traced
    assert not model.__dict__.get("_checked_first_batches")
