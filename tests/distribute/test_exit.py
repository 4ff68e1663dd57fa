"""A script that leaves a distributed iterator open still exits cleanly (status 0).

A background producer still inside a device copy when the interpreter ended aborted
the process ("terminate called ... FATAL: exception not rethrown", status 134) in most
runs, and ``Iterator.__del__`` printed a TypeError at shutdown. The races show only
sometimes, so each script runs many times, several at once.
"""

import os
import re
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests_support import child_xla_flags

ROOT = Path(__file__).resolve().parents[2]
RUNS = 12  # before the fix, 2 runs in 3 aborted
AT_ONCE = 4

UNCLOSED = textwrap.dedent(
    """
    import numpy as np
    import phalanx
    from phalanx.data import Dataset

    strategy = phalanx.MirroredStrategy()
    assert strategy.num_replicas_in_sync == 8, strategy
    x = np.random.rand(4096, 64).astype(np.float32)
    dataset = Dataset.from_tensor_slices(x).repeat().batch(64).prefetch(2)
    dist_dataset = strategy.experimental_distribute_dataset(dataset)
    train_iterator = iter(dist_dataset)  # never closed, as in the guide
    for _ in range(3):
        batch = next(train_iterator)
    print("done", batch.shape)
    """
)


def _readme_block(heading: str) -> str:
    text = (ROOT / "docs" / "guide.md").read_text()
    section = text.split(heading, 1)[1]
    return re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)


def _run_many(script: str, tmp_path: Path) -> list[tuple[int, str]]:
    path = tmp_path / "script.py"
    path.write_text(script)
    # The suite's compile flags without its device count (PHALANX_CPU_DEVICES sets it).
    env = {**os.environ, "PHALANX_CPU_DEVICES": "8", "JAX_PLATFORMS": "cpu"}
    env["XLA_FLAGS"] = child_xla_flags()

    def once(_):
        p = subprocess.run(
            [sys.executable, str(path)], env=env, capture_output=True, text=True, timeout=120
        )
        return p.returncode, p.stdout + p.stderr

    with ThreadPoolExecutor(AT_ONCE) as pool:
        return list(pool.map(once, range(RUNS)))


def _assert_clean(results: list[tuple[int, str]]) -> None:
    bad = [
        (rc, out)
        for rc, out in results
        if rc != 0 or "FATAL" in out or "terminate called" in out or "Exception ignored" in out
    ]
    assert not bad, f"{len(bad)} of {len(results)} runs ended badly; first:\n{bad[0][1][-3000:]}"


@pytest.mark.slow
def test_unclosed_distributed_iterator_exits_cleanly(tmp_path):
    _assert_clean(_run_many(UNCLOSED, tmp_path))


@pytest.mark.slow
def test_readme_input_pipelines_snippet_exits_cleanly(tmp_path):
    _assert_clean(_run_many(_readme_block("## Input pipelines"), tmp_path))


def test_threads_stop_before_exit():
    """The exit hook stops a producer that nobody closed, and it ends its thread."""
    import numpy as np

    from phalanx import _threads
    from phalanx.data import Dataset

    it = iter(Dataset.from_tensor_slices(np.arange(10**6)).batch(4).prefetch(2))
    next(it)
    assert it._node.thread in _threads.live_threads()
    assert _threads.stop_all(timeout=5.0) == []
    assert it._node.thread not in _threads.live_threads()
