"""What a user gets from ``pip install``/the sdist: the license text, ``py.typed``, no test files.

The sdist is built as ``python -m build --sdist`` builds it (setuptools' PEP 517 hook), in a
clone-like copy of the tracked files, and its member list is read.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_license_file_is_the_apache_2_text_the_metadata_names():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"], text[:200]
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text
    assert "END OF TERMS AND CONDITIONS" in text


@pytest.mark.slow
def test_sdist_and_wheel_hold_the_package_license_and_changelog_but_no_tests(tmp_path):
    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    tree = tmp_path / "tree"
    for name in files:
        if (ROOT / name).is_file():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            (tree / name).write_bytes((ROOT / name).read_bytes())
    done = subprocess.run(  # the sdist, then the wheel built from it
        [sys.executable, "-m", "build", "--outdir", str(tmp_path / "dist")],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, (
        f"python -m build failed (pip install -e '.[dev]'):\n{done.stderr[-3000:]}"
    )
    (sdist_path,) = (tmp_path / "dist").glob("*.tar.gz")
    with tarfile.open(sdist_path) as sdist:
        names = {n.split("/", 1)[1] for n in sdist.getnames() if "/" in n}
    assert {"LICENSE", "README.md", "CHANGELOG.md", "pyproject.toml"} <= names
    assert "src/phalanx/py.typed" in names and "src/phalanx/cli/_run.py" in names
    strays = sorted(n for n in names if n.startswith("tests/") or "/tests/" in n)
    assert not strays, f"test files in the sdist (they need the whole repository): {strays}"
    (wheel_path,) = (tmp_path / "dist").glob("*.whl")
    with zipfile.ZipFile(wheel_path) as wheel:
        members = set(wheel.namelist())
    assert "phalanx/py.typed" in members
    assert "phalanx-0.1.0.dist-info/licenses/LICENSE" in members
    assert not [m for m in members if m.startswith("tests/")]
