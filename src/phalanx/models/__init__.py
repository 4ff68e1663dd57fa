"""Keras's ``keras.models``: ``load_model`` for Keras 3 ``.keras`` files, and the model classes.

``load_model("m.keras")`` rebuilds a ``Sequential`` or functional model from
the file's configuration with phalanx's own layers, running no code from the
file (Keras's ``safe_mode``; a ``Lambda`` layer is refused), and loads its
weights. See `phalanx.saving._keras_model`.
"""

from ._load import load_model as load_model
from ._model import Model as Model
from ._sequential import Sequential as Sequential

__all__ = ["Model", "Sequential", "load_model"]
