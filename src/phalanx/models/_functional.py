"""Functional models: ``Model(inputs, outputs)`` over a graph of layer calls, one ``nnx.Module``.

``Functional(inputs, outputs)`` walks the calls recorded on symbolic tensors
(`phalanx.layers._symbolic`) back from ``outputs``, orders them
topologically, names the layers as Keras does (``dense``, ``dense_1``, ...),
and builds every weight at once from one seed. The layers live in an
``nnx.List`` (so ``nnx.split``/``merge`` see their weights, and a layer used
twice, a shared layer, has one set of weights); the graph itself (which layer
reads which tensors) is static Python data, the same for every merged copy.

``inputs`` and ``outputs`` may be one tensor, a list or a dict, as in Keras;
the model then takes and returns the same structure. A list of inputs also
accepts a dict keyed by the ``Input`` names. The calling protocol is
`phalanx.models._network`'s (``training``, ``rngs``, ``return_logits``).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx

from .._random import model_seed
from ..activations import LOGIT_ACTIVATIONS
from ..errors import LayerShapeError, ModelStructureError, NotBuiltError
from ..layers import (
    InputLayer,
    KerasTensor,
    Layer,
    Node,
    any_symbolic,
    format_shape,
    is_symbolic,
    output_mask,
    record_output_mask,
    shapes_match,
    snake_case,
    takes_mask,
)
from ..losses._logits import Logits
from ._keras_config import keras_graph
from ._summary import format_summary


class _Ref:
    """A tensor's slot in the graph (what a node reads)."""

    __slots__ = ("id",)

    def __init__(self, tensor_id: int):
        self.id = tensor_id


class _Graph:
    """The static graph: input and output slots, and the calls in order."""

    def __init__(self, inputs, outputs, input_names, input_layers, steps):
        self.inputs = inputs  # a _Ref, or a list/dict of them
        self.outputs = outputs
        self.input_names = input_names  # flat, in the order of jax.tree.leaves(inputs)
        self.input_layers = input_layers  # slot id -> index of its InputLayer in layers
        self.steps = steps  # [(layer index, args, kwargs, training, output ids)]


def _structure(value: Any, what: str) -> Any:
    """Checks that ``value`` is a KerasTensor or a list/tuple/dict of them."""
    if is_symbolic(value):
        return value
    if isinstance(value, list | tuple) and value and all(is_symbolic(v) for v in value):
        return list(value)
    if isinstance(value, dict) and value and all(is_symbolic(v) for v in value.values()):
        return dict(value)
    raise ModelStructureError(
        f"Model({what}=...) takes the symbolic tensors of phalanx.Input(...) and of layers "
        f"called on them: one, a list or a dict; got {_describe(value)}."
    )


def _describe(value: Any) -> str:
    if isinstance(value, list | tuple | dict):
        inner = value.values() if isinstance(value, dict) else value
        return f"a {type(value).__name__} of {[type(v).__name__ for v in inner]}"
    return type(value).__name__


def _leaves(tree: Any) -> list[KerasTensor]:
    return jax.tree.leaves(tree, is_leaf=is_symbolic)


def _topological(outputs: list[KerasTensor]) -> list[Node]:
    """The nodes that lead to ``outputs``, each after the nodes it reads from."""
    order: list[Node] = []
    done: set[int] = set()
    active: set[int] = set()

    def visit(node: Node) -> None:
        if id(node) in done:
            return
        if id(node) in active:  # impossible with symbolic calls, but never loop
            raise ModelStructureError("The layer graph has a cycle.")
        active.add(id(node))
        for tensor in node.inputs:
            visit(tensor.node)
        active.discard(id(node))
        done.add(id(node))
        order.append(node)

    for tensor in outputs:
        visit(tensor.node)
    return order


