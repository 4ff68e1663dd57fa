"""JAX's persistent compilation cache, opt-in through ``PHALANX_COMPILATION_CACHE`` (issue 24).

``PHALANX_COMPILATION_CACHE=/some/dir`` makes the first program phalanx
compiles in a process (``fit``/``evaluate``/``predict``, ``strategy.run``) turn
on JAX's persistent cache in that folder (``jax_compilation_cache_dir``), with
every program cached whatever its compile time or size, so a second run of the
same script loads its programs from disk instead of compiling them again.
Unset (the default), phalanx leaves ``jax.config`` as it is; nothing changes at
import time (STYLE.md). A cache that JAX was already given (its own
``JAX_COMPILATION_CACHE_DIR`` or ``jax.config.update``) is kept.
"""

from __future__ import annotations

import logging
import os

import jax
from jax.experimental.compilation_cache import compilation_cache

ENV = "PHALANX_COMPILATION_CACHE"

log = logging.getLogger("phalanx")

_done = False


def enable_from_env() -> str | None:
    """Turns on the persistent cache in ``$PHALANX_COMPILATION_CACHE`` (once per process).

    Returns the folder in use, or None when the variable is unset or empty.
    """
    global _done
    folder = os.environ.get(ENV, "")
    if _done or not folder:
        return jax.config.jax_compilation_cache_dir if _done else None
    _done = True
    if jax.config.jax_compilation_cache_dir:
        log.info(
            "phalanx: JAX's compilation cache is already in %s.",
            jax.config.jax_compilation_cache_dir,
        )
        return jax.config.jax_compilation_cache_dir
    folder = os.path.abspath(os.path.expanduser(folder))
    os.makedirs(folder, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", folder)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    # JAX decides on its first compile whether it uses a cache (building a model
    # compiled already): make it decide again.

    compilation_cache.reset_cache()
    log.info("phalanx: compiled programs are cached in %s (%s).", folder, ENV)
    return folder
