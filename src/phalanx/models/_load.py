"""``load_model``: a Keras 3 ``.keras`` file rebuilt with phalanx's own layers.

The zip's ``config.json`` describes a ``Sequential`` or functional model: each layer is
made from its class name and config (only phalanx's layers; Keras arguments phalanx does
not take are refused by name), the functional graph is replayed from the layers'
``inbound_nodes``, then ``model.weights.h5`` is loaded (`phalanx.saving`). A layer of
one's own is made from the class its ``registered_name`` names in `phalanx.saving`'s
registry (``@register_keras_serializable``, ``custom_object_scope``, ``custom_objects=``).
No code from a file is run, as Keras's ``safe_mode``: a ``Lambda`` layer or an unknown
class is refused with a clear error.
"""

from __future__ import annotations

import inspect
import os
import zipfile
from collections.abc import Callable
from typing import Any

from .. import layers as _layers
from .. import saving
from ..errors import KerasFileError
from ..layers import Input, Layer
from ..models import _functional
from ..models._model import Model
from ..models._sequential import Sequential
from ..saving import _archive
from ..saving import _compile_config as _keras_compile
from ..saving import _keras_model as _keras_files

# Keras arguments phalanx accepts without implementing: they do not change what is computed
# from loaded weights (initializers, the dtype policy) or only take their default values.
_IGNORED = {
    "dtype",
    "trainable",
    "build_config",
    "seed",
    "sparse",
    "ragged",
    "optional",
    # MultiHeadAttention records the shapes it was built for: informative only.
    "query_shape",
    "key_shape",
    "value_shape",
}


_IGNORED_IF_DEFAULT = {
    "kernel_constraint": None,
    "bias_constraint": None,
    "embeddings_constraint": None,
    "beta_constraint": None,
    "gamma_constraint": None,
    "quantization_config": None,
    "lora_rank": None,
    "lora_alpha": None,
    "activity_regularizer": None,
    "kernel_regularizer": None,
    "bias_regularizer": None,
    "embeddings_regularizer": None,
    "beta_regularizer": None,
    "gamma_regularizer": None,
    "mask_zero": False,
    "rms_scaling": False,
    "flash_attention": None,
    "use_gate": False,
    "sliding_window": None,
    "renorm": False,
    "renorm_clipping": None,
    "renorm_momentum": 0.99,
    "data_format": "channels_last",
    "zero_output_for_mask": False,
}


def _argument(layer_class: str, name: str, key: str, value: Any) -> Any:
    """The value to pass for a Keras config entry; raises on code or unsupported forms."""
    if isinstance(value, dict) and value.get("class_name") in ("__lambda__", "function"):
        raise KerasFileError(
            f"Layer '{name}' ({layer_class}) gives {key} as a function stored in the file; "
            "phalanx never runs code from a file (Keras's safe_mode). Use a named "
            "activation, or build the model in Python."
        )
    if key in ("layer", "backward_layer") and isinstance(value, dict) and "class_name" in value:
        # Bidirectional's layers; it sets their zero_output_for_mask itself, as Keras
        config = {k: v for k, v in value.get("config", {}).items() if k != "zero_output_for_mask"}
        return _make_layer({**value, "config": config})
    if key == "axis" and isinstance(value, list) and len(value) == 1:
        return value[0]  # LayerNormalization records axis=[-1]
    if isinstance(value, list):
        return tuple(_argument(layer_class, name, key, v) for v in value)
    return value


def _make_layer(entry: dict) -> Any:
    """A phalanx layer from one Keras layer config entry (``Input`` for an ``InputLayer``)."""
    layer_class = entry.get("class_name")
    config = dict(entry.get("config") or {})
    name = config.get("name", entry.get("name"))
    if layer_class == "InputLayer":
        shape = config.get("batch_shape") or config.get("batch_input_shape")
        return Input(batch_shape=shape, dtype=config.get("dtype"), name=name)
    if layer_class == "Lambda":
        raise KerasFileError(
            f"Layer '{name}' is a Lambda layer: it runs Python code stored in the file, and "
            "phalanx never runs code from a file (Keras's safe_mode). Rebuild the model in "
            "Python with a layer of your own, then load_weights the .weights.h5."
        )
    registered = entry.get("registered_name", layer_class)
    custom = None if registered is None else saving.get_registered_object(registered)
    if custom is not None:
        return _custom_layer(custom, layer_class, name, config)
    cls = getattr(_layers, str(layer_class), None)
    if registered not in (None, layer_class) or not (
        isinstance(cls, type) and issubclass(cls, Layer)
    ):
        raise KerasFileError(
            f"Layer '{name}' is a {layer_class!r} (registered name {registered!r}), which "
            "phalanx does not have and no registered class or custom_objects entry names. "
            "Decorate your class with @phalanx.saving.register_keras_serializable() and "
            "import it before loading, or pass custom_objects={" + repr(registered) + ": "
            f"YourClass}} (or use custom_object_scope). phalanx's layers: "
            f"{sorted(_layers.__all__)}."
        )
    accepted = inspect.signature(cls.__init__).parameters
    kwargs = {}
    for key, value in config.items():
        if key.endswith("_initializer"):
            continue  # the weights come from the file
        ignored = key in _IGNORED or key == "name"
        ignored = ignored or (key in _IGNORED_IF_DEFAULT and value == _IGNORED_IF_DEFAULT[key])
        if key == "dtype" and key in accepted:
            kwargs[key] = _dtype_policy(layer_class, name, value)
        elif key in accepted and key != "input_shape":
            kwargs[key] = _argument(layer_class, name, key, value)
        elif not ignored:
            raise KerasFileError(
                f"Layer '{name}' ({layer_class}) has {key}={value!r}, which phalanx's "
                f"{layer_class} does not implement; rather than compute something else, "
                "phalanx refuses the file."
            )
    layer = cls(**kwargs)
    layer.trainable = bool(config.get("trainable", True))
    return layer