class Functional(nnx.Module):
    """A model defined by a graph of layer calls, as Keras's functional API.

    Args:
      inputs: the ``phalanx.Input(...)`` tensors: one, a list or a dict.
      outputs: tensors computed from them by layer calls: one, a list or a dict.
      name: the model's name; default ``"functional"``.
      seed: the seed that initializes every weight; default 0, or drawn from
        ``phalanx.utils.set_random_seed``'s stream once it was called.

    Raises:
      ModelStructureError: ``inputs``/``outputs`` are not symbolic tensors, an
        input is not an ``Input``, or an output needs an input not given.

    Examples:
      >>> import phalanx
      >>> from phalanx import layers
      >>> x = phalanx.Input(shape=(4,), name="features")
      >>> y = layers.Dense(2)(layers.Dense(8, activation="relu")(x))
      >>> net = Functional(x, y)
      >>> [layer.name for layer in net.layers], net.count_params()
      (['features', 'dense', 'dense_1'], 58)
    """

    def __init__(
        self, inputs: Any, outputs: Any, *, name: str | None = None, seed: int | None = None
    ):
        inputs = _structure(inputs, "inputs")
        outputs = _structure(outputs, "outputs")
        self.name = name or "functional"
        in_leaves, out_leaves = _leaves(inputs), _leaves(outputs)
        for tensor in in_leaves:
            if not isinstance(tensor.node.layer, InputLayer):
                raise ModelStructureError(
                    f"Model inputs must come from phalanx.Input(...); {tensor!r} is the output "
                    f"of layer '{tensor.node.layer.name or type(tensor.node.layer).__name__}'."
                )
        nodes = _topological(out_leaves)
        given = {id(t.node) for t in in_leaves}
        for node in nodes:
            if isinstance(node.layer, InputLayer) and id(node) not in given:
                raise ModelStructureError(
                    f"Graph disconnected: the outputs need the input {node.outputs[0]!r}, "
                    f"which is not among the model's inputs {in_leaves}. Pass it in inputs=."
                )
        layers = self._ordered_layers(in_leaves, nodes)
        self._name_layers(layers, in_leaves)
        self.layers = nnx.List(layers)
        self._graph = self._make_graph(inputs, outputs, in_leaves, nodes, layers)
        self.input_shape = jax.tree.map(lambda t: t.per_example_shape, inputs, is_leaf=is_symbolic)
        self.output_shape = jax.tree.map(
            lambda t: t.per_example_shape, outputs, is_leaf=is_symbolic
        )
        self._connections = self._describe_connections(nodes)
        self._output_layer_names = tuple(t.node.layer.name for t in out_leaves)

        self._graph.keras = keras_graph(nodes, inputs, outputs)  # for save("m.keras")
        self._build_layers(nodes, nnx.Rngs(model_seed() if seed is None else seed))
        self.built = True
        self.trainable = True

    # -- construction ----------------------------------------------------------------
    @staticmethod
    def _ordered_layers(in_leaves, nodes) -> list[Layer]:
        layers, seen = [], set()
        for layer in [t.node.layer for t in in_leaves] + [n.layer for n in nodes]:
            if id(layer) not in seen:
                seen.add(id(layer))
                layers.append(layer)
        return layers

    @staticmethod
    def _name_layers(layers: list[Layer], in_leaves: list[KerasTensor]) -> None:
        input_names = {id(t.node.layer): t.name for t in in_leaves}
        taken: set[str] = set()
        for layer in layers:
            if layer.name is None and id(layer) in input_names and input_names[id(layer)]:
                layer.name = input_names[id(layer)]
            if layer.name is not None:
                if layer.name in taken:
                    raise ModelStructureError(
                        f"Two layers of the model are named {layer.name!r}; layer names must "
                        "be unique."
                    )
                taken.add(layer.name)
        for layer in layers:
            if layer.name is None:
                base = "input_layer" if isinstance(layer, InputLayer) else None
                base = base or snake_case(type(layer).__name__)
                name, i = base, 0
                while name in taken:
                    i += 1
                    name = f"{base}_{i}"
                layer.name = name
                taken.add(name)

    @staticmethod
    def _make_graph(inputs, outputs, in_leaves, nodes, layers) -> _Graph:
        ids: dict[int, int] = {}

        def slot(tensor: KerasTensor) -> _Ref:
            return _Ref(ids.setdefault(id(tensor), len(ids)))

        def template(tree):
            return jax.tree.map(
                lambda v: slot(v) if is_symbolic(v) else v, tree, is_leaf=is_symbolic
            )

        index = {id(layer): i for i, layer in enumerate(layers)}
        in_refs = template(inputs)
        steps = []
        for node in nodes:
            if isinstance(node.layer, InputLayer):
                continue
            steps.append(
                (
                    index[id(node.layer)],
                    template(node.args),
                    template(node.kwargs),
                    node.training,
                    [slot(t).id for t in node.outputs],
                    node.multi,
                )
            )
        names = [t.node.layer.name for t in in_leaves]
        input_layers = {slot(t).id: index[id(t.node.layer)] for t in in_leaves}
        return _Graph(in_refs, template(outputs), names, input_layers, steps)

    def _build_layers(self, nodes: list[Node], rngs: nnx.Rngs) -> None:
        for node in nodes:
            layer = node.layer
            if isinstance(layer, InputLayer):
                layer._build_example(layer.declared_input_shape)
            elif not layer.built:
                layer._build_example(layer._build_shapes(*node.args, **node.kwargs), rngs)

    def _describe_connections(self, nodes: list[Node]) -> dict[str, list]:
        """Each layer's calls' inbound tensors, Keras's ``[[name, node, tensor, {}], ...]``."""
        calls: dict[int, int] = {}
        node_index: dict[int, int] = {}
        for node in nodes:
            node_index[id(node)] = calls.get(id(node.layer), 0)
            calls[id(node.layer)] = node_index[id(node)] + 1
        out: dict[str, list] = {}
        for node in nodes:
            if isinstance(node.layer, InputLayer):
                continue
            sources = [
                [t.node.layer.name, node_index[id(t.node)], t.index, {}] for t in node.inputs
            ]
            out.setdefault(node.layer.name, []).append(sources)
        return out

    # -- calling ---------------------------------------------------------------------
    @property
    def needs_rng(self) -> bool:
        """True when a training call draws random numbers (a Dropout with rate > 0)."""
        return any(getattr(layer, "uses_rng", False) for layer in self.layers)

    def _bind_inputs(self, x: Any) -> dict[int, Any]:
        graph = self._graph
        refs = graph.inputs
        if isinstance(refs, _Ref):
            if isinstance(x, dict) and len(x) == 1:
                x = next(iter(x.values()))
            elif isinstance(x, list | tuple) and len(x) == 1:
                x = x[0]
            pairs = [(refs, x, graph.input_names[0])]
        elif isinstance(refs, list):
            if isinstance(x, dict):
                missing = [n for n in graph.input_names if n not in x]
                if missing:
                    raise ModelStructureError(
                        f"Model '{self.name}' takes inputs {graph.input_names}; the dict given "
                        f"has keys {sorted(x)} (missing {missing})."
                    )
                x = [x[n] for n in graph.input_names]
            if not isinstance(x, list | tuple) or len(x) != len(refs):
                raise ModelStructureError(
                    f"Model '{self.name}' takes a list of {len(refs)} inputs "
                    f"{graph.input_names}; got {_describe_value(x)}."
                )
            pairs = list(zip(refs, x, graph.input_names, strict=True))
        else:
            if not isinstance(x, dict) or set(x) != set(refs):
                raise ModelStructureError(
                    f"Model '{self.name}' takes a dict of inputs with keys {sorted(refs)}; "
                    f"got {_describe_value(x)}."
                )
            pairs = [(refs[k], x[k], k) for k in refs]
        values = {}
        for ref, value, name in pairs:
            layer = self.layers[graph.input_layers[ref.id]]
            values[ref.id] = self._check_input(value, layer, name)
        return values

    def _check_input(self, value: Any, layer: Any, name: str) -> Any:
        if not hasattr(value, "shape"):
            value = jnp.asarray(value)
        if isinstance(layer, InputLayer):
            expected = layer.declared_input_shape
            if not shapes_match(expected, tuple(value.shape[1:])):
                raise LayerShapeError(
                    f"Model '{self.name}' input '{name}' expects shape "
                    f"{format_shape(expected)}, received "
                    f"{format_shape(tuple(value.shape[1:]), value.shape[0] if value.ndim else None)}."
                    f" Give it examples of shape {tuple(expected)}, or build the model for the"
                    f" data (Input(shape={tuple(value.shape[1:])}))."
                )
            if layer.dtype is not None:
                value = value.astype(layer.dtype)
        return value

    def __call__(
        self,
        x: Any,
        *,
        training: bool = False,
        rngs: Any = None,
        return_logits: bool = False,
        mask: Any = None,
    ):
        """Runs the graph on a batch (the structure of the model's inputs).

        Args:
          x: one array, a list or a dict of arrays, as the model's ``inputs``.
          training: True in a training step.
          rngs: a ``jax.random`` key (each random layer uses ``fold_in(key,
            layer_index)``) or an ``nnx.Rngs``, for dropout in training.
          return_logits: return ``(outputs, logits)``; ``logits`` is a ``Logits``
            when the model has one output from a softmax/sigmoid layer, else None.
          mask: Keras's mask of a one-input model's input (a nested model's), or None.

        Returns:
          The outputs, in the structure of the model's ``outputs``.

        Raises:
          ModelStructureError: ``x`` does not have the structure of the inputs.
          LayerShapeError: an input has the wrong shape.
        """
        graph = self._graph
        values = self._bind_inputs(x)
        logits_slot = graph.outputs.id if isinstance(graph.outputs, _Ref) else None
        logits = None
        masks: dict[int, Any] = {}  # Keras's masks, by slot (a list input: one per tensor)
        if mask is not None and isinstance(graph.inputs, _Ref):  # a nested model's input mask
            masks[graph.inputs.id] = mask
        for layer_index, args, kwargs, node_training, out_ids, multi in graph.steps:
            layer = self.layers[layer_index]
            one_input = len(args) == 1 and isinstance(args[0], _Ref)
            mask = masks.get(args[0].id) if one_input else _list_mask(args, masks)
            args = _fill(args, values)
            kwargs = _fill(kwargs, values)
            if mask is not None and "mask" not in kwargs and takes_mask(layer):
                kwargs = {**kwargs, "mask": mask}
            mode = training if node_training is None else node_training
            key = None
            if getattr(layer, "uses_rng", False) and rngs is not None:
                key = rngs if isinstance(rngs, nnx.Rngs) else jax.random.fold_in(rngs, layer_index)
            elif getattr(layer, "uses_rng", False) and node_training and mode:
                key = _inference_key(args, layer_index)  # Dropout(...)(x, training=True)
            if (
                return_logits
                and out_ids == [logits_slot]
                and layer.activation_name in LOGIT_ACTIVATIONS
                and len(args) == 1
                and not kwargs
            ):
                layer.check_input(args[0])
                pre = layer.pre_activation(args[0], training=mode, rngs=key)
                logits = Logits(pre, layer.activation_name)
                out = layer.activation_fn(pre)
            else:
                out = layer(*args, training=mode, rngs=key, **kwargs)
            if multi:
                for slot, value in zip(out_ids, out, strict=True):
                    values[slot] = value
            else:
                values[out_ids[0]] = out
            if one_input or mask is not None:
                out_mask = output_mask(layer, args[0], mask)
                # several outputs and one mask (Attention's with its scores): the first's, as Keras
                several = multi and isinstance(out_mask, list | tuple)
                out_masks = out_mask if several else [out_mask]
                for slot, m in zip(out_ids, out_masks or [None] * len(out_ids), strict=False):
                    if m is not None:
                        masks[slot] = m
        result = _fill(graph.outputs, values)
        record_output_mask(self, _output_masks(graph.outputs, masks))
        return (result, logits) if return_logits else result

    # -- inspection ------------------------------------------------------------------
    @property
    def output_names(self) -> list[str]:
        """Keras's output names: a dict output's keys, else the layers making the outputs."""
        outputs = self._graph.outputs
        if isinstance(outputs, dict):
            return list(outputs)
        return list(self._output_layer_names)

    def count_params(self) -> int:
        """Returns the number of weights (trainable plus non-trainable), as Keras."""
        return sum(layer.count_params() for layer in self.layers)

    def connections(self, layer_name: str) -> str:
        """The tensors feeding ``layer_name``, Keras's "Connected to": ``dense[0][0], ...``."""
        names = [f"{n}[{i}][{j}]" for call in self.inbound_nodes(layer_name) for n, i, j, _ in call]
        return ", ".join(dict.fromkeys(names))

    def inbound_nodes(self, layer_name: str) -> list:
        """Keras's ``inbound_nodes`` of a layer: per call, ``[[layer, node, tensor, {}], ...]``."""
        return [[list(src) for src in call] for call in self._connections.get(layer_name, [])]

    def summary(self, *, line_length: int | None = None, print_fn: Any = None) -> None:
        """Prints Keras's table with a "Connected to" column: each layer's inbound layers."""
        if not self.built:
            raise NotBuiltError(f"Model '{self.name}' is not built.")
        (print_fn or print)(format_summary(self, line_length=line_length))


