"""``clone_model``: a new Sequential or functional model of the same layers, as Keras 3's
(``keras/src/models/cloning.py``).

Each layer is made anew from its config (``layer.__class__.from_config(layer.get_config())``,
or ``clone_function(layer)``), so the clone has new weights, not the original's; a
functional graph is replayed from Keras's description of it (`phalanx.models._load`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._random import fresh_model_seed
from ..errors import ModelArgumentError
from ..layers import Input, Layer, is_symbolic
from . import _keras_config, _load
from ._functional import Functional
from ._model import Model
from ._sequential import Sequential


def _default_clone(layer: Layer) -> Layer:
    """Keras's default ``clone_function``: the layer its config describes, unbuilt."""
    return type(layer).from_config(layer.get_config())


def _checked(clone: Any, layer: Layer) -> Layer:
    if not isinstance(clone, Layer):
        raise ModelArgumentError(
            f"clone_function returned {type(clone).__name__} {clone!r:.60} for layer "
            f"'{layer.name}'; it must return a phalanx layer (e.g. "
            "layer.__class__.from_config(layer.get_config()))."
        )
    return clone


def _refuse_nested(model: Any) -> None:
    nested = [layer.name for layer in model.layers if layer.wraps_model]
    if nested:
        raise ModelArgumentError(
            f"clone_model: model {model.name!r} holds models used as layers ({nested}); "
            "phalanx clones models of layers only (Keras's recursive=True). Clone each "
            "inner model and build the outer model from the clones."
        )


def _clone_sequential(model: Any, clone: Callable, input_tensors: Any) -> Any:
    net = model._module
    copy = Sequential(name=model.name)
    if input_tensors is not None:
        tensors = input_tensors if isinstance(input_tensors, list | tuple) else [input_tensors]
        if len(tensors) != 1 or not is_symbolic(tensors[0]):
            raise ModelArgumentError(
                "clone_model(input_tensors=...) of a Sequential model takes one "
                f"phalanx.Input tensor, got {input_tensors!r:.80}."
            )
        copy._module.add(tensors[0])
    elif net.input_shape is not None:
        copy._module.add(Input(shape=net.input_shape, dtype=net.keras_input_dtype))
    for layer in net.layers:
        copy._module.add(_checked(clone(layer), layer))
    if copy._module.input_shape is not None and len(copy._module.layers):
        copy._module.build(seed=fresh_model_seed())
    return copy


def _clone_functional(model: Any, clone: Callable, call: Callable | None, inputs: Any) -> Any:
    config = _keras_config.model_config(model)["config"]
    by_name = {layer.name: layer for layer in model.layers}
    given = _input_tensors(config, inputs)

    def make(entry: dict) -> Any:
        name = entry.get("name") or entry["config"]["name"]
        if entry.get("class_name") == "InputLayer":
            return given[name] if given else _load._make_layer(entry)
        return _checked(clone(by_name[name]), by_name[name])

    return _load.functional(config, model.name, make, call, fresh_model_seed())


def _input_tensors(config: dict, inputs: Any) -> dict:
    """``{input layer name: tensor}`` for ``input_tensors`` (in the model's input order)."""
    if inputs is None:
        return {}
    names = [spec[0] for spec in _specs(config["input_layers"])]
    tensors = list(inputs.values()) if isinstance(inputs, dict) else inputs
    tensors = list(tensors) if isinstance(tensors, list | tuple) else [tensors]
    if len(tensors) != len(names) or not all(is_symbolic(t) for t in tensors):
        raise ModelArgumentError(
            f"clone_model(input_tensors=...) takes {len(names)} phalanx.Input tensor(s), one "
            f"per model input {names}; got {inputs!r:.80}."
        )
    return dict(zip(names, tensors, strict=True))


def _specs(spec: Any) -> list:
    if isinstance(spec, dict):
        return [s for v in spec.values() for s in _specs(v)]
    if spec and isinstance(spec[0], list):
        return [s for v in spec for s in _specs(v)]
    return [spec]


def clone_model(
    model: Any,
    input_tensors: Any = None,
    clone_function: Callable[[Layer], Layer] | None = None,
    call_function: Callable | None = None,
    recursive: bool = False,
    **kwargs: Any,
) -> Any:
    """A new model of the same architecture, with new weights, as Keras 3's ``clone_model``.

    Each layer is made again from its config (its weights are drawn anew, not copied:
    copy them with ``clone.set_weights(model.get_weights())``), and a functional
    model's graph is replayed over the new layers. The clone is built when the model
    has known inputs, and is not compiled. Its weights come from phalanx's seed stream
    after ``phalanx.utils.set_random_seed``, else from fresh randomness (phalanx's
    models otherwise start from seed 0, which would repeat the original's weights).

    Args:
      model: a ``Sequential`` or functional ``Model``.
      input_tensors: ``phalanx.Input`` tensors the clone starts from (one per model
        input; a list or dict), instead of new ones.
      clone_function: ``layer -> new layer``, called on every layer (not the inputs);
        default ``layer.__class__.from_config(layer.get_config())``.
      call_function: functional models: ``call_function(layer, *args, **kwargs)``
        replaces each layer's call as the graph is replayed.
      recursive: Keras's cloning into nested models; phalanx refuses models holding
        models as layers, so it changes nothing.
      **kwargs: Keras's ``cache`` is refused; so is any other argument.

    Returns:
      The new ``Sequential`` or functional ``Model``.

    Raises:
      ModelArgumentError: a subclassed model or one wrapping an nnx module, models
        nested as layers, ``call_function`` for a ``Sequential``, an argument Keras
        does not take, or a ``clone_function`` returning something else than a layer.

    Examples:
      >>> import phalanx
      >>> model = phalanx.Sequential([phalanx.layers.Input((3,)), phalanx.layers.Dense(2)])
      >>> clone = phalanx.models.clone_model(model)
      >>> clone.get_config() == model.get_config(), clone.built
      (True, True)
    """
    if kwargs:
        raise ModelArgumentError(
            f"clone_model: unexpected keyword argument(s) {sorted(kwargs)} (phalanx takes "
            "Keras's input_tensors, clone_function, call_function and recursive)."
        )
    if not isinstance(recursive, bool):
        raise ModelArgumentError(f"clone_model(recursive=...) is True or False, got {recursive!r}.")
    clone = clone_function or _default_clone
    if isinstance(model, Sequential):
        if call_function is not None:
            raise ModelArgumentError(
                "clone_model(call_function=...) is not supported with Sequential models (as "
                "Keras: their layers are not called when the model is made); use it with "
                "functional models."
            )
        _refuse_nested(model)
        return _clone_sequential(model, clone, input_tensors)
    if isinstance(model, Model) and isinstance(model._module, Functional):
        _refuse_nested(model)
        return _clone_functional(model, clone, call_function, input_tensors)
    raise ModelArgumentError(
        f"clone_model clones Sequential and functional models; got {_kind(model)}. A "
        "subclassed model's architecture is its code: make a new instance of its class "
        "(and copy weights with set_weights if you want them)."
    )


def _kind(model: Any) -> str:
    if isinstance(model, Model):
        return f"a {type(model).__name__} model (subclassed, or wrapping an nnx module)"
    return f"{type(model).__name__} {model!r:.60}"
