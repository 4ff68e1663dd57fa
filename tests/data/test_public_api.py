"""Every public name of phalanx.data is exported, documented, and the data layer never imports JAX."""

import ast
import inspect
import pathlib

import phalanx.data as data


def test_public_names_have_docstrings():
    for name in data.__all__:
        obj = getattr(data, name)
        if isinstance(obj, int) and not isinstance(obj, type):
            continue  # constants (AUTOTUNE ...) are documented in _options.py
        assert inspect.getdoc(obj), f"phalanx.data.{name} has no docstring"
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if not attr.startswith("_") and callable(member):
                    assert inspect.getdoc(member), f"phalanx.data.{name}.{attr} has no docstring"


# The one module of phalanx.data that places arrays on devices (DESIGN.md: data owns
# host-to-device prefetch): tf.data.experimental.copy_to_device / prefetch_to_device.
_PLACES_ON_DEVICES = {"_to_device.py"}


def test_data_layer_does_not_import_jax():
    """No module of phalanx.data but _to_device.py imports jax, and none imports a higher
    layer (checked on the source; pyproject.toml's import-linter contract checks the rest)."""
    package = pathlib.Path(data.__file__).parent
    for path in package.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [("." * node.level) + (node.module or "")]
            for name in names:
                if path.name not in _PLACES_ON_DEVICES:
                    assert name.split(".")[0] not in ("jax", "jaxlib", "flax", "optax"), (
                        f"{path.name} imports {name}"
                    )
                assert name.split(".")[0] not in ("flax", "optax"), f"{path.name} imports {name}"
                assert not name.startswith(("..distribute", "..train", "..callbacks")), (
                    f"{path.name} imports the higher layer {name}"
                )
