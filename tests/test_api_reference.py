"""The API reference (``mkdocs.yml``): it builds in strict mode and covers every public package.

``mkdocs build --strict`` fails on a docstring griffe cannot parse (an ``Args:`` entry that
names no parameter, a parameter without a type), a cross-reference to nothing and a broken
link between the docs pages, so a broken reference fails the suite (and ``.ci/run``).
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import phalanx

ROOT = Path(__file__).resolve().parents[1]

# Public by name but not API: the command line (``phalanx --help`` documents it) and the
# trainer's package, which re-exports the names of earlier releases for old scripts.
NOT_REFERENCE = ("phalanx.cli", "phalanx.train")
ROLE = re.compile(r":(func|mod|class|meth|attr|data|exc|obj):`")


def _public_modules() -> list[str]:
    """Every module a user imports: no ``_`` in its path and a non-empty ``__all__``."""
    names = ["phalanx"]
    for info in pkgutil.walk_packages(phalanx.__path__, "phalanx."):
        parts = info.name.split(".")
        if any(p.startswith("_") for p in parts) or info.name.startswith(NOT_REFERENCE):
            continue
        if getattr(importlib.import_module(info.name), "__all__", None):
            names.append(info.name)
    return names


def _api_pages() -> dict[str, str]:
    """The API section of mkdocs.yml's nav: title -> page (under docs/)."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    (api,) = (entry["API reference"] for entry in config["nav"] if "API reference" in entry)
    return {title: page for entry in api for title, page in entry.items()}


def test_every_public_module_is_rendered_on_a_page_of_the_nav():
    pages = _api_pages()
    rendered = {
        line.removeprefix(":::").strip()
        for page in pages.values()
        for line in (ROOT / "docs" / page).read_text().splitlines()
        if line.startswith(":::")
    }
    missing = sorted(set(_public_modules()) - rendered)
    assert not missing, f"public modules without a '::: name' in docs/api/: {missing}"
    packages = {m for m in _public_modules() if m.count(".") <= 1}
    assert packages == set(pages), "one API page per public package, titled by its name"


def test_the_top_level_page_names_every_top_level_name():
    text = (ROOT / "docs" / "api" / "phalanx.md").read_text()
    modules = {n for n in phalanx.__all__ if type(getattr(phalanx, n)).__name__ == "module"}
    missing = [n for n in sorted(set(phalanx.__all__) - modules) if f"`phalanx.{n}`" not in text]
    assert not missing, f"docs/api/phalanx.md does not list {missing}"


def test_docstrings_use_the_section_names_and_markup_the_reference_renders():
    """griffe's Google parser knows ``Examples:`` (``Example:`` renders as a note, its doctest
    as text); the reference is Markdown, so reST roles (``:class:`X```) show as typed."""
    found = []
    for path in sorted((ROOT / "src" / "phalanx").rglob("*.py")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if re.fullmatch(r"\s+Example:\s*", line) or ROLE.search(line):
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not found, "write 'Examples:' and plain `name` (Markdown):\n" + "\n".join(found)


@pytest.mark.slow
def test_the_reference_builds_in_strict_mode_with_the_docstrings_and_the_guides(tmp_path):
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stderr[-6000:]}"
    page = {p: (site / p / "index.html").read_text() for p in ("api/distribute", "api/data")}
    page["api/models"] = (site / "api/models/index.html").read_text()
    page["home"] = (site / "index.html").read_text()
    page["guide"] = (site / "guide/index.html").read_text()
    assert 'id="phalanx.distribute.MirroredStrategy"' in page["api/distribute"]
    assert "num_replicas_in_sync" in page["api/distribute"]
    assert 'id="phalanx.data.Dataset"' in page["api/data"]
    assert 'id="phalanx.data.Dataset.batch"' in page["api/data"]
    assert 'id="phalanx.models.Model.fit"' in page["api/models"]
    assert "steps_per_execution" in page["api/models"]
    # a docstring's Examples section is code, not text
    assert '<span class="gp">&gt;&gt;&gt; </span>' in page["api/data"]
    # the README is the home page; its links to the guides and theirs back resolve in the site
    assert "Coming from TensorFlow" in page["home"] and 'href="guide/"' in page["home"]
    assert 'href="../#coming-from-tensorflow-five-minutes"' in page["guide"]
    for html in (site / "api").rglob("*.html"):
        assert "the seeds" not in html.read_text().lower(), f"{html}: 'the seeds' is undefined"
