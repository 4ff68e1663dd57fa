"""Keras's ``keras.saving``: the registry of one's own classes, and the model files.

``.keras`` models, ``.weights.h5`` weights, ``.npz`` weights and the compile config live
here, below `phalanx.models` as in Keras (``keras/src/saving``): the model classes hand
their configuration to these writers and readers. `register_keras_serializable` and
`custom_object_scope` are the one mechanism ``load_model`` and ``model_from_json`` use to
find a layer class of one's own that a file names (`get_registered_object`).
"""

# The entry points are the model's: ``Model.save``, ``save_weights``, ``load_weights``
# and ``load_model`` (also ``phalanx.models.load_model``); the others are Keras's spellings.
# ``Model.get_compile_config`` and ``compile_from_config`` serialize through these.
from ._compile_config import compile_config as compile_config
from ._compile_config import compile_from_config as compile_from_config
from ._object_registration import CustomObjectScope as CustomObjectScope

# For phalanx's own packages (absent from __all__): phalanx.models gives load_model its
# reader (it builds the model classes, above this package), and its readers look in the
# current custom_object_scope.
from ._object_registration import current_scope as current_scope
from ._object_registration import custom_object_scope as custom_object_scope
from ._object_registration import get_custom_objects as get_custom_objects
from ._object_registration import get_registered_name as get_registered_name
from ._object_registration import get_registered_object as get_registered_object
from ._object_registration import register_keras_serializable as register_keras_serializable
from ._saving_api import load_model as load_model
from ._saving_api import load_weights as load_weights
from ._saving_api import save_model as save_model
from ._saving_api import save_weights as save_weights
from ._saving_api import set_model_reader as set_model_reader

__all__ = [
    "CustomObjectScope",
    "custom_object_scope",
    "get_custom_objects",
    "get_registered_name",
    "get_registered_object",
    "load_model",
    "load_weights",
    "register_keras_serializable",
    "save_model",
    "save_weights",
]
