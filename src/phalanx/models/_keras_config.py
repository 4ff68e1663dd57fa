"""A model's Keras 3 configuration: what ``config.json`` of a ``.keras`` file holds.

``model_config`` describes a ``Sequential`` or functional model as Keras 3 writes it
(class names, layer configs, the functional graph's ``inbound_nodes``); ``keras_graph``
records a functional model's graph when it is defined. `phalanx.saving` writes it.
"""

from __future__ import annotations

import inspect
from typing import Any

import jax

from .. import layers as _layers
from .. import saving
from ..errors import KerasFileError
from ..layers import InputLayer, Layer, is_symbolic
from ..mixed_precision import LossScaleOptimizer
from . import _subclassed

# phalanx-only arguments (not Keras's) that a layer's config must not carry.
_NOT_KERAS = {"self", "input_shape", "axis_name", "dtype", "name", "input_length"}


def _tensor(tensor: Any, history: tuple) -> dict:
    return {
        "class_name": "__keras_tensor__",
        "config": {
            "shape": list(tensor.shape),
            "dtype": str(tensor.dtype),
            "keras_history": list(history),
        },
    }


def keras_graph(nodes: list, inputs: Any, outputs: Any) -> dict:
    """Keras 3's description of a functional graph: each layer's ``inbound_nodes`` and the
    ``input_layers``/``output_layers`` (from the symbolic nodes, at construction)."""
    calls: dict[int, int] = {}
    history: dict[int, tuple] = {}
    inbound: dict[str, list] = {}
    for node in nodes:
        index = calls.get(id(node.layer), 0)
        calls[id(node.layer)] = index + 1
        for i, out in enumerate(node.outputs):
            history[id(out)] = (node.layer.name, index, i)
        if not node.inputs:  # an InputLayer
            continue

        def encode(tree, history=history):
            return jax.tree.map(
                lambda t: _tensor(t, history[id(t)]) if is_symbolic(t) else t,
                tree,
                is_leaf=is_symbolic,
            )

        args = [encode(a) for a in node.args]
        kwargs = {key: encode(value) for key, value in node.kwargs.items() if value is not None}
        inbound.setdefault(node.layer.name, []).append({"args": args, "kwargs": kwargs})

    def spec(tree):
        if is_symbolic(tree):
            return list(history[id(tree)])
        if isinstance(tree, dict):
            return {k: spec(v) for k, v in tree.items()}
        return [spec(v) for v in tree]

    return {"inbound": inbound, "input_layers": spec(inputs), "output_layers": spec(outputs)}


def _layer_config(layer: Layer) -> dict:
    """A Keras 3 ``config`` for a phalanx layer: the Keras arguments it was given."""
    if isinstance(layer, InputLayer):
        dtype = "float32" if layer.dtype is None else str(layer.dtype)
        dtype = "string" if layer.strings else dtype
        return {
            "batch_shape": [None, *layer.declared_input_shape],
            "dtype": dtype,
            "name": layer.name,
        }
    accepted = set(inspect.signature(type(layer).__init__).parameters) - _NOT_KERAS
    config: dict = {"name": layer.name, "trainable": layer.trainable, "dtype": _dtype(layer)}
    for key, value in layer.get_config().items():
        if key not in accepted:
            continue
        if key.endswith("_regularizer"):
            value = _regularizer_config(getattr(layer, key))
        elif key.endswith("_constraint"):
            value = _constraint_config(layer, key, value)
        elif key.endswith("_initializer") and not isinstance(value, str):
            continue  # a function: Keras's default (the weights come from the file)
        config[key] = value
    if type(layer).__name__ == "MultiHeadAttention":
        config["output_shape"] = layer.output_dim
    if type(layer).__name__ == "Bidirectional":  # its layers, as Keras serializes them
        config["layer"] = _layer_entry(layer.forward_layer, None)
        config["backward_layer"] = _layer_entry(layer.backward_layer, None)
        config.pop("weights", None)
    if type(layer).__name__ == "TimeDistributed":  # its layer, as Keras serializes it
        config["layer"] = _layer_entry(layer.layer, None)
    return config


def _dtype(layer: Layer) -> Any:
    """The layer's dtype policy as Keras 3 writes it (``"float32"``, Keras's default, as is)."""
    name = layer.dtype_policy.name
    return name if name == "float32" else _policy_entry(name)


def _model_dtype(model: Any) -> dict:
    """``{"dtype": mixed_float16's policy}`` for a model whose ``compile`` added a
    ``LossScaleOptimizer`` (the policy was ``mixed_float16``), so that Keras's ``compile``
    adds it too and reads its variables; else nothing (Keras: the global policy)."""
    if not isinstance(model.optimizer, LossScaleOptimizer):
        return {}
    given = model.get_compile_config().get("optimizer")
    if isinstance(given, dict) and given.get("class_name") == "LossScaleOptimizer":
        return {}  # the user's own, not the policy's
    return {"dtype": _policy_entry("mixed_float16")}


