"""``python -m phalanx``: the ``phalanx`` command."""

import sys

from .cli import main

sys.exit(main())
