"""Keras's ``clear_session``: the process-wide state that model building accumulates, reset."""

from __future__ import annotations

import gc

from ..mixed_precision import set_global_policy
from ..optimizers import reset_names


def clear_session(free_memory: bool = True) -> None:
    """Resets what Keras's ``clear_session`` resets, as far as phalanx keeps it.

    Optimizer names restart (the next ``Adam()`` is ``adam``, not ``adam_3``) and the
    global dtype policy returns to ``"float32"``, as in Keras 3. Layer and model
    names need no reset: phalanx names a model's unnamed layers when the model is
    made (``dense``, ``dense_1`` within each model), so a new model's names start
    over without it, where Keras counts them per process. The seed stream of
    ``set_random_seed`` continues (Keras's continues from Python's ``random``, which
    that call seeded): a script stays reproducible. No JAX cache is cleared:
    Keras's JAX backend clears none either.

    Args:
      free_memory: run Python's garbage collector (``gc.collect()``), as Keras.

    Examples:
      >>> from phalanx.optimizers import Adam
      >>> _ = Adam()
      >>> clear_session()
      >>> Adam().name
      'adam'
    """
    reset_names()
    set_global_policy("float32")
    if free_memory:
        gc.collect()
