"""``model.export(path)``: the inference function as a ``jax.export`` artifact, for serving.

What replaces TensorFlow's SavedModel (Keras 3's ``model.export(path,
format="tf_saved_model")``, which needs TensorFlow): the model's forward pass in
inference mode, its weights baked in as constants, traced once by
``jax.export`` for a symbolic batch size (``"b"``) and serialized (StableHLO
with a version; JAX keeps reading artifacts for six months of releases). A
server loads it without the model's Python code::

    exported = jax.export.deserialize(phalanx.io.gfile.GFile(path, "rb").read())
    outputs = exported.call(batch)

Serialization uses the ``flatbuffers`` package (JAX's optional dependency,
phalanx's own; an install without it gets an ``ExportError`` saying so). To
train on, save a ``.keras`` file instead (``model.save``).
"""

from __future__ import annotations

from typing import Any

import jax
from flax import nnx

from ..errors import ExportError
from ..io import _fs
from ..train import _step

# Keras 3's formats that need TensorFlow (or onnx/openvino); phalanx writes none.
_TF_FORMATS = ("", "tf_saved_model", "onnx", "openvino")


def exported(model: Any, input_signature: Any = None) -> jax.export.Exported:
    """The ``jax.export.Exported`` of ``model``'s inference pass (weights as constants).

    Args:
      model: a built phalanx model.
      input_signature: ``jax.ShapeDtypeStruct`` (or a pytree of them, as the model's
        inputs); by default the model's ``input_shape`` as float32 with a symbolic
        batch size ``b`` (give it for integer inputs: token ids).

    Raises:
      ExportError: the model is not built and no ``input_signature`` says its inputs.
    """
    if input_signature is None:
        input_signature = _default_signature(model)
    module = model.module  # the trained weights, synced from the training state
    graphdef, state = nnx.split(module)
    state = jax.device_get(state)
    style = _step.module_call_style(module)
    kwargs = {"training": False} if style["takes_training"] else {}

    def serve(inputs):
        return nnx.merge(graphdef, state)(inputs, **kwargs)

    return jax.export.export(jax.jit(serve))(input_signature)


def _default_signature(model: Any) -> Any:
    """The model's inputs as float32 ``ShapeDtypeStruct`` s with a symbolic batch size."""
    try:
        shapes = model.input_shape if model.built else None
    except AttributeError:
        shapes = None
    if shapes is None:
        raise ExportError(
            f"model.export: model {model.name!r} has no known input shape (built: "
            f"{model.built}). Start it with Input(shape=...), or pass "
            "input_signature=jax.ShapeDtypeStruct(shape, dtype)."
        )
    (batch,) = jax.export.symbolic_shape("b")

    def spec(shape):
        return jax.ShapeDtypeStruct((batch, *shape[1:]), "float32")

    is_shape = lambda s: isinstance(s, tuple)  # noqa: E731
    return jax.tree.map(spec, shapes, is_leaf=is_shape)


def export(model: Any, filepath: Any, format: str, input_signature: Any) -> None:
    """Writes ``exported(model)`` serialized to ``filepath`` (local or a URL), on process 0."""
    if format in _TF_FORMATS:
        raise ExportError(
            f"model.export(format={format!r}): phalanx has no TensorFlow, ONNX or OpenVINO "
            "writer. Use format='jax' (a jax.export artifact: load it with "
            "jax.export.deserialize(bytes).call(x)), or model.save('m.keras') to keep the model."
        )
    if format != "jax":
        raise ExportError(f"model.export: unknown format {format!r}; phalanx writes 'jax'.")
    artifact = exported(model, input_signature)
    try:
        data = artifact.serialize()
    except ImportError as e:
        raise ExportError(
            f"model.export({str(filepath)!r}): JAX serializes exported functions with the "
            f"flatbuffers package, which is not installed ({e}). pip install flatbuffers."
        ) from None
    if jax.process_index() != 0:
        return

    with _fs.atomic_write(filepath) as f:
        f.write(bytes(data))


__all__ = ["export", "exported"]
