"""The trainer: what ``Model.compile``/``fit``/``evaluate``/``predict`` run.

The compile configuration (``_compile``), the pure step functions and the training
state (``_step``), the compiled programs (``_programs``), the loop that
drives them (``_loop``), the position a checkpoint resumes from (``_position``), the
placement of state on the devices, and what ``fit``
accepts as data (``data_adapters``). The model classes are in `phalanx.models`,
the layers in `phalanx.layers`, losses, metrics and optimizers in their own
packages, as in Keras 3 (``keras/src/trainers`` beside ``keras/src/models``).

``phalanx.train`` also re-exports, for scripts written against earlier releases, the
names it used to hold (``phalanx.train.Model``, ``phalanx.train.layers``, ...). They
are looked up when first read (PEP 562): the packages they live in sit above the
trainer in the layer order (``docs/architecture.md``), so importing them here would
be a cycle.
"""

import importlib

from ..layers import NON_TRAINABLE as NON_TRAINABLE
from ..layers import TRAINABLE as TRAINABLE
from ..layers import count_params as count_params
from ..layers import split_state as split_state

#: name -> (module, attribute); attribute None: the module itself.
_MOVED = {
    "Input": ("phalanx.layers", "Input"),
    "Logits": ("phalanx.losses", "Logits"),
    "Model": ("phalanx.models", "Model"),
    "Sequential": ("phalanx.models", "Sequential"),
    "SequentialNetwork": ("phalanx.models._network", "Sequential"),
    "layers": ("phalanx.layers", None),
    "losses": ("phalanx.losses", None),
    "metrics": ("phalanx.metrics", None),
    "optimizers": ("phalanx.optimizers", None),
    "regularizers": ("phalanx.regularizers", None),
}


def __getattr__(name: str) -> object:
    if name not in _MOVED:
        raise AttributeError(f"module 'phalanx.train' has no attribute {name!r}")
    module, attribute = _MOVED[name]
    found = importlib.import_module(module)
    return found if attribute is None else getattr(found, attribute)


__all__ = [
    "Input",
    "NON_TRAINABLE",
    "TRAINABLE",
    "Logits",
    "Model",
    "Sequential",
    "SequentialNetwork",
    "count_params",
    "layers",
    "losses",
    "metrics",
    "optimizers",
    "regularizers",
    "split_state",
]
