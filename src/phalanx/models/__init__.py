"""Keras's ``keras.models``: the model classes, ``load_model``/``save_model`` for Keras 3
``.keras`` files, ``clone_model`` and ``model_from_json``.

``load_model("m.keras")`` rebuilds a ``Sequential`` or functional model from
the file's configuration with phalanx's own layers, running no code from the
file (Keras's ``safe_mode``; a ``Lambda`` layer is refused), and loads its
weights. See `phalanx.saving._keras_model`.
"""

from ..saving import load_model as load_model
from ..saving import save_model as save_model
from . import _load as _load  # gives phalanx.saving.load_model its reader when imported
from ._cloning import clone_model as clone_model
from ._json import model_from_json as model_from_json
from ._model import Model as Model
from ._sequential import Sequential as Sequential

__all__ = [
    "Model",
    "Sequential",
    "clone_model",
    "load_model",
    "model_from_json",
    "save_model",
]
