"""Small real data sets for examples and the demo (``keras.datasets``'s role).

- ``digits.load_data()``: the 1797 real 8x8 handwritten digits (UCI),
  shipped inside phalanx (offline).
- ``mnist.load_data(path=None)``: MNIST from IDX or ``.npz`` files in a
  directory, downloaded there (with a checksum check) when absent.
"""

from . import digits as digits
from . import mnist as mnist

__all__ = ["digits", "mnist"]
