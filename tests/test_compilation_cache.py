"""PHALANX_COMPILATION_CACHE: JAX's persistent compilation cache, opt-in (issue 24)."""

from __future__ import annotations

import os
import subprocess
import sys

import jax

from phalanx import _compilation_cache

SCRIPT = """
import numpy as np, phalanx
from phalanx import layers
model = phalanx.Sequential([layers.Input(shape=(3,)), layers.Dense(2)])
model.compile(optimizer="sgd", loss="mse")
model.fit(np.ones((4, 3), np.float32), np.ones((4, 2), np.float32), batch_size=4, verbose=0)
"""


def test_unset_leaves_jax_config_alone(monkeypatch):
    monkeypatch.delenv(_compilation_cache.ENV, raising=False)
    before = jax.config.jax_compilation_cache_dir
    assert _compilation_cache.enable_from_env() is None
    assert jax.config.jax_compilation_cache_dir == before


def test_set_caches_fit_programs_in_the_folder(tmp_path):
    folder = tmp_path / "cache"
    env = dict(os.environ, **{_compilation_cache.ENV: str(folder)})
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
    env["PYTHONPATH"] = os.pathsep.join([src, env.get("PYTHONPATH", "")])
    subprocess.run([sys.executable, "-c", SCRIPT], env=env, check=True, timeout=300)
    entries = os.listdir(folder)
    assert any("train_body" in name for name in entries), entries
