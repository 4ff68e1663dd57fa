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

from test_doc_blocks import BLOCKS, TIMEOUT_S, _env

ROOT = Path(__file__).resolve().parents[1]


def test_license_file_is_the_apache_2_text_the_metadata_names():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"], text[:200]
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text
    assert "END OF TERMS AND CONDITIONS" in text


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    """The sdist, then the wheel built from it, as ``python -m build`` makes them."""
    tmp_path = tmp_path_factory.mktemp("dist")
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
    (wheel_path,) = (tmp_path / "dist").glob("*.whl")
    return sdist_path, wheel_path


@pytest.mark.slow
def test_sdist_and_wheel_hold_the_package_license_and_changelog_but_no_tests(dist):
    sdist_path, wheel_path = dist
    with tarfile.open(sdist_path) as sdist:
        names = {n.split("/", 1)[1] for n in sdist.getnames() if "/" in n}
    assert {"LICENSE", "README.md", "CHANGELOG.md", "pyproject.toml"} <= names
    assert "src/phalanx/py.typed" in names and "src/phalanx/cli/_run.py" in names
    strays = sorted(n for n in names if n.startswith("tests/") or "/tests/" in n)
    assert not strays, f"test files in the sdist (they need the whole repository): {strays}"
    with zipfile.ZipFile(wheel_path) as wheel:
        members = set(wheel.namelist())
    assert "phalanx/py.typed" in members
    assert "phalanx-0.1.0.dist-info/licenses/LICENSE" in members
    assert not [m for m in members if m.startswith("tests/")]


@pytest.mark.slow
def test_the_readme_runs_from_an_empty_folder_with_the_wheel_installed(dist, tmp_path):
    """A user's first day: the wheel installed on its own (its dependencies from this
    environment), the README's ``fit`` block (the digits shipped as package data) and
    ``phalanx info`` run in an empty folder, importing the installed phalanx, not the checkout.
    """
    _, wheel_path = dist
    site = tmp_path / "site"  # first on the path: it hides this environment's phalanx
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index"]
    subprocess.run([*pip, "--target", str(site), str(wheel_path)], check=True, timeout=300)
    empty = tmp_path / "empty"
    empty.mkdir()
    block = next(b for b in BLOCKS if b.file == "README.md" and "digits" in b.code)
    code = "import phalanx\nprint(phalanx.__file__)\n" + block.code
    env = {**_env(block.devices), "PYTHONPATH": str(site)}
    run = subprocess.run(
        [sys.executable, "-c", code],
        cwd=empty,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert run.returncode == 0 and not run.stderr, (
        f"{block.id} with the wheel:\n{run.stderr[-3000:]}"
    )
    assert run.stdout.splitlines()[0] == str(site / "phalanx" / "__init__.py"), run.stdout[:300]
    info = subprocess.run(
        [str(site / "bin" / "phalanx"), "info", "--devices", "2"],
        cwd=empty,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert info.returncode == 0 and not info.stderr, info.stderr[-3000:]
    assert "num_replicas_in_sync  2" in info.stdout, info.stdout
