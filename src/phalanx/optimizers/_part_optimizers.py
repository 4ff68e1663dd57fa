"""``compile(optimizer={part: optimizer, ...})``: one optimizer per part of a model (a GAN's
``"generator"`` and ``"discriminator"``), each updating its part of the trainable weights."""

from __future__ import annotations

import weakref
from typing import Any

import jax
import optax

from ..constraints import _constraints
from ..errors import CompileArgumentError
from . import _optimizers


class PartOptimizers:
    """``compile(optimizer={part: optimizer, ...})``: one optimizer per part of the model.

    A part is a top-level attribute of the model that holds trainable weights (a
    GAN's ``"generator"`` and ``"discriminator"``). ``optimizer_variables`` is then
    ``{part: that optimizer's state}``: an overridden step updates one part with
    ``optimizers[part].stateless_apply(optimizer_variables[part], grads[part],
    trainable_variables[part])``; the default step updates every part by its own.
    """

    def __init__(self, optimizers: dict):
        self.optimizers = {k: _Part(_optimizers.get(v), k, self) for k, v in optimizers.items()}
        self.name = "part_optimizers"
        self._model: Any = None

    def _bind_model(self, model: Any) -> None:
        """Binds each part's optimizer to ``model`` (its ``iterations``; the constraints its
        ``stateless_apply`` applies)."""
        self._model = weakref.ref(model)
        for part in self.optimizers.values():
            bind = getattr(part.optimizer, "_bind_model", None)
            if bind is not None:
                bind(model)

    def constraints(self) -> tuple:
        """The model's weight constraints (none before its state exists)."""
        model = None if self._model is None else self._model()
        config = getattr(model, "_step_config", None)
        return () if config is None else config.constraints

    def to_optax(self) -> Any:
        """The optax transformation: each part's optimizer on its part of the tree."""

        def txs():
            parts = {k: p.optimizer for k, p in self.optimizers.items()}
            return {k: getattr(o, "to_optax", lambda o=o: o)() for k, o in parts.items()}

        def init(params):
            self._check_parts(params)
            return {k: tx.init(params[k]) for k, tx in txs().items()}

        def update(grads, state, params=None):
            updates = jax.tree.map(lambda g: g, grads)
            new = {}
            for k, tx in txs().items():
                updates[k], new[k] = tx.update(
                    grads[k], state[k], None if params is None else params[k]
                )
            return updates, new

        return optax.GradientTransformation(init, update)

    def _check_parts(self, params) -> None:
        parts = sorted(str(k) for k in params)
        if sorted(self.optimizers) != parts:
            raise CompileArgumentError(
                f"compile(optimizer={{...}}) names the parts {sorted(self.optimizers)}, but the "
                f"model's trainable weights are in the parts {parts}: give one optimizer to "
                "each (a part is a top-level attribute of the model holding weights)."
            )

    def __repr__(self) -> str:
        return f"PartOptimizers({self.optimizers!r})"


class _Part:
    """``optimizer.optimizers[part]``: the part's optimizer, whose ``stateless_apply`` also
    projects the part's constrained weights, as Keras 3's optimizer does after each update."""

    def __init__(self, optimizer: Any, part: str, owner: PartOptimizers):
        self.optimizer = optimizer
        self._part = part
        self._owner = owner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.optimizer, name)

    def stateless_apply(self, optimizer_variables: Any, grads: Any, trainable_variables: Any):
        """The part's optimizer's ``stateless_apply``, then the part's weight constraints."""
        trainable, optimizer_variables = self.optimizer.stateless_apply(
            optimizer_variables, grads, trainable_variables
        )
        constraints = self._owner.constraints()
        return _constraints.apply(constraints, trainable, (self._part,)), optimizer_variables

    def __repr__(self) -> str:
        return repr(self.optimizer)