def _inference_key(args: Any, layer_index: int) -> jax.Array:
    """The key of a random layer called with ``training=True`` in a model run without one
    (``predict``, ``evaluate``: Keras draws from the layer's seed generator): folded from
    the layer's position and the bits of its inputs, so each batch gets its own draw."""
    bits = [
        jnp.sum(jax.lax.bitcast_convert_type(jnp.asarray(a, jnp.float32), jnp.uint32))
        for a in jax.tree.leaves(args)
    ]
    key = jax.random.fold_in(jax.random.key(layer_index), layer_index)
    for b in bits:
        key = jax.random.fold_in(key, b)
    return key


def _list_mask(args: tuple, masks: dict[int, Any]) -> list | None:
    """Keras's masks of a list input (``Attention()([query, value])``): one per tensor, or
    None when none of them carries a mask."""
    if len(args) != 1 or not isinstance(args[0], list | tuple) or not masks:
        return None
    if not all(isinstance(a, _Ref) for a in args[0]):
        return None
    found = [masks.get(a.id) for a in args[0]]
    return found if any(m is not None for m in found) else None


def _fill(template: Any, values: dict[int, Any]) -> Any:
    return jax.tree.map(
        lambda v: values[v.id] if isinstance(v, _Ref) else v,
        template,
        is_leaf=lambda v: isinstance(v, _Ref),
    )


