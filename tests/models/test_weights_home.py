"""One home for the weights: after ``fit`` the training state's device arrays are the truth.

``model(x)`` and the model's module read them without a host copy, and one layer's
``set_weights`` (or a weight's ``assign``) places only that layer's arrays.
"""

import contextlib

import flax.nnx as nnx
import jax
import numpy as np

import phalanx
from phalanx import layers


def _trained(strategy=None):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 5)).astype(np.float32)
    y = rng.normal(size=(32, 2)).astype(np.float32)
    with strategy.scope() if strategy is not None else contextlib.nullcontext():
        model = phalanx.Sequential(
            [layers.Input(shape=(5,)), layers.Dense(8, name="a"), layers.Dense(2, name="b")]
        )
        model.compile(optimizer="adam", loss="mse")
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    return model, x


def _kernel(model, name):
    return model._state.params["layers"][_index(model, name)]["linear"]["kernel"].get_value()


def _index(model, name):
    return [layer.name for layer in model.layers].index(name)


def test_the_module_after_fit_holds_the_states_device_arrays_not_host_copies():
    model, x = _trained()
    module_kernel = nnx.state(model.module, nnx.Param)["layers"][0]["linear"]["kernel"].get_value()
    assert isinstance(module_kernel, jax.Array)
    assert module_kernel is _kernel(model, "a")  # one device: the same array, uncopied
    np.testing.assert_allclose(
        np.asarray(model(x[:4])), model.predict(x[:4], verbose=0), rtol=1e-5, atol=1e-6
    )


def test_under_mirrored_an_eager_call_reads_one_replica_of_the_state():
    strategy = phalanx.MirroredStrategy()
    model, x = _trained(strategy)
    state_kernel = _kernel(model, "a")
    assert len(state_kernel.sharding.device_set) == strategy.num_replicas_in_sync
    module_kernel = nnx.state(model.module, nnx.Param)["layers"][0]["linear"]["kernel"].get_value()
    assert isinstance(module_kernel, jax.Array)
    assert len(module_kernel.sharding.device_set) == 1
    out = model(x[:4])
    np.testing.assert_allclose(
        np.asarray(out), model.predict(x[:4], verbose=0), rtol=1e-5, atol=1e-6
    )


def test_under_shard_parameters_an_eager_call_runs_on_the_split_arrays():
    model, x = _trained(phalanx.MirroredStrategy(shard_parameters=True))
    np.testing.assert_allclose(
        np.asarray(model(x[:4])), model.predict(x[:4], verbose=0), rtol=1e-5, atol=1e-6
    )


def test_a_layers_set_weights_places_only_that_layers_arrays():
    model, x = _trained(phalanx.MirroredStrategy())
    a_kernel, b_kernel = _kernel(model, "a"), _kernel(model, "b")
    opt_state = jax.tree.leaves(model._state.opt_state)
    b = model.get_layer("b")
    b.set_weights([np.ones((8, 2), np.float32), np.zeros(2, np.float32)])
    assert _kernel(model, "a") is a_kernel  # the other layer's array is not re-placed
    assert _kernel(model, "b") is not b_kernel
    assert _kernel(model, "b").sharding == b_kernel.sharding
    assert all(
        u is v for u, v in zip(opt_state, jax.tree.leaves(model._state.opt_state), strict=True)
    )
    np.testing.assert_array_equal(b.get_weights()[0], 1.0)
    b.weights[1].assign(np.full(2, 3.0, np.float32))
    assert _kernel(model, "a") is a_kernel
    np.testing.assert_array_equal(model.get_weights()[3], 3.0)
    hidden = np.asarray(model.get_layer("a")(x[:4]))  # eager, on the model's weights
    np.testing.assert_allclose(
        model.predict(x[:4], verbose=0),
        np.repeat(hidden.sum(1, keepdims=True) + 3.0, 2, axis=1),
        rtol=1e-5,
    )