def _policy_entry(name: str) -> dict:
    return {
        "module": "keras",
        "class_name": "DTypePolicy",
        "config": {"name": name},
        "registered_name": None,
    }


def _regularizer_config(regularizer: Any) -> Any:
    if regularizer is None:
        return None
    get_config = getattr(regularizer, "get_config", None)
    if get_config is None:
        raise KerasFileError(
            f"The regularizer {regularizer!r} is a function: Keras files hold named "
            "regularizers only (L1, L2, L1L2)."
        )
    return {
        "module": "keras.regularizers",
        "class_name": type(regularizer).__name__,
        "config": get_config(),
        "registered_name": None,
    }


def _constraint_config(layer: Layer, key: str, value: Any) -> Any:
    """``get_config``'s serialized constraint, when it is one of Keras's (else refused)."""
    if value is None or (isinstance(value, dict) and value.get("module") == "keras.constraints"):
        return value
    raise KerasFileError(
        f"Layer '{layer.name}' has {key}={value!r}, a constraint of one's own: Keras files "
        "hold Keras's constraints only (MaxNorm, MinMaxNorm, NonNeg, UnitNorm). Save the "
        "weights (save_weights) and build the model in Python."
    )


def _is_own(layer: Layer) -> bool:
    """Whether the layer's class is one of one's own (not one of phalanx's layers)."""
    cls = type(layer)
    return getattr(_layers, cls.__name__, None) is not cls


def _own_config(layer: Layer) -> dict:
    """A layer of one's own's ``get_config()``, with Keras's dtype policy entry, as Keras
    writes it (Keras's base ``get_config`` gives a custom layer's policy as an entry)."""
    config = dict(layer.get_config())
    policy = _policy_entry(layer.dtype_policy.name)
    config.update(name=layer.name, trainable=layer.trainable, dtype=policy)
    return config


def _layer_entry(layer: Layer, inbound: list | None) -> dict:
    if _is_own(layer):  # Keras's entry of a custom class: its module and registered name
        cls = type(layer)
        entry = {
            "module": cls.__module__,
            "class_name": cls.__name__,
            "config": _own_config(layer),
            "registered_name": saving.get_registered_name(cls),
            "name": layer.name,
        }
    else:
        entry = {
            "module": "keras.layers",
            "class_name": type(layer).__name__,
            "config": _layer_config(layer),
            "registered_name": None,
            "name": layer.name,
        }
    if inbound is not None:
        entry["inbound_nodes"] = inbound
    return entry


def model_config(model: Any) -> dict:
    """Keras 3's ``config.json`` of a phalanx ``Sequential`` or functional model.

    Raises:
      KerasFileError: a subclassed model or a wrapped nnx module (its class is code).
    """
    from ..models._functional import Functional
    from ..models._sequential import Sequential

    module = model._module
    if isinstance(model, Sequential):
        net = module
        first = {
            "module": "keras.layers",
            "class_name": "InputLayer",
            "config": {
                "batch_shape": [None, *(net.input_shape or ())],
                "dtype": net.keras_input_dtype,
                "name": "input_layer",
            },
            "registered_name": None,
        }
        first_entries = [] if net.input_shape is None else [first]  # no Input: none, as Keras
        layers = first_entries + [_layer_entry(layer, None) for layer in net.layers]
        return {
            "module": "keras",
            "class_name": "Sequential",
            "config": {
                "name": model.name,
                "trainable": True,
                "layers": layers,
                **_model_dtype(model),
            },
            "registered_name": None,
        }
    if isinstance(module, Functional):
        graph = module._graph.keras
        layers = [
            _layer_entry(layer, graph["inbound"].get(layer.name, [])) for layer in module.layers
        ]
        config = {
            "name": model.name,
            "trainable": True,
            "layers": layers,
            "input_layers": graph["input_layers"],
            "output_layers": graph["output_layers"],
            **_model_dtype(model),
        }
        return {
            "module": "keras.src.models.functional",
            "class_name": "Functional",
            "config": config,
            "registered_name": "Functional",
        }
    raise KerasFileError(
        f"Model {model.name!r} is {_kind(model, module)}: a .keras file describes Sequential and functional models (a subclassed model's class "
        "is code). Save its weights with save_weights('m.weights.h5') instead."
    )


def _kind(model: Any, module: Any) -> str:
    """What the model is, for the refusal: a subclassed model names its class."""
    if _subclassed.is_subclassed(model):
        return f"a subclassed model (class {type(model).__name__})"
    return f"a Model around the nnx module {type(module).__name__}"
