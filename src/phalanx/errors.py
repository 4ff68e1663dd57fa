"""Every error class phalanx raises, in one place.

Each message says what was expected, what was received and what to do. The
classes subclass the builtin that a caller would catch without knowing phalanx
(``ValueError``, ``TypeError``, ``RuntimeError``), so ``except ValueError``
keeps working.
"""

from __future__ import annotations


class PhalanxError(Exception):
    """Base class of every phalanx error."""


class DeviceNotFoundError(PhalanxError, ValueError):
    """A device specification matches no device of this process."""


class BatchNotDivisibleError(PhalanxError, ValueError):
    """A global batch does not divide evenly over the replicas."""


class ScopeError(PhalanxError, RuntimeError):
    """A strategy scope was entered where it cannot be (another strategy's scope, or inside run)."""


class ReplicaContextError(PhalanxError, RuntimeError):
    """A replica-only call was made in cross-replica context, or the reverse."""


class RunCompilationError(PhalanxError, TypeError):
    """The function given to ``strategy.run`` could not be traced and compiled."""


class DistributedValueError(PhalanxError, ValueError):
    """A value given to ``reduce``/``gather`` is not of the kind or shape expected."""
