"""Keras's registry of one's own classes: ``register_keras_serializable`` and the scopes.

The one place ``load_model`` and ``model_from_json`` look up a class a file names that is
not one of phalanx's layers, as Keras 3 (``keras/src/saving/object_registration.py``):
the current `custom_object_scope` first, then the classes registered with
`register_keras_serializable` (``"package>name"``), then the ``custom_objects=`` given
to the call. Registered classes are code of the program itself, imported before loading;
nothing in a file is run (a ``Lambda`` is still refused).
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import Any

# Keras's GLOBAL_CUSTOM_OBJECTS and GLOBAL_CUSTOM_NAMES: process-wide, as Keras.
_OBJECTS: dict[str, Any] = {}
_NAMES: dict[Any, str] = {}


class _Scope(threading.local):
    """The objects of the innermost `custom_object_scope`, per thread (Keras's
    ``global_state`` is thread-local too)."""

    def __init__(self) -> None:
        self.objects: dict[str, Any] = {}


_SCOPE = _Scope()


class CustomObjectScope:
    """Makes classes and functions known by name to ``load_model`` in a ``with`` block.

    As Keras 3's ``keras.saving.custom_object_scope``: inside the block a file's layer
    whose registered name (or, unregistered, class name) is a key of ``custom_objects``
    is made with that class. The block replaces an enclosing scope's objects and
    restores them on exit, as Keras.

    Args:
      custom_objects: ``{name: class or function}``; None is an empty scope.

    Examples:
      >>> import phalanx
      >>> class Twice(phalanx.layers.Layer):
      ...     def call(self, x):
      ...         return 2 * x
      >>> with phalanx.saving.custom_object_scope({"Twice": Twice}):
      ...     phalanx.saving.get_registered_object("Twice") is Twice
      True
      >>> phalanx.saving.get_registered_object("Twice") is None
      True
    """

    def __init__(self, custom_objects: dict[str, Any] | None = None):
        if custom_objects is not None and not isinstance(custom_objects, dict):
            raise TypeError(
                "custom_object_scope expects a dict {name: class or function}, got "
                f"{type(custom_objects).__name__} {custom_objects!r}."
            )
        self.custom_objects = dict(custom_objects or {})
        self.backup: dict[str, Any] | None = None

    def __enter__(self) -> CustomObjectScope:
        self.backup = dict(_SCOPE.objects)
        _SCOPE.objects = dict(self.custom_objects)
        return self

    def __exit__(self, *exc: Any) -> None:
        _SCOPE.objects = dict(self.backup or {})


custom_object_scope = CustomObjectScope


def get_custom_objects() -> dict[str, Any]:
    """The live dictionary of registered objects, ``{"package>name": class}``, as Keras's.

    What `custom_object_scope` holds is not in it. Adding a class to it by hand
    (``get_custom_objects()["MyLayer"] = MyLayer``) makes it known by that key, as Keras.

    Returns:
      The registry itself (not a copy).
    """
    return _OBJECTS


def register_keras_serializable(package: str = "Custom", name: str | None = None) -> Callable:
    """A decorator registering a class (or function) as ``"package>name"``, as Keras 3.

    ``model.save`` writes a registered layer's ``registered_name`` as that key, and
    ``load_model`` makes the layer from it with ``cls.from_config(config)``, with no
    ``custom_objects`` argument: the class needs only to be imported before loading.

    Args:
      package: the key's first part (Keras's default ``"Custom"``).
      name: the key's second part; the class's ``__name__`` when None.

    Returns:
      The decorator, which returns the class unchanged.

    Raises:
      ValueError: a class without ``get_config``.

    Examples:
      >>> import phalanx
      >>> @phalanx.saving.register_keras_serializable(package="demo")
      ... class Twice(phalanx.layers.Layer):
      ...     def call(self, x):
      ...         return 2 * x
      >>> phalanx.saving.get_registered_name(Twice)
      'demo>Twice'
    """

    def decorator(arg: Any) -> Any:
        registered_name = f"{package}>{name if name is not None else arg.__name__}"
        if inspect.isclass(arg) and not hasattr(arg, "get_config"):
            raise ValueError(
                f"Cannot register {arg.__name__}: a registered class needs a get_config() "
                "method (a phalanx Layer has one)."
            )
        _OBJECTS[registered_name] = arg
        _NAMES[arg] = registered_name
        return arg

    return decorator


def get_registered_name(obj: Any) -> str:
    """The name ``obj`` is registered under (``"package>name"``), else its ``__name__``.

    Args:
      obj: a class or function.

    Returns:
      The registered name, or the object's Python name when it is not registered.
    """
    return _NAMES.get(obj, obj.__name__)


def get_registered_object(
    name: str,
    custom_objects: dict[str, Any] | None = None,
    module_objects: dict[str, Any] | None = None,
) -> Any:
    """The class or function known as ``name``, or None; in Keras 3's order.

    Args:
      name: a registered name (``"package>name"``) or a key of a scope or dict.
      custom_objects: looked in after the scope and the registry.
      module_objects: looked in last.

    Returns:
      The object, or None when no scope, registration or dict has ``name``.
    """
    for objects in (_SCOPE.objects, _OBJECTS, custom_objects or {}, module_objects or {}):
        if name in objects:
            return objects[name]
    return None


def current_scope() -> dict[str, Any]:
    """A copy of the innermost `custom_object_scope`'s objects (``{}`` outside any)."""
    return dict(_SCOPE.objects)