def _custom_layer(cls: Any, layer_class: str, name: str, config: dict) -> Any:
    """A layer of one's own (registered, or in a scope or ``custom_objects``), made with
    ``cls.from_config(config)`` as Keras does; its dtype policy as phalanx's ``dtype=``."""
    if not (isinstance(cls, type) and issubclass(cls, Layer)):
        raise KerasFileError(
            f"Layer '{name}' ({layer_class}) resolves to {cls!r}, which is not a "
            "phalanx.layers.Layer subclass; register or pass the layer class itself."
        )
    if "dtype" in config:
        config["dtype"] = _dtype_policy(layer_class, name, config["dtype"])
    try:
        return cls.from_config(config)
    except TypeError as error:
        raise KerasFileError(
            f"Layer '{name}' ({cls.__name__}) could not be made from its config "
            f"({error}); its from_config (or __init__) must take every key its get_config "
            f"returns: {sorted(config)}."
        ) from error


def _dtype_policy(layer_class: str, name: str, value: Any) -> Any:
    """A layer's ``dtype`` entry (a dtype name, or Keras's ``DTypePolicy``) as phalanx's
    ``dtype=``: the policy's name; None (the global policy) for none."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict) and value.get("class_name") in ("DTypePolicy", "FloatDTypePolicy"):
        return (value.get("config") or {}).get("name")
    raise KerasFileError(
        f"Layer '{name}' ({layer_class}) has dtype={value!r}; phalanx reads a dtype name or "
        "Keras's DTypePolicy (float32, mixed_float16, mixed_bfloat16, ...), not a quantized "
        "or custom policy. Save the model unquantized."
    )


def model_policy(config: dict) -> Any:
    """The dtype policy's name a file gives the model itself, or None."""
    value = (config.get("config") or {}).get("dtype")
    return _dtype_policy(str(config.get("class_name")), "the model", value)


def _history(value: Any) -> tuple | None:
    if isinstance(value, dict) and value.get("class_name") == "__keras_tensor__":
        return tuple(value["config"]["keras_history"])
    return None


def _resolve(value: Any, tensors: dict) -> Any:
    """A config's call argument with each ``__keras_tensor__`` replaced by its tensor."""
    history = _history(value)
    if history is not None:
        layer, node, index = history
        return tensors[(layer, node)][index]
    if isinstance(value, list):
        return [_resolve(v, tensors) for v in value]
    if isinstance(value, dict):
        return {k: _resolve(v, tensors) for k, v in value.items()}
    return value


def functional(
    config: dict,
    name: str,
    make: Callable[[dict], Any] = _make_layer,
    call: Callable | None = None,
    seed: int | None = None,
) -> Any:
    """The functional model a Keras config describes, its graph replayed from the layers'
    ``inbound_nodes``: each layer (an ``Input`` for an ``InputLayer``) from ``make(entry)``,
    called as ``call(layer, *args, **kwargs)`` when given (``clone_model``'s
    ``call_function``); its weights from ``seed`` (None: the model default)."""
    tensors: dict[tuple, list] = {}
    calls: dict[str, int] = {}
    for entry in config["layers"]:
        layer_name = entry.get("name") or entry["config"]["name"]
        made = make(entry)
        if entry.get("class_name") == "InputLayer":
            tensors[(layer_name, 0)] = [made]
            continue
        for node in entry.get("inbound_nodes", []):
            if not isinstance(node, dict):
                raise KerasFileError(
                    f"Layer '{layer_name}' has inbound nodes in Keras 2's format; phalanx reads "
                    "Keras 3 .keras files."
                )
            args = _resolve(node.get("args", []), tensors)
            kwargs = {k: v for k, v in _resolve(node.get("kwargs", {}), tensors).items()}
            kwargs = {k: v for k, v in kwargs.items() if v is not None and k != "mask"}
            out = made(*args, **kwargs) if call is None else call(made, *args, **kwargs)
            index = calls.get(layer_name, 0)
            calls[layer_name] = index + 1
            tensors[(layer_name, index)] = out if isinstance(out, list) else [out]

    def pick(spec):
        if isinstance(spec, dict):
            return {k: pick(v) for k, v in spec.items()}
        if spec and isinstance(spec[0], list):
            return [pick(s) for s in spec]
        layer, node, index = spec
        return tensors[(layer, node)][index]

    inputs, outputs = pick(config["input_layers"]), pick(config["output_layers"])
    return Model(_functional.Functional(inputs, outputs, name=name, seed=seed), name=name)


