"""Numbers that answer Keras variables' ``numpy()``, for ``model.optimizer``'s readings.

TensorFlow's guides print ``optimizer.iterations.numpy()`` (seed 001's custom loop
reports ``Current step: {}``) and ``optimizer.learning_rate.numpy()``: Keras returns
variables there. phalanx reads both from the training state, as plain Python numbers;
these subclasses keep them plain (arithmetic, formatting, ``int()``/``float()`` as
before) and add ``numpy()``, which returns what TensorFlow's does: a numpy ``int64``
step count and a ``float32`` rate.
"""

from __future__ import annotations

import numpy as np


class KerasInt(int):
    """An ``int`` with ``numpy()`` (Keras's ``optimizer.iterations`` is an int64 variable)."""

    def numpy(self) -> np.int64:
        """The value as numpy's ``int64``, as ``tf.Variable.numpy()``."""
        return np.int64(self)


class KerasFloat(float):
    """A ``float`` with ``numpy()`` (Keras's ``optimizer.learning_rate`` is a float32 variable)."""

    def numpy(self) -> np.float32:
        """The value as numpy's ``float32``, as ``tf.Variable.numpy()``."""
        return np.float32(self)
