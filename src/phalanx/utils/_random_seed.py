"""Keras's ``keras.utils.set_random_seed``: one seed for Python, numpy and phalanx."""

from __future__ import annotations

import random

import numpy as np

from .. import _random
from ..errors import RandomSeedError


def set_random_seed(seed: int) -> None:
    """Seeds Python's ``random``, numpy's global generator and phalanx (Keras's ``set_random_seed``).

    After it, a script run twice gives the same weights, dropout masks, shuffles
    and history. phalanx's own defaults are then drawn from one stream derived
    from ``seed``, in the order the script asks for them: the initial weights of
    a model built without a seed, ``compile``'s seed (dropout keys and ``fit``'s
    shuffling) when none is given, and the root seed of each ``Dataset``'s
    unseeded shuffles. Two models built one after the other differ, as in Keras.
    Seeds given explicitly are used as they are. Without a call, models build
    from seed 0 and unseeded dataset shuffles are fresh each run.

    Args:
      seed: an int in ``[0, 2**32)`` (numpy's range).

    Raises:
      RandomSeedError: ``seed`` is not an int in that range.

    An example, not run as a doctest (it would seed the rest of the test process):

        phalanx.utils.set_random_seed(0)
        model = build_model()  # the same initial weights in every run
    """
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise RandomSeedError(
            f"set_random_seed expects an int, got {type(seed).__name__} {seed!r} (Keras 3 "
            "refuses it too). Pass e.g. set_random_seed(42)."
        )
    if not 0 <= seed < 2**32:
        raise RandomSeedError(
            f"set_random_seed expects an int in [0, 2**32) (numpy's seed range), got {seed}. "
            "Pass seed % 2**32."
        )
    random.seed(int(seed))
    np.random.seed(int(seed))
    _random.set_global_seed(int(seed))
