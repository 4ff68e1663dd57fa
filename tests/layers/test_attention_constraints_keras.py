"""``MultiHeadAttention``'s ``kernel_constraint``/``bias_constraint`` against Keras 3 (JAX):
each projection's kernel and bias (query, key, value, output) projected after every
update, as Keras's ``EinsumDense`` sub-layers; configs and ``.keras`` files carry them; the
Keras arguments phalanx lacks are refused by name."""

import os

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "jax")
keras = pytest.importorskip("keras")

import phalanx  # noqa: E402
from phalanx import constraints, layers  # noqa: E402
from phalanx.errors import LayerArgumentError  # noqa: E402

RNG = np.random.default_rng(25)
X = RNG.normal(size=(8, 5, 4)).astype(np.float32)
Y = (3.0 + RNG.normal(size=(8, 5, 4))).astype(np.float32)


def _model(lib):
    args = {"kernel_constraint": lib.constraints.MaxNorm(0.4), "bias_constraint": "non_neg"}
    x = lib.Input((5, 4)) if lib is keras else layers.Input((5, 4))
    y = lib.layers.MultiHeadAttention(num_heads=2, key_dim=3, **args)(x, x)
    return (keras.Model if lib is keras else phalanx.Model)(x, y)


def test_fit_projects_every_projection_as_keras():
    ours, theirs = _model(phalanx), _model(keras)
    theirs.set_weights(ours.get_weights())
    for model, lib in ((ours, phalanx), (theirs, keras)):
        model.compile(optimizer=lib.optimizers.SGD(0.5), loss="mse")
    fits = [
        m.fit(X, Y, batch_size=4, epochs=1, shuffle=False, verbose=0).history["loss"]
        for m in (ours, theirs)
    ]
    np.testing.assert_allclose(fits[0], fits[1], rtol=2e-5)
    weights = ours.get_weights()
    for a, b in zip(weights, theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, atol=2e-5)
    for kernel, bias in zip(weights[::2], weights[1::2], strict=True):
        assert np.sqrt(np.sum(kernel**2, axis=0)).max() <= 0.4 + 1e-5 and bias.min() >= 0.0


def test_config_and_keras_files_carry_the_constraints(tmp_path):
    kwargs = {"kernel_constraint": "max_norm", "bias_constraint": "non_neg"}
    ours = layers.MultiHeadAttention(2, 3, **kwargs).get_config()
    theirs = keras.layers.MultiHeadAttention(2, 3, **kwargs).get_config()
    for key in (*kwargs, "use_gate", "sliding_window"):
        assert ours[key] == theirs[key], key
    assert (
        layers.MultiHeadAttention.from_config(ours).get_config()["kernel_constraint"]
        == theirs["kernel_constraint"]
    )
    path = str(tmp_path / "keras.keras")
    _model(keras).save(path)
    loaded = phalanx.models.load_model(path)
    mha = loaded.layers[-1]
    assert mha.kernel_constraint.get_config() == {"max_value": 0.4, "axis": 0}
    assert isinstance(mha.bias_constraint, constraints.NonNeg)
    again = str(tmp_path / "ours.keras")
    loaded.save(again)
    back = keras.models.load_model(again).layers[-1].get_config()
    assert back["kernel_constraint"]["config"] == {"max_value": 0.4, "axis": 0}
    assert back["bias_constraint"]["class_name"] == "NonNeg"


@pytest.mark.parametrize(
    "kwargs", [{"use_gate": True}, {"sliding_window": 4}, {"flash_attention": True}]
)
def test_keras_arguments_phalanx_lacks_are_refused_by_name(kwargs):
    keras.layers.MultiHeadAttention(2, 3, **kwargs)  # Keras 3 takes them
    (name,) = kwargs
    with pytest.raises(LayerArgumentError, match=f"{name}=.* is not supported by phalanx"):
        layers.MultiHeadAttention(2, 3, **kwargs)
    assert layers.MultiHeadAttention(2, 3, **{name: {"use_gate": False}.get(name)}).num_heads == 2
