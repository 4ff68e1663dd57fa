"""Every docstring ``Examples:`` section in phalanx runs (doctest), so the examples stay true."""

import doctest
import importlib
import pkgutil

import pytest

import phalanx

MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(phalanx.__path__, "phalanx.")
    if not info.name.endswith("__main__")
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(module, name):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
