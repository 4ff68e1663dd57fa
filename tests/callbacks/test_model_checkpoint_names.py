"""``ModelCheckpoint(filepath, save_weights_only=True)`` refuses a name of no weights format.

Keras 3.15 (jax backend), at construction::

    ModelCheckpoint("ckpt_{epoch:04d}", save_weights_only=True)
    ValueError: When using `save_weights_only=True` in `ModelCheckpoint`, the filepath
    provided must end in `.weights.h5` (Keras weights format). Received:
    filepath=ckpt_{epoch:04d}

(and the same for ``m.h5``, ``m.keras``, ``m.npz``). phalanx refuses it alike, but keeps
``.npz``, its own documented weights format (README: ``save_weights``' other paths). It
used to write ``.npz`` under any name.

Keras 3's default is ``save_weights_only=False``: ``ModelCheckpoint("best.keras")`` saves
the model as a ``.keras`` file, and another name is refused ("The filepath provided must
end in `.keras` ..."). phalanx's default chooses by the name: ``.keras`` the model, as
Keras; ``.weights.h5``/``.npz`` the weights (phalanx's default was ``True``: weights under
any name); ``save_weights_only=False`` with another name stays phalanx's checkpoint folder.
"""

from __future__ import annotations

import zipfile

import numpy as np
import pytest
from real_fit import X, Y, fit

import phalanx
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


@pytest.mark.parametrize("name", ["ckpt", "ckpt_{epoch:04d}", "m.h5"])
def test_by_default_a_name_of_no_known_format_is_refused(name):
    with pytest.raises(CallbackArgumentError, match=r"must end in `\.keras`") as caught:
        ModelCheckpoint(name)
    assert f"Received: filepath={name}." in str(caught.value)
    assert "save_weights_only=False" in str(caught.value)


@pytest.mark.parametrize("save_weights_only", [None, False])
def test_a_keras_name_saves_the_model_as_keras_does(model, tmp_path, save_weights_only):
    path = tmp_path / "best.keras"
    kwargs = {} if save_weights_only is None else dict(save_weights_only=save_weights_only)
    ckpt = ModelCheckpoint(str(path), monitor="loss", save_best_only=True, **kwargs)
    assert ckpt.save_weights_only is False
    fit(model, [ckpt], epochs=2)
    assert path.is_file() and zipfile.is_zipfile(path)  # a .keras file, not a folder
    loaded = phalanx.models.load_model(path)
    np.testing.assert_allclose(loaded.predict(X, verbose=0), model.predict(X, verbose=0), 1e-6)


@pytest.mark.parametrize("name", ["ckpt_{epoch:04d}.weights.h5", "w-{epoch}.npz"])
def test_keras_and_phalanx_weights_names_save_and_load(model, tmp_path, name):
    ckpt = ModelCheckpoint(str(tmp_path / name))  # the default: the weights, by the name
    assert ckpt.save_weights_only is True
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
