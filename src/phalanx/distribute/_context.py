"""The current strategy and replica context: a thread-local stack.

Outside any ``scope()`` the *default strategy* is current: one replica on the
default device, as TensorFlow's default strategy (no error, nothing
distributed). ``strategy.scope()`` pushes a cross-replica context; the body of
``strategy.run`` runs in a replica context. The rules are TensorFlow's:

- entering the scope of the strategy already current nests, and so does any
  scope inside the default strategy's;
- entering another strategy's scope inside a (non-default) scope raises;
- entering a scope inside ``run`` (replica context) raises.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..errors import ScopeError

if TYPE_CHECKING:
    from ._replica_context import ReplicaContext
    from ._strategy import Strategy


@dataclasses.dataclass(frozen=True)
class _Frame:
    strategy: Strategy
    replica_context: ReplicaContext | None  # None: cross-replica context.


class _Stack(threading.local):
    def __init__(self):
        self.frames: list[_Frame] = []


_stack = _Stack()
_default: dict[str, Any] = {}


def _default_strategy() -> Strategy:
    if "strategy" not in _default:
        from ._one_device import DefaultStrategy

        _default["strategy"] = DefaultStrategy()
    return _default["strategy"]


def _top() -> _Frame | None:
    return _stack.frames[-1] if _stack.frames else None


@contextlib.contextmanager
def enter_scope(strategy: Strategy) -> Iterator[Strategy]:
    """Pushes ``strategy``'s cross-replica context (the body of ``Strategy.scope``)."""
    top = _top()
    if top is not None:
        if top.replica_context is not None:
            raise ScopeError(
                f"Cannot enter {type(strategy).__name__}.scope() inside strategy.run: the "
                "function given to run executes once per replica (replica context). "
                "Enter the scope outside run, around the code that builds the model."
            )
        if top.strategy is not strategy and top.strategy is not _default_strategy():
            raise ScopeError(
                f"Mixing different strategies: entered {strategy!r}.scope() inside the scope "
                f"of {top.strategy!r}. A model and its training loop use one strategy; "
                "leave the outer scope first (TensorFlow raises the same)."
            )
    _stack.frames.append(_Frame(strategy, None))
    try:
        yield strategy
    finally:
        _stack.frames.pop()


@contextlib.contextmanager
def enter_replica_context(ctx: ReplicaContext) -> Iterator[ReplicaContext]:
    """Pushes a replica context (while ``strategy.run`` traces ``fn``)."""
    _stack.frames.append(_Frame(ctx.strategy, ctx))
    try:
        yield ctx
    finally:
        _stack.frames.pop()


def get_strategy() -> Strategy:
    """Returns the current strategy: the innermost ``scope()``, else the default strategy.

    Examples:
      >>> get_strategy().num_replicas_in_sync
      1
    """
    top = _top()
    return top.strategy if top is not None else _default_strategy()


def has_strategy() -> bool:
    """True inside a (non-default) strategy's ``scope()`` or ``run``."""
    top = _top()
    return top is not None and top.strategy is not _default_strategy()


def in_cross_replica_context() -> bool:
    """True inside a strategy's ``scope()`` but not inside its ``run``.

    Outside any scope this is False, as TensorFlow's (the default replica context
    is current there).
    """
    top = _top()
    return top is not None and top.replica_context is None


def get_replica_context() -> ReplicaContext | None:
    """Returns the current ``ReplicaContext``, or None in cross-replica context.

    Inside ``strategy.run`` it is that replica's context; outside any scope it is
    the default strategy's (one replica, id 0); inside a ``scope()`` but outside
    ``run`` it is None, as in TensorFlow.
    """
    top = _top()
    if top is None:
        return _default_strategy()._default_replica_context()
    return top.replica_context