def _output_masks(outputs: Any, masks: dict[int, Any]) -> Any:
    """The output's mask (None: none); a tuple of them for a structure of outputs."""
    if isinstance(outputs, _Ref):
        return masks.get(outputs.id)
    refs = jax.tree.leaves(outputs, is_leaf=lambda v: isinstance(v, _Ref))
    return tuple(masks.get(r.id) for r in refs if isinstance(r, _Ref))


def _describe_value(x: Any) -> str:
    if isinstance(x, dict):
        return f"a dict with keys {sorted(x)}"
    if isinstance(x, list | tuple):
        return f"a {type(x).__name__} of {len(x)} items"
    return f"{type(x).__name__} of shape {getattr(x, 'shape', '?')}"


def as_module(module: Any, inputs: Any, outputs: Any, name: str | None) -> Any:
    """What ``Model(...)`` wraps: a `Functional` for symbolic inputs, else ``module``.

    Raises:
      ModelStructureError: inputs without outputs (or the reverse), or inputs given twice.
    """
    if inputs is not None:
        if module is not None:
            raise ModelStructureError(
                "Model got its inputs twice (positionally and as inputs=); pass them once."
            )
        module = inputs
    if outputs is None and not any_symbolic(module):
        return module
    if outputs is None or module is None:
        raise ModelStructureError(
            "A functional Model needs both inputs and outputs: "
            "phalanx.Model(inputs=inputs, outputs=outputs)."
        )
    return Functional(module, outputs, name=name)
