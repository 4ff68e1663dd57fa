"""mkdocs hooks (``mkdocs.yml``): the README is the site's home page.

The README sits at the repository root, outside ``docs/``, and links to ``docs/guide.md``;
the guides link back to ``../README.md``. Both spellings are right on GitHub; in the site
the README is ``index.md`` beside the guides, so its links lose ``docs/`` and the guides'
``../README.md`` becomes ``index.md``. Nothing else is rewritten: any other link mkdocs
cannot resolve still fails ``mkdocs build --strict``.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.structure.files import File

_README = Path(__file__).resolve().parents[1] / "README.md"
_README_TO_DOCS = re.compile(r"\]\(docs/")
_DOCS_TO_README = re.compile(r"\]\(\.\./README\.md")


def on_files(files, config):
    """Adds the README as ``index.md``."""
    files.append(File.generated(config, "index.md", abs_src_path=str(_README)))
    return files


def on_page_markdown(markdown, page, config, files):
    """Rewrites the links between the README and the guides for the site's layout."""
    if page.file.src_uri == "index.md":
        return _README_TO_DOCS.sub("](", markdown)
    return _DOCS_TO_README.sub("](index.md", markdown)
