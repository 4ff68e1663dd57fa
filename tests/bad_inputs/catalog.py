"""A bad-input case: what is given, the phalanx error it must raise, and a pattern its message
must contain (the argument, file or value named)."""

from dataclasses import dataclass
from typing import Any

import pytest


@dataclass(frozen=True)
class Case:
    id: str
    call: Any  # a function of no arguments (or of tmp_path when it takes one)
    error: type
    match: str

    def param(self):
        return pytest.param(self, id=self.id)


def run(case: Case, tmp_path=None):
    import inspect

    from phalanx.errors import PhalanxError

    with pytest.raises(case.error, match=case.match) as info:
        if inspect.signature(case.call).parameters:
            case.call(tmp_path)
        else:
            case.call()
    assert isinstance(info.value, PhalanxError), (
        f"{case.id}: raised {type(info.value).__name__}, not a phalanx error: {info.value}"
    )
