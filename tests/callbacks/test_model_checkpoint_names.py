"""``ModelCheckpoint(filepath, save_weights_only=True)`` refuses a name of no weights format.

Keras 3.15 (jax backend), at construction::

    ModelCheckpoint("ckpt_{epoch:04d}", save_weights_only=True)
    ValueError: When using `save_weights_only=True` in `ModelCheckpoint`, the filepath
    provided must end in `.weights.h5` (Keras weights format). Received:
    filepath=ckpt_{epoch:04d}

(and the same for ``m.h5``, ``m.keras``, ``m.npz``). phalanx refuses it alike, but keeps
``.npz``, its own documented weights format (README: ``save_weights``' other paths). It
used to write ``.npz`` under any name.
"""

from __future__ import annotations

import numpy as np
import pytest
from real_fit import X, Y, fit

from phalanx.callbacks import ModelCheckpoint
from phalanx.errors import CallbackArgumentError


@pytest.mark.parametrize("name", ["ckpt_{epoch:04d}", "m.h5", "m.keras", "w.weights", "m.h5.npz/x"])
def test_a_weights_name_without_a_weights_ending_is_refused_at_construction(name):
    with pytest.raises(ValueError, match=r"must end in `\.weights\.h5`") as caught:
        ModelCheckpoint(name, save_weights_only=True)
    assert isinstance(caught.value, CallbackArgumentError)
    message = str(caught.value)
    assert f"Received: filepath={name}." in message  # what was given
    assert "`.npz` (phalanx's weights format)" in message  # what else is taken
    assert "save_weights_only=False" in message  # and what to do


def test_save_weights_only_is_the_default_so_the_name_is_checked_then_too():
    with pytest.raises(CallbackArgumentError, match="Received: filepath=ckpt"):
        ModelCheckpoint("ckpt")


@pytest.mark.parametrize("name", ["ckpt_{epoch:04d}.weights.h5", "w-{epoch}.npz"])
def test_keras_and_phalanx_weights_names_save_and_load(model, tmp_path, name):
    ckpt = ModelCheckpoint(str(tmp_path / name), save_weights_only=True)
    fit(model, [ckpt], epochs=2)
    saved = sorted(p.name for p in tmp_path.iterdir())
    assert saved == sorted(name.format(epoch=e) for e in (1, 2))
    trained = [np.asarray(w) for w in model.get_weights()]
    model.fit(X, Y, batch_size=8, epochs=1, verbose=0)  # move the weights on
    model.load_weights(tmp_path / name.format(epoch=2))
    for got, want in zip(model.get_weights(), trained, strict=True):
        np.testing.assert_array_equal(got, want)


def test_whole_state_checkpoints_take_any_name(tmp_path):
    ModelCheckpoint(str(tmp_path / "ckpt_{epoch:04d}"), save_weights_only=False)
