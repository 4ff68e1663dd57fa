"""Keras's layers as a module of its own: ``from phalanx.layers import Dense``.

The same classes as :mod:`phalanx.train.layers` (one source: this module
re-exports that one's ``__all__``), so ``phalanx.layers.Dense is
phalanx.train.layers.Dense``.
"""

from .train.layers import *  # noqa: F403 (the names are train.layers.__all__)
from .train.layers import __all__ as __all__
