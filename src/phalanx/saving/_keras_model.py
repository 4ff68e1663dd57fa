"""Keras 3 files: ``.weights.h5`` both ways, and ``.keras`` models read into phalanx.

**Weights** (``model.save_weights("m.weights.h5")``/``load_weights``): Keras 3
stores each layer's variables at ``layers/<key>/vars/<i>``, with ``<key>``
the snake-case class name made unique in the order of ``model.layers``
(``dense``, ``dense_1``, ...; a functional model's ``InputLayer`` s count, a
``Sequential``'s do not), not the layer's name; ``MultiHeadAttention`` nests
``query_dense``, ``key_dense``, ``value_dense``, ``output_dense``. phalanx
writes and reads that layout, each layer's arrays in Keras's order (what
``layer.get_weights()`` returns), so Keras loads a phalanx file and the
reverse, given the same architecture.

**Writing models** (``model.save("m.keras")``, Sequential and functional):
``config.json`` in Keras 3's format (each layer's Keras class and the
arguments phalanx's layer was given, functional ``inbound_nodes`` with
``__keras_tensor__`` histories), ``model.weights.h5`` as above, and
``metadata.json``; ``keras.models.load_model`` reads it.

**Models** (``phalanx.models.load_model("m.keras")``): the zip's
``config.json`` is read as data and each layer is made from phalanx's class
of the same name with the arguments phalanx takes; ``Sequential`` and
functional models (several inputs and outputs, shared layers) are rebuilt
from their ``inbound_nodes``; then ``model.weights.h5`` is loaded. No code
from a file is run, as Keras's ``safe_mode``: a ``Lambda`` layer, a custom
class or a function given by its code is refused with a clear error, and so
is a Keras argument phalanx does not implement (rather than a model that
computes something else).

Needs ``h5py`` (``pip install phalanx[keras]``; Keras itself is not needed).
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from typing import Any

import numpy as np

from .. import layers as _layers
from ..errors import KerasFileError
from ..layers._layer import Layer, snake_case
from . import _compile_config as _keras_compile

_MHA_PARTS = ("query_dense", "key_dense", "value_dense", "output_dense")


def _h5py():
    try:
        import h5py
    except ImportError:  # pragma: no cover - h5py ships with the keras extra
        raise KerasFileError(
            "Reading and writing Keras files needs h5py: pip install h5py "
            "(or pip install 'phalanx[keras]')."
        ) from None
    return h5py


def is_keras_weights(path: Any) -> bool:
    """True for a path ending in ``.weights.h5`` (Keras 3's weights file)."""
    return os.fspath(path).endswith(".weights.h5")


def _keys(model: Any) -> list[tuple[str, Layer]]:
    """``(h5 key, layer)`` for the model's layers, Keras's unique snake-case class names."""
    used: dict[str, int] = {}
    out = []
    for layer in model.layers:
        base = snake_case(type(layer).__name__)
        if base in used:
            used[base] += 1
            key = f"{base}_{used[base]}"
        else:
            used[base] = 0
            key = base
        out.append((key, layer))
    return out


def _groups(layer: Layer) -> list[tuple[str, int]]:
    """``(subpath, number of arrays)`` under the layer's group, in ``get_weights`` order."""
    count = len(layer.get_weights()) if layer.built else 0
    if type(layer).__name__ == "MultiHeadAttention" and count:
        per = count // 4
        return [(f"{part}/", per) for part in _MHA_PARTS]
    return [("", count)]


def _refuse_nested(model: Any) -> None:
    from ..models._nested import NestedModel

    nested = [layer.name for layer in model.layers if isinstance(layer, NestedModel)]
    if nested:
        raise KerasFileError(
            f"Model {model.name!r} holds models used as layers ({nested}); phalanx does not "
            "write Keras files of nested models yet. Save each model's weights on its own, or "
            "use save_weights('m.npz')."
        )


def save_weights(model: Any, path: Any) -> None:
    """Writes ``model``'s weights as a Keras 3 ``.weights.h5`` file (on process 0).

    Raises:
      KerasFileError: the model has no weights yet, or holds nested models.
    """
    import jax

    _refuse_nested(model)

    if not model.built:
        raise KerasFileError(
            f"Model {model.name!r} has no weights yet: build or fit it before save_weights."
        )
    if jax.process_index() != 0:
        return
    h5py = _h5py()
    path = os.fspath(path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    with h5py.File(tmp, "w") as f:
        f.create_group("vars").attrs["name"] = model.name
        root = f.create_group("layers")
        for key, layer in _keys(model):
            arrays = layer.get_weights() if layer.built else []
            start = 0
            for sub, count in _groups(layer):
                vars_group = root.create_group(f"{key}/{sub}vars")
                vars_group.attrs["name"] = layer.name
                for i, array in enumerate(arrays[start : start + count]):
                    vars_group.create_dataset(str(i), data=np.asarray(array))
                start += count
    os.replace(tmp, path)


def load_weights(model: Any, path: Any) -> None:
    """Reads a Keras 3 ``.weights.h5`` file into ``model`` (same architecture).

    Raises:
      FileNotFoundError: no such file.
      KerasFileError: not an HDF5 weights file, or its layers or shapes differ.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"No weights file at {path!r}.")
    with open(path, "rb") as f:
        _load_h5(model, f.read(), path)


def _load_h5(model: Any, data: bytes, where: str) -> None:
    h5py = _h5py()
    try:
        f = h5py.File(io.BytesIO(data), "r")
    except OSError as e:
        raise KerasFileError(f"{where!r} is not a Keras .weights.h5 file (HDF5): {e}.") from None
    with f:
        if "layers" not in f:
            raise KerasFileError(f"{where!r} has no 'layers' group: not a Keras 3 weights file.")
        stored = f["layers"]
        for key, layer in _keys(model):
            if not layer.built or not layer.get_weights():
                continue
            if key not in stored:
                raise KerasFileError(
                    f"{where!r} holds no weights for layer '{layer.name}' "
                    f"({type(layer).__name__}, key {key!r}); it holds {sorted(stored)}. Load it "
                    "into a model of the same architecture (same layers, same order)."
                )
            arrays = []
            for sub, count in _groups(layer):
                group = stored[f"{key}/{sub}vars"]
                if len(group) != count:
                    raise KerasFileError(
                        f"Layer '{layer.name}' has {count} arrays under {key}/{sub}vars; "
                        f"{where!r} holds {len(group)}."
                    )
                arrays.extend(np.asarray(group[str(i)]) for i in range(count))
            try:
                layer.set_weights(arrays)
            except ValueError as e:
                raise KerasFileError(f"{where!r}, layer '{layer.name}': {e}") from None


# -- .keras models --------------------------------------------------------------------

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
}


def _argument(layer_class: str, name: str, key: str, value: Any) -> Any:
    """The value to pass for a Keras config entry; raises on code or unsupported forms."""
    if isinstance(value, dict) and value.get("class_name") in ("__lambda__", "function"):
        raise KerasFileError(
            f"Layer '{name}' ({layer_class}) gives {key} as a function stored in the file; "
            "phalanx never runs code from a file (Keras's safe_mode). Use a named "
            "activation, or build the model in Python."
        )
    if key == "axis" and isinstance(value, list) and len(value) == 1:
        return value[0]  # LayerNormalization records axis=[-1]
    if isinstance(value, list):
        return tuple(_argument(layer_class, name, key, v) for v in value)
    return value


def _make_layer(entry: dict) -> Any:
    """A phalanx layer from one Keras layer config entry (``Input`` for an ``InputLayer``)."""
    import inspect

    from ..layers._core import Input

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
    cls = getattr(_layers, str(layer_class), None)
    if entry.get("registered_name") not in (None, layer_class) or not (
        isinstance(cls, type) and issubclass(cls, Layer)
    ):
        raise KerasFileError(
            f"Layer '{name}' is a {layer_class!r} ({entry.get('registered_name')}), which "
            "phalanx does not have; phalanx makes only its own layers from a file, and runs no "
            f"code from it. Its layers: {sorted(_layers.__all__)}."
        )
    accepted = inspect.signature(cls.__init__).parameters
    kwargs = {}
    for key, value in config.items():
        if key.endswith("_initializer"):
            continue  # the weights come from the file
        ignored = key in _IGNORED or key == "name"
        ignored = ignored or (key in _IGNORED_IF_DEFAULT and value == _IGNORED_IF_DEFAULT[key])
        if key in accepted and key not in ("dtype", "input_shape"):
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


def _functional(config: dict, name: str) -> Any:
    from ..models._model import Model

    tensors: dict[tuple, list] = {}
    calls: dict[str, int] = {}
    for entry in config["layers"]:
        layer_name = entry.get("name") or entry["config"]["name"]
        made = _make_layer(entry)
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
            out = made(*args, **kwargs)
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

    return Model(pick(config["input_layers"]), pick(config["output_layers"]), name=name)


def _sequential(config: dict, name: str) -> Any:
    from ..models._sequential import Sequential

    return Sequential([_make_layer(entry) for entry in config["layers"]], name=name)


def load_model(
    path: Any, custom_objects: Any = None, compile: bool = True, safe_mode: bool = True
) -> Any:
    """Reads a Keras 3 ``.keras`` file into a phalanx model, running no code from it.

    Args:
      path: the ``.keras`` file (a zip of ``config.json`` and ``model.weights.h5``).
      custom_objects: Keras's argument; phalanx runs no code from a file, so it
        must be None or empty.
      compile: compile the model with the file's ``compile_config`` (its optimizer,
        loss, metrics), as Keras; the optimizer's state is not read (it starts
        afresh). A configuration phalanx cannot rebuild warns and loads the
        model uncompiled.
      safe_mode: Keras's argument; phalanx is always safe (no ``Lambda`` code).

    Returns:
      A ``phalanx.Sequential`` or functional ``phalanx.Model`` with the file's
      weights, compiled when ``compile`` and the file says how.

    Raises:
      FileNotFoundError: no such file.
      KerasFileError: not a ``.keras`` file, a layer phalanx does not have (a
        ``Lambda``, a custom class), or a Keras argument phalanx does not implement.
    """
    path = os.fspath(path)
    if custom_objects:
        raise KerasFileError(
            f"load_model({path!r}, custom_objects=...): phalanx runs no code from a file and "
            "has no custom objects; build the model in Python and load_weights its weights."
        )
    if not os.path.exists(path):
        raise FileNotFoundError(f"No model file at {path!r}.")
    try:
        with zipfile.ZipFile(path) as archive:
            config = json.loads(archive.read("config.json"))
            weights = archive.read("model.weights.h5")
    except (zipfile.BadZipFile, KeyError, json.JSONDecodeError) as e:
        raise KerasFileError(
            f"{path!r} is not a Keras 3 .keras file (a zip with config.json and "
            f"model.weights.h5): {e}."
        ) from None
    kind = config.get("class_name")
    inner = config.get("config", {})
    name = inner.get("name")
    if kind == "Sequential":
        model = _sequential(inner, name)
    elif kind in ("Functional", "Model") and "layers" in inner:
        model = _functional(inner, name)
    else:
        raise KerasFileError(
            f"{path!r} holds a {kind!r} model; phalanx reads Sequential and functional "
            "models (a subclassed model's class is code: rebuild it in Python, then "
            "load_weights its .weights.h5)."
        )
    if not model.built:
        raise KerasFileError(f"{path!r}: the Sequential model has no Input; cannot build it.")
    _load_h5(model, weights, f"{path}:model.weights.h5")
    if compile and config.get("compile_config"):
        _keras_compile.compile_from_config(model, config["compile_config"], path)
    return model


# -- writing .keras ---------------------------------------------------------------------

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
    import jax

    from ..layers._symbolic import is_symbolic

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
    import inspect

    from ..layers._core import InputLayer

    if isinstance(layer, InputLayer):
        dtype = "float32" if layer.dtype is None else str(layer.dtype)
        return {
            "batch_shape": [None, *layer.declared_input_shape],
            "dtype": dtype,
            "name": layer.name,
        }
    accepted = set(inspect.signature(type(layer).__init__).parameters) - _NOT_KERAS
    config: dict = {"name": layer.name, "trainable": layer.trainable, "dtype": "float32"}
    for key, value in layer.get_config().items():
        if key not in accepted:
            continue
        if key.endswith("_regularizer"):
            value = _regularizer_config(getattr(layer, key))
        elif key.endswith("_initializer") and not isinstance(value, str):
            continue  # a function: Keras's default (the weights come from the file)
        config[key] = value
    if type(layer).__name__ == "MultiHeadAttention":
        config["output_shape"] = layer.output_dim
    return config


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


def _layer_entry(layer: Layer, inbound: list | None) -> dict:
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
                "batch_shape": [None, *net.input_shape],
                "dtype": "float32",
                "name": "input_layer",
            },
            "registered_name": None,
        }
        layers = [first] + [_layer_entry(layer, None) for layer in net.layers]
        return {
            "module": "keras",
            "class_name": "Sequential",
            "config": {"name": model.name, "trainable": True, "layers": layers},
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
        }
        return {
            "module": "keras.src.models.functional",
            "class_name": "Functional",
            "config": config,
            "registered_name": "Functional",
        }
    raise KerasFileError(
        f"Model {model.name!r} is a {type(model).__name__} over {type(module).__name__}: a "
        ".keras file describes Sequential and functional models (a subclassed model's class "
        "is code). Save its weights with save_weights('m.weights.h5') instead."
    )


def save_model(model: Any, path: Any) -> None:
    """Writes ``model`` as a Keras 3 ``.keras`` file that ``keras.models.load_model`` reads.

    Raises:
      KerasFileError: a subclassed model, or no weights yet.
    """
    import datetime
    import tempfile

    import jax

    _refuse_nested(model)
    config = model_config(model)
    config["compile_config"] = _keras_compile.compile_config(model)
    if jax.process_index() != 0:
        return
    path = os.fspath(path)
    with tempfile.TemporaryDirectory() as tmp:
        weights = os.path.join(tmp, "model.weights.h5")
        save_weights(model, weights)
        metadata = {
            "keras_version": "3.10.0",
            "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S"),
            "saved_by": "phalanx",
        }
        staged = f"{path}.tmp{os.getpid()}"
        with zipfile.ZipFile(staged, "w") as archive:
            archive.writestr("metadata.json", json.dumps(metadata))
            archive.writestr("config.json", json.dumps(config))
            archive.write(weights, "model.weights.h5")
        os.replace(staged, path)
