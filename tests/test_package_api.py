"""Every public name is exported on purpose and documented."""

import importlib
import inspect
import pkgutil

import pytest

import phalanx


def _public_modules():
    yield phalanx
    for info in pkgutil.walk_packages(phalanx.__path__, "phalanx."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            yield importlib.import_module(info.name)


MODULES = list(_public_modules())


@pytest.mark.parametrize("module", MODULES, ids=[m.__name__ for m in MODULES])
def test_public_names_have_docstrings(module):
    assert module.__doc__, f"{module.__name__} has no module docstring"
    names = getattr(module, "__all__", None)
    assert names is not None, f"{module.__name__} defines no __all__ (STYLE.md: list public names)"
    missing = []
    for name in names:
        obj = getattr(module, name)
        if inspect.ismodule(obj) or not (inspect.isclass(obj) or callable(obj)):
            continue
        if not inspect.getdoc(obj):
            missing.append(name)
    assert not missing, f"{module.__name__}: public names without docstrings: {missing}"


@pytest.mark.parametrize("module", MODULES, ids=[m.__name__ for m in MODULES])
def test_all_lists_existing_names(module):
    for name in getattr(module, "__all__", []):
        assert hasattr(module, name), f"{module.__name__}.__all__ lists missing {name!r}"


def test_top_level_names():
    for name in ["MirroredStrategy", "OneDeviceStrategy", "Strategy", "ReduceOp", "get_strategy"]:
        assert name in phalanx.__all__