def _sequential(config: dict, name: str) -> Any:
    return Sequential([_make_layer(entry) for entry in config["layers"]], name=name)


def model_from_config(config: dict, path: str, *, built: bool = True) -> Any:
    """The model ``config.json`` describes; a config of another shape is refused by name.
    ``built``: a Sequential model without an ``Input`` is refused (a file's weights need
    the layers built); `model_from_json` takes one, unbuilt, as Keras."""
    kind = config.get("class_name")
    inner = config.get("config")
    if not isinstance(inner, dict) or not isinstance(inner.get("layers"), list):
        raise KerasFileError(
            f"{path!r}: its config.json has no model config with a list of layers "
            f"(got class_name={kind!r}, config of type {type(inner).__name__})."
        )
    for i, entry in enumerate(inner["layers"]):
        if not (
            isinstance(entry, dict)
            and isinstance(entry.get("class_name"), str)
            and isinstance(entry.get("config"), dict)
        ):
            raise KerasFileError(
                f"{path!r}: layer {i} of its config.json is {str(entry)[:80]!r}; a Keras "
                'layer entry is an object with a "class_name" string and a "config" object.'
            )
    name = inner.get("name")
    try:
        if kind == "Sequential":
            model = _sequential(inner, name)
        elif kind in ("Functional", "Model"):
            model = functional(inner, name)
        else:
            raise KerasFileError(
                f"{path!r} holds a {kind!r} model; phalanx reads Sequential and functional "
                "models (a subclassed model's class is code: rebuild it in Python, then "
                "load_weights its .weights.h5)."
            )
    except KerasFileError:
        raise
    except (KeyError, IndexError, TypeError, ValueError) as error:
        raise KerasFileError(
            f"{path!r}: its config.json does not describe a model phalanx can build "
            f"({type(error).__name__}: {error})."
        ) from error
    if built and not model.built:
        raise KerasFileError(f"{path!r}: the Sequential model has no Input; cannot build it.")
    return model


def read_model(path: Any, custom_objects: Any, compile: bool, safe_mode: bool) -> Any:
    """`phalanx.saving.load_model`'s reader (that package sits below this one, which
    hands it this function when imported): the model the ``.keras`` file describes."""
    del safe_mode  # phalanx is always safe
    path = os.fspath(path)
    given = saving.CustomObjectScope(custom_objects).custom_objects  # a dict, or TypeError
    with saving.custom_object_scope({**given, **saving.current_scope()}):
        return _load(path, compile)


def _load(path: str, compile: bool) -> Any:
    handle = _keras_files.open_file(path, "model file")  # a local path or a URL (phalanx.io)
    try:
        archive = zipfile.ZipFile(handle)
    except (zipfile.BadZipFile, OSError) as e:
        handle.close()
        raise KerasFileError(
            f"{path!r} is not a Keras 3 .keras file (a zip with config.json and "
            f"model.weights.h5): {e}."
        ) from None
    with handle, archive:
        config = _archive.parse_config(
            _archive.read_member(archive, "config.json", path, _archive.MAX_CONFIG_BYTES), path
        )
        model = model_from_config(config, path)
        # Keras's file holds the weights and at most a few optimizer slots per weight.
        cap = 8 * sum(int(w.nbytes) for w in model.get_weights()) + 2**24
        weights = _archive.read_member(archive, "model.weights.h5", path, cap)
        _keras_files.load_host_state(model, archive, weights, path)  # vocabularies, IDF
    _keras_files.load_h5(model, weights, f"{path}:model.weights.h5")
    if compile and config.get("compile_config"):
        mixed = model_policy(config) == "mixed_float16"  # Keras's compile adds loss scaling
        _keras_compile.compile_from_config(model, config["compile_config"], path, mixed)
        if model._config is not None:  # compiled: its optimizer's state too
            _keras_files.restore_optimizer(model, weights, f"{path}:model.weights.h5")
    return model


saving.set_model_reader(read_model)  # phalanx.saving.load_model (and models') reads with it
