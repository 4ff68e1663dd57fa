"""The process-wide random seed that ``phalanx.utils.set_random_seed`` sets.

Without it, phalanx is deterministic where Keras 3 is random: models build
their weights from seed 0 and ``compile`` seeds dropout and ``fit``'s shuffling
with 0, while unseeded ``Dataset.shuffle`` draws a fresh root seed per dataset
(as tf.data without a seed). After ``set_random_seed(s)``, as after Keras 3's,
each of those defaults is drawn from one stream derived from ``s``: a script
run twice draws the same seeds in the same order (identical weights, dropout
masks, shuffles and history), two models built one after the other differ, and
another ``s`` gives other draws. An explicit seed (``compile(seed=...)``,
``build(seed=...)``, ``shuffle(seed=...)``) is used as given. Processes of
one job that call ``set_random_seed`` with one seed draw the same seeds, as
long as they build the same things in the same order.

Each draw is ``SeedSequence([seed, stream, counter])``: the ``"model"`` stream
(weights, compile's seed) and the ``"data"`` stream (dataset root seeds) keep
separate counters, so building a dataset does not change a model's weights.
The numpy-only state lives here so that ``phalanx.data`` needs no JAX.
"""

from __future__ import annotations

import secrets
import threading

import numpy as np

_STREAMS = {"model": 1, "data": 2}


class _GlobalSeed:
    """The seed ``set_random_seed`` set (None: never called) and each stream's draw count."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seed: int | None = None
        self.counts = dict.fromkeys(_STREAMS, 0)

    def set(self, seed: int | None) -> None:
        """Restarts every stream from ``seed`` (None: no global seed)."""
        with self.lock:
            self.seed = None if seed is None else int(seed)
            self.counts = dict.fromkeys(_STREAMS, 0)

    def draw(self, stream: str, bits: int) -> int | None:
        """The next ``bits``-bit seed of ``stream``; None when no global seed is set."""
        with self.lock:
            if self.seed is None:
                return None
            count = self.counts[stream]
            self.counts[stream] = count + 1
        words = np.random.SeedSequence([self.seed, _STREAMS[stream], count]).generate_state(2)
        return (int(words[0]) << 32 | int(words[1])) >> (64 - bits)


_GLOBAL = _GlobalSeed()


def set_global_seed(seed: int) -> None:
    """Restarts the streams from ``seed`` (checked by ``set_random_seed``)."""
    _GLOBAL.set(seed)


def model_seed() -> int:
    """The seed of a model or layer built without one, and of ``compile``'s default seed:
    0, or the next draw after ``set_random_seed``."""
    drawn = _GLOBAL.draw("model", 31)
    return 0 if drawn is None else drawn


def fresh_model_seed() -> int:
    """The seed of a model whose weights must be new (``clone_model``, as Keras's clones):
    the next draw after ``set_random_seed``, else fresh randomness (not ``model_seed``'s 0,
    which would repeat the original's weights)."""
    drawn = _GLOBAL.draw("model", 31)
    return secrets.randbits(31) if drawn is None else drawn


def data_root_seed() -> int:
    """A 63-bit root seed for a dataset's unseeded shuffles: fresh randomness, or the next
    draw after ``set_random_seed``."""
    drawn = _GLOBAL.draw("data", 63)
    return secrets.randbits(63) if drawn is None else drawn


def clear_global_seed() -> None:
    """Forgets the seed ``set_random_seed`` set: the defaults of a fresh process (tests)."""
    _GLOBAL.set(None)
