"""The repository carries everything its tests and documentation need: nothing beside it."""

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VECTORS = ROOT / "tests" / "data" / "tf_vectors"


def test_tensorflow_vectors_are_in_the_repository():
    manifest = json.loads((VECTORS / "manifest.json").read_text())
    for vector in manifest["vectors"]:
        assert (VECTORS / vector["file"]).is_file(), (
            f"manifest.json lists {vector['file']}, which is not in {VECTORS}: "
            "run tests/data/tf_vectors/regenerate.py with TensorFlow installed"
        )
    assert manifest["tensorflow_version"] in (VECTORS / "README.md").read_text()


def test_nothing_reads_a_folder_beside_the_checkout():
    pattern = re.compile(r"PHALANX_SHARED|\.\./shared|parents\[2\] / \"shared\"")
    files = [ROOT / "README.md", ROOT / ".ci" / "run", *ROOT.glob("docs/[!d]*.md")]
    files += [p for p in (ROOT / "tests").rglob("*.py") if p.name != Path(__file__).name]
    offenders = [str(p.relative_to(ROOT)) for p in files if pattern.search(p.read_text())]
    assert not offenders, f"these still depend on a folder beside the checkout: {offenders}"
