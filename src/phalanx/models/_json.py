"""``model_from_json``: a model from Keras 3's JSON (``model.to_json()``), as Keras's.

The JSON is the ``config.json`` entry of a ``.keras`` file without its weights: the
model is built as `phalanx.models.load_model` builds it (phalanx's layers, and layers of
one's own through `phalanx.saving`'s registry), with new weights, and compiled when the
JSON holds a ``compile_config`` (Keras's ``deserialize_keras_object`` does both).
"""

from __future__ import annotations

import json
from typing import Any

from .. import saving
from ..errors import KerasFileError
from . import _load


def model_from_json(json_string: str, custom_objects: dict[str, Any] | None = None) -> Any:
    """The Sequential or functional model Keras 3's ``model.to_json()`` describes.

    Args:
      json_string: the JSON text (phalanx's ``to_json`` or Keras's).
      custom_objects: ``{name: class}`` for layers of one's own that are not registered,
        as `load_model`'s.

    Returns:
      The model, built when its inputs are known, with new weights; compiled when the
      JSON holds a ``compile_config``.

    Raises:
      KerasFileError: not JSON, or not a model phalanx builds (as `load_model`).

    Examples:
      >>> import phalanx
      >>> model = phalanx.Sequential([phalanx.layers.Input((3,)), phalanx.layers.Dense(2)])
      >>> again = phalanx.models.model_from_json(model.to_json())
      >>> again.get_config() == model.get_config()
      True
    """
    try:
        config = json.loads(json_string)
    except (TypeError, ValueError) as error:
        raise KerasFileError(
            f"model_from_json expects the JSON text of model.to_json(), got "
            f"{type(json_string).__name__} {str(json_string)[:60]!r} ({error})."
        ) from None
    if not isinstance(config, dict):
        raise KerasFileError(
            f"model_from_json: the JSON is a {type(config).__name__}; model.to_json() writes "
            'an object with "class_name" and "config".'
        )
    given = saving.CustomObjectScope(custom_objects).custom_objects  # a dict, or TypeError
    with saving.custom_object_scope({**given, **saving.current_scope()}):
        model = _load.model_from_config(config, "the JSON", built=False)
    if config.get("compile_config"):
        mixed = _load.model_policy(config) == "mixed_float16"  # as load_model
        saving.compile_from_config(model, config["compile_config"], "the JSON", mixed)
    return model
