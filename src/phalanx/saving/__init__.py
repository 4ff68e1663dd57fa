"""Keras files: ``.keras`` models, ``.weights.h5`` weights, ``.npz`` weights and the compile config.

Below `phalanx.models` as in Keras (``keras/src/saving``): the model classes hand their
configuration to these writers and readers.
"""

# The entry points are the model's: ``Model.save``, ``save_weights``, ``load_weights``
# and ``phalanx.models.load_model``; this package holds their file formats.
# ``Model.get_compile_config`` and ``compile_from_config`` serialize through these.
from ._compile_config import compile_config as compile_config
from ._compile_config import compile_from_config as compile_from_config

__all__: list[str] = []
