"""``Model``: a flax.nnx module with Keras's model API; training comes from ``Trainer``.

Keras 3's split: the model (building, calling, weights, files, summary) is here; its
``compile``/``fit``/``evaluate``/``predict`` are `phalanx.train._trainer.Trainer`'s,
which ``Model`` inherits and feeds through a few hooks (``_build_from_example``).

Strategy (a decision of this project): a model belongs to the strategy current
when it is created (``model.distribute_strategy``). A model created outside
any scope and compiled inside one is *moved* onto that strategy's mesh (its
weights are replicated there; one log line says so). A model created under
one strategy and compiled under another raises, since its weights already
live on the first strategy's devices.
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import flax.nnx as nnx
import jax
import jax.numpy as jnp
import numpy as np

from .. import regularizers, saving
from ..distribute import Strategy, get_strategy
from ..errors import KerasFileError, LayerArgumentError, WeightsFileError, WeightsFileExistsError
from ..io import _fs
from ..layers import Layer
from ..layers import _weights as _layer_weights
from ..saving import _keras_model as _keras_files
from ..saving import _npz as _weights
from ..train import _step
from ..train._trainer import Trainer
from . import _export, _functional, _keras_config, _memory, _nested, _optimizer_count, _subclassed
from ._introspection import ModelIntrospection
from ._memory import readable_size

log = logging.getLogger("phalanx")


def _per_example(shape: Any) -> Any:
    """``build``'s shapes without Keras's batch axis: ``(None, 784)`` -> ``(784,)``."""
    if isinstance(shape, dict):
        return {k: _per_example(v) for k, v in shape.items()}
    if isinstance(shape, list | tuple) and any(isinstance(s, list | tuple) for s in shape):
        return [_per_example(s) for s in shape]  # one shape per input
    shape = tuple(shape)
    return shape[1:] if len(shape) >= 2 and shape[0] is None else shape


class Model(Trainer, ModelIntrospection):
    """A trainable model: a flax.nnx module plus Keras's training API.

    Three ways to make one, as Keras: ``Model(inputs, outputs)`` over
    symbolic tensors from ``phalanx.Input`` (functional,
    `phalanx.models._functional`); a subclass with layers made in
    ``__init__`` and a ``call(inputs, training=False)`` (subclassed,
    `phalanx.models._subclassed`); ``Sequential``. It also wraps any
    ``flax.nnx.Module``.

    Args:
      module: any ``flax.nnx.Module`` (your own subclass included) whose
        ``__call__`` maps a batch of inputs to outputs. It may accept
        ``training=``, ``return_logits=`` and ``rngs=`` keywords; phalanx passes
        the ones it accepts. Or, functional: the model's inputs
        (``phalanx.Input`` tensors: one, a list or a dict).
      outputs: functional models only: the output tensors (one, a list or a dict).
      name: the model's name, for ``summary()``.
      inputs: the functional model's inputs, by keyword (``Model(inputs=..., outputs=...)``).

    Examples:
      >>> import flax.nnx as nnx, numpy as np
      >>> import phalanx
      >>> model = phalanx.Model(nnx.Linear(3, 1, rngs=nnx.Rngs(0)))
      >>> model.compile(optimizer="sgd", loss="mse")
      >>> history = model.fit(np.ones((8, 3)), np.ones((8, 1)), batch_size=4, verbose=0)
      >>> len(history.history["loss"])
      1
    """

    def __init__(
        self,
        module: nnx.Module | None = None,
        outputs: Any = None,
        *,
        name: str | None = None,
        inputs: Any = None,
    ):
        module = _functional.as_module(module, inputs, outputs, name)
        if module is not None and not isinstance(module, nnx.Module):
            raise TypeError(
                f"Model wraps a flax.nnx.Module, got {type(module).__name__}. Subclass "
                "nnx.Module, or use phalanx.Sequential([...]) with phalanx layers."
            )
        self._module = module
        self.name = name or type(self).__name__.lower()
        self._strategy: Strategy = get_strategy()
        self._training_calls = 0  # eager calls with training=True, each with its own key
        self._as_layer: Any = None  # this model as a layer of another (_nested), once asked
        Trainer.__init__(self)
        if module is not None:
            _layer_weights.claim(self, module)

    # -- building -----------------------------------------------------------

    @property
    def distribute_strategy(self) -> Strategy:
        """The strategy whose mesh holds this model's weights."""
        return self._strategy

    @property
    def module(self) -> nnx.Module:
        """The flax.nnx module, with the latest trained weights.

        After ``fit`` its variables hold the training state's device arrays (one
        replica of replicated weights, the split arrays of sharded ones), read
        without a copy to the host; the next training step replaces them.
        """
        self._sync_module()
        return self._module

    @property
    def built(self) -> bool:
        """Whether the weights exist."""
        return self._module is not None and self._is_module_built()

    def _is_module_built(self) -> bool:
        return getattr(self._module, "built", True)

    def build(self, input_shape: Sequence[int | None]) -> None:
        """Creates the weights for inputs of ``input_shape``.

        Keras's batch shape (``(None, 28, 28, 1)``: a leading None is the batch
        axis) or the shape of one example (``(28, 28, 1)``). Several inputs: a
        list or dict of shapes, as the model's inputs.
        """
        _subclassed.ensure_module(self)
        if isinstance(self._module, _subclassed.SubclassedModule):
            builder = self._module._phalanx_build  # built by calling it on zeros
        else:
            builder = getattr(self._module, "build", None)
        if callable(builder) and not self._is_module_built():
            builder(_per_example(input_shape))

    def _ensure_built(self, x_example: Any) -> None:
        if self.built:
            return
        if _subclassed.is_subclassed(self):  # Keras: built by calling it on the batch
            _subclassed.build_from_batch(self, jax.tree.map(jnp.asarray, x_example))
            return
        shape = tuple(np.shape(jax.tree.leaves(x_example)[0]))[1:]
        self.build(shape)

    def __call__(self, x: Any, training: bool = False) -> Any:
        """Runs the model on a batch, eagerly (outside the compiled steps).

        ``training=True`` runs dropout as in a training step, with a fresh key
        per call (from ``compile``'s seed and a call counter), as Keras. Called
        on symbolic tensors (``phalanx.Input``), a built functional or Sequential
        model is a layer of the model being defined (``phalanx.models._nested``).
        """
        if _nested.is_symbolic_call(x):
            return _nested.call_symbolic(self, x, training or None)
        self._refuse_host_layers()
        self._ensure_built(x)
        module = self.module
        style = _step.module_call_style(module)
        kwargs = {"training": training} if style["takes_training"] else {}
        if training and style["takes_rngs"]:
            self._training_calls += 1
            seed = self._config.seed if self._config is not None else 0
            kwargs["rngs"] = jax.random.fold_in(jax.random.key(seed), self._training_calls)
        return module(jax.tree.map(jnp.asarray, x), **kwargs)

    def _build_from_example(self, first: Any) -> None:
        """The trainer's hook: Keras builds a subclassed model by calling it on the input.

        On one example of the first batch, whatever its structure (a dict of inputs) and
        dtypes (token ids); other models are built from the batch's shape by the trainer.
        """
        self._refuse_host_layers()
        if not self.built and _subclassed.is_subclassed(self):
            _subclassed.build_from_batch(self, _subclassed.first_example(first))

    def _refuse_host_layers(self) -> None:
        """A layer that runs on the host only (``TextVectorization``, ``StringLookup``:
        strings are no JAX arrays) cannot run in the model, as in Keras 3 on JAX."""
        try:
            held = self.layers
        except (AttributeError, RuntimeError):
            return
        host = [
            layer.name or type(layer).__name__
            for layer in held
            if isinstance(layer, Layer) and layer.runs_on_host
        ]
        if host:
            raise LayerArgumentError(
                f"Model {self.name!r} holds {host}, which run in the input pipeline "
                "(dataset.map(layer)) or on numpy arrays, not inside a model (as Keras 3 on "
                "JAX): map the data through them, and give the model their output."
            )

    # -- weights ------------------------------------------------------------

    def _weights(self):
        if not self.built:
            raise RuntimeError(
                f"Model {self.name!r} has no weights yet: call build(input_shape), fit, or the "
                "model on a batch first."
            )
        return _layer_weights.weights_state(self.module)

    def get_weights(self) -> list[np.ndarray]:
        """Every weight (trainable and non-trainable) as numpy arrays, in a stable order."""
        return _layer_weights.state_to_list(self._weights())

    def set_weights(self, weights: list) -> None:
        """Sets every weight from a list in ``get_weights()`` order."""
        self._place_weights(self._module, _layer_weights.list_to_state(self._weights(), weights))

    def save_weights(self, filepath: str, overwrite: bool = True) -> None:
        """Writes the weights to ``filepath`` (an ``.npz`` archive; loading runs no code).

        A path ending in ``.weights.h5`` gets Keras 3's weights file, which
        ``keras.Model.load_weights`` reads (process 0 writes it).
        With several processes, call it on every process: process 0 writes,
        the others wait (with a deadline) until the file is there.
        """
        _refuse_overwrite(filepath, overwrite)
        if _keras_files.is_keras_weights(filepath):  # Keras 3's layout, which Keras loads
            return _keras_files.save_weights(self, filepath)
        _weights.save_on_chief(filepath, self._weights())

    def save(self, filepath: str, overwrite: bool = True) -> None:
        """Writes the model as a Keras 3 ``.keras`` file (Sequential and functional models).

        ``keras.models.load_model`` and ``phalanx.models.load_model`` read it back.

        Raises:
          KerasFileError: the path does not end in ``.keras``, or the model is
            subclassed (its class is code: use ``save_weights``).
        """
        if not str(filepath).endswith(".keras"):
            raise KerasFileError(
                f"model.save writes Keras 3 .keras files; got {str(filepath)!r}. Name it "
                "'model.keras', or use save_weights (.weights.h5 or .npz) or checkpoints."
            )
        _refuse_overwrite(filepath, overwrite)
        _keras_files.save_model(self, filepath, _keras_config.model_config(self))

    def get_compile_config(self) -> dict:
        """``compile``'s arguments, serialized as Keras 3's ``Model.get_compile_config``.

        The dict is what ``save`` writes as the ``.keras`` file's ``compile_config``
        and what `compile_from_config` (and ``load_model``) compiles a model with.

        Returns:
          ``{"optimizer", "loss", "loss_weights", "metrics", "weighted_metrics",
          "run_eagerly", "steps_per_execution", "jit_compile"}``, optimizers,
          losses and metrics as Keras names or ``{"module", "class_name", "config"}``
          entries; ``{}`` when the model is not compiled, as in Keras, and (unlike
          Keras) when an argument is code a file could not rebuild (an optax
          transformation, a function of your own, a learning-rate schedule).

        Examples:
          >>> import phalanx
          >>> model = phalanx.models.Sequential([phalanx.layers.Dense(1)])
          >>> model.get_compile_config()
          {}
          >>> model.compile(optimizer="adam", loss="mse")
          >>> model.get_compile_config()["loss"]
          'mse'
        """
        return saving.compile_config(self) or {}

    def compile_from_config(self, config: dict) -> None:
        """Compiles the model with a config from `get_compile_config`, as Keras 3 does.

        A subclass that overrides ``compile`` is not compiled: Keras then warns
        and returns, and so does phalanx (override ``compile_from_config`` too,
        or call ``compile`` yourself).

        Args:
          config: a dict as `get_compile_config` returns it, or a ``.keras``
            file's ``compile_config`` (Keras-written files' included).

        Raises:
          KerasFileError: a ``{"class_name", "config"}`` entry names an optimizer,
            loss or metric phalanx does not have, or an argument phalanx's does
            not take.
          UnknownNameError: a name (``"nonesuch"``) is none of phalanx's, as
            ``compile`` raises it.

        Examples:
          >>> import phalanx
          >>> model = phalanx.models.Sequential([phalanx.layers.Dense(1)])
          >>> model.compile_from_config({"optimizer": "sgd", "loss": "mse"})
          >>> model.get_compile_config()["optimizer"]["class_name"]
          'SGD'
        """
        if type(self).compile is not Model.compile:
            warnings.warn(
                "compile_from_config did not call compile(): the model's compile() is "
                "custom. Override get_compile_config() and compile_from_config(config) "
                "too, or call compile() yourself.",
                UserWarning,
                stacklevel=2,
            )
            return
        saving.compile_from_config(self, config)

    def export(
        self,
        filepath: str,
        format: str = "jax",
        verbose: bool = True,
        input_signature: Any = None,
    ) -> None:
        """Writes the inference pass as a ``jax.export`` artifact (what replaces SavedModel).

        The forward pass in inference mode with the trained weights as constants,
        for any batch size, serialized: a server runs it without this model's code,
        ``jax.export.deserialize(data).call(x)`` (``phalanx.models._export``).
        Keras 3's ``format="tf_saved_model"`` (its default), ``"onnx"`` and
        ``"openvino"`` need TensorFlow and are refused, saying so.

        Args:
          filepath: the file to write (a local path or a URL).
          format: ``"jax"``.
          verbose: Keras's argument; phalanx prints nothing.
          input_signature: ``jax.ShapeDtypeStruct`` (a pytree of them for several
            inputs); by default ``input_shape`` as float32, any batch size.

        Raises:
          ExportError: another format, no known input shape, or JAX's serializer's
            ``flatbuffers`` package missing.
        """
        del verbose

        _export.export(self, filepath, format, input_signature)

    def load_weights(self, filepath: str) -> None:
        """Reads weights saved by ``save_weights``, under any replica count.

        A path ending in ``.weights.h5`` is read as Keras 3's weights file
        (``phalanx.saving._keras_model``).

        Raises:
          WeightsFileError: ``filepath`` is not a path (None: what
            ``latest_checkpoint`` returns when it found no checkpoint), or the file
            does not match the model.
        """
        if not isinstance(filepath, str | os.PathLike):
            raise WeightsFileError(
                f"load_weights expects a file path (str or os.PathLike), got "
                f"{type(filepath).__name__} {filepath!r}"
                + (
                    ": latest_checkpoint(...) returns None when the directory holds no "
                    "checkpoint it recognizes; pass the weights file written by save_weights "
                    "or ModelCheckpoint, e.g. sorted(pathlib.Path(dir).glob('*.weights.h5'))[-1]."
                    if filepath is None
                    else "."
                )
            )
        if _keras_files.is_keras_weights(filepath):
            return _keras_files.load_weights(self, filepath)
        self._place_weights(self._module, _weights.load(filepath, self._weights()))

    @property
    def losses(self) -> list[jax.Array]:
        """Keras's ``model.losses``: the current regularization penalties (float32 scalars).

        The activity penalties of the last eager call (``model(x)``; each divided by
        its batch size), then one penalty per regularized weight, from the latest
        weights. ``fit`` adds their sum to the loss (see ``phalanx.regularizers``).
        In a custom loop, read ``losses`` of the module merged from the traced
        parameters: ``net = nnx.merge(graphdef, params); net(x); net.losses``.
        """
        if not self.built:
            return []
        return regularizers.losses(self.module)

    def count_params(self) -> int:
        """The number of weights."""
        return int(sum(np.size(w) for w in self.get_weights()))

    def summary(
        self,
        print_fn: Callable[[str], Any] = print,
        *,
        line_length: int | None = None,
        training_batch: tuple | None = None,
    ) -> None:
        """Prints the layers, their output shapes and parameter counts, then memory per device.

        After Keras's table and its "Total / Trainable / Non-trainable params" lines,
        the bytes per device of the weights and optimizer state (from the placed
        arrays, or computed from shapes before ``fit``) and, once a training step is
        compiled, XLA's memory analysis of it (`phalanx.models._memory`).

        Args:
          print_fn: called once with the whole text.
          line_length: the table's width; default fits the content.
          training_batch: ``(x, y)``: one global batch, as ``fit`` gets it. The
            training state is placed and the step compiled for it (nothing runs),
            to report XLA's memory analysis before ``fit``. Needs ``compile``.
        """
        module = self.module
        if training_batch is not None:
            _memory.prepare_step(self, training_batch)
        text: list[str] = []
        if hasattr(module, "summary"):
            kwargs = {"line_length": line_length} if line_length is not None else {}
            module.summary(print_fn=text.append, **kwargs)
            text[-1] = _with_optimizer_params(self, text[-1])
        else:
            text.append(
                f"Model: {self.name!r} ({type(module).__name__})\n"
                f"Total params: {self.count_params():,}"
            )
        if self.built:
            text.extend(_memory.memory_lines(self))
        print_fn("\n".join(text))


def _with_optimizer_params(model: Model, table: str) -> str:
    """Keras's summary after ``fit``: the optimizer's variables in "Total params" and a
    line of their own after "Non-trainable params"."""
    counted = _optimizer_count.optimizer_params(model)
    if counted is None:
        return table

    count, size = counted
    weights = model.get_weights()
    params = sum(int(w.size) for w in weights) + count
    nbytes = sum(int(w.nbytes) for w in weights) + size
    lines = table.split("\n")
    for i, line in enumerate(lines):
        if line.startswith(" Total params:"):
            lines[i] = f" Total params: {params:,} ({readable_size(nbytes)})"
        elif line.startswith(" Non-trainable params:"):
            lines.insert(i + 1, f" Optimizer params: {count:,} ({readable_size(size)})")
            break
    return "\n".join(lines)


def _refuse_overwrite(filepath, overwrite: bool) -> None:
    """``overwrite=False``: a file already at ``filepath`` (a local path or URL) is an error.

    Keras asks on the terminal instead; a training job has nobody to answer.
    """
    if not overwrite and _fs.exists(filepath):
        raise WeightsFileExistsError(
            f"{str(filepath)!r} exists and overwrite=False. Pass overwrite=True to replace "
            "it, or choose another path."
        )
