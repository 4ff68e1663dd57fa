"""docs/architecture.md's name table is true: each listed name is defined in the file it names.

Regenerate the table after adding public names:
``PYTHONPATH=src python tests/test_architecture_doc.py --write``.
"""

import importlib
import inspect
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
BEGIN, END = "<!-- names: begin -->", "<!-- names: end -->"
# The public packages whose classes and functions the table lists, in the doc's order.
PACKAGES = [
    "phalanx.distribute",
    "phalanx.distribute.cluster_resolver",
    "phalanx.distribute.experimental",
    "phalanx.cluster",
    "phalanx.config",
    "phalanx.data",
    "phalanx.data.experimental",
    "phalanx.io",
    "phalanx.checkpoint",
    "phalanx.callbacks",
    "phalanx.layers",
    "phalanx.initializers",
    "phalanx.models",
    "phalanx.saving",
    "phalanx.losses",
    "phalanx.metrics",
    "phalanx.optimizers",
    "phalanx.optimizers.schedules",
    "phalanx.activations",
    "phalanx.regularizers",
    "phalanx.constraints",
    "phalanx.mixed_precision",
    "phalanx.utils",
    "phalanx.backend",
]


def _file_of(obj) -> str:
    obj = inspect.unwrap(obj)
    return str(Path(inspect.getsourcefile(obj)).resolve().relative_to(ROOT / "src" / "phalanx"))


def table() -> str:
    lines = ["| name | import it from | defined in `src/phalanx/` |", "|---|---|---|"]
    for package in PACKAGES:
        module = importlib.import_module(package)
        for name in sorted(getattr(module, "__all__", [])):
            obj = getattr(module, name)
            if inspect.isclass(obj) or inspect.isfunction(inspect.unwrap(obj)):
                lines.append(f"| `{name}` | `{package}` | `{_file_of(obj)}` |")
    return "\n".join(lines)


def _rows(text: str) -> list[tuple[str, str, str]]:
    body = text.split(BEGIN, 1)[1].split(END, 1)[0]
    return re.findall(r"^\| `([^`]+)` \| `([^`]+)` \| `([^`]+)` \|$", body, re.M)


def test_every_listed_name_is_defined_in_the_file_the_table_names():
    rows = _rows(DOC.read_text())
    assert len(rows) > 200, "the name table of docs/architecture.md is missing"
    wrong = []
    for name, package, file in rows:
        obj = getattr(importlib.import_module(package), name, None)
        if obj is None or _file_of(obj) != file:
            wrong.append((name, package, file, None if obj is None else _file_of(obj)))
    assert not wrong, (
        f"docs/architecture.md lists names where they are not: {wrong}. "
        "Regenerate: PYTHONPATH=src python tests/test_architecture_doc.py --write"
    )


if __name__ == "__main__" and "--write" in sys.argv:
    text = DOC.read_text()
    head, rest = text.split(BEGIN, 1)
    DOC.write_text(head + BEGIN + "\n" + table() + "\n" + END + rest.split(END, 1)[1])
