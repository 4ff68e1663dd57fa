"""Keras 3's ``keras.saving`` functions: ``load_model``, ``save_model``, ``save_weights``,
``load_weights`` (``keras/src/saving/saving_api.py``).

The writers check Keras's arguments, then call the model's own ``save``,
``save_weights`` and ``load_weights``; ``load_weights`` also reads the weights of a
``.keras`` file, as Keras. ``load_model`` builds model classes, which live in
`phalanx.models` above this package: that package hands its reader to
`set_model_reader` when imported (as Keras's classes register themselves by name).
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Callable
from typing import Any

from ..errors import KerasFileError
from . import _archive
from . import _keras_model as _keras_files

# The reader phalanx.models gives (models/_load.py): what builds the file's model.
_READER: list[Callable[..., Any]] = []


def set_model_reader(reader: Callable[..., Any]) -> None:
    """Makes ``reader(path, custom_objects, compile, safe_mode)`` what `load_model` calls
    (`phalanx.models` gives its own when imported)."""
    _READER[:] = [reader]


def load_model(
    path: Any, custom_objects: Any = None, compile: bool = True, safe_mode: bool = True
) -> Any:
    """Reads a Keras 3 ``.keras`` file into a phalanx model, running no code from it.

    Args:
      path: the ``.keras`` file (a zip of ``config.json`` and ``model.weights.h5``), a
        local path or a URL (``gs://``, ``memory://``: `phalanx.io`).
      custom_objects: ``{name: class}`` for layers of one's own that are not
        registered (`phalanx.saving.register_keras_serializable`), keyed by the
        file's ``registered_name`` (an unregistered class's name), as Keras. The
        current `phalanx.saving.custom_object_scope` and the registry are looked
        in first.
      compile: compile the model with the file's ``compile_config`` (its optimizer,
        loss, metrics) and restore the optimizer's state (``iterations``, the
        learning rate, the moments) from ``model.weights.h5``, as Keras. A
        configuration phalanx cannot rebuild warns and loads the model
        uncompiled; optimizer variables that do not fit the optimizer warn, as
        Keras, and it starts afresh.
      safe_mode: Keras's argument; phalanx is always safe (no ``Lambda`` code).

    Returns:
      A ``phalanx.Sequential`` or functional ``phalanx.Model`` with the file's
      weights, compiled when ``compile`` and the file says how.

    Raises:
      FileNotFoundError: no such file.
      KerasFileError: not a ``.keras`` file, a layer phalanx does not have (a
        ``Lambda``, a class neither registered nor in ``custom_objects``), or a Keras
        argument phalanx does not implement.
    """
    if not _READER:  # phalanx's __init__ imports phalanx.models, which gives it
        raise RuntimeError("load_model needs phalanx.models: import phalanx first.")
    return _READER[0](path, custom_objects, compile, safe_mode)


def _refuse(function: str, kwargs: dict) -> None:
    if kwargs:
        raise KerasFileError(
            f"{function}: the argument(s) {sorted(kwargs)} are not supported (phalanx "
            "writes and reads Keras 3 files only, not Keras 2's .h5 options). Remove them."
        )


def save_model(
    model: Any, filepath: Any, overwrite: bool = True, zipped: Any = None, **kwargs: Any
) -> None:
    """Writes ``model`` as a Keras 3 ``.keras`` file: ``model.save(filepath)``, as Keras's.

    Args:
      model: a phalanx ``Sequential`` or functional ``Model``.
      filepath: a path (or URL) ending in ``.keras``.
      overwrite: False raises when a file is there (Keras asks on the terminal).
      zipped: None or True (Keras's zip); phalanx writes no unzipped directories.
      **kwargs: Keras's ``save_format="keras"`` and ``include_optimizer=True`` are
        accepted; any other value or argument raises.

    Raises:
      KerasFileError: ``zipped=False``, another ``save_format``, ``include_optimizer=False``,
        an argument Keras does not take, a path not ending in ``.keras``, or a
        subclassed model.
    """
    if zipped not in (None, True):
        raise KerasFileError(
            f"save_model(zipped={zipped!r}): phalanx writes zipped .keras files only; "
            "leave zipped as None."
        )
    if kwargs.pop("save_format", "keras") not in ("keras", None, False):
        raise KerasFileError(
            "save_model: save_format is deprecated in Keras 3 and phalanx writes .keras "
            "files only; remove it and name the file 'model.keras'."
        )
    if kwargs.pop("include_optimizer", True) is not True:
        raise KerasFileError(
            "save_model(include_optimizer=False): a .keras file always holds the optimizer's "
            "state (Keras 3 too); use save_weights('m.weights.h5') for the weights alone."
        )
    _refuse("save_model", kwargs)
    model.save(filepath, overwrite=overwrite)


def save_weights(
    model: Any, filepath: Any, overwrite: bool = True, max_shard_size: Any = None, **kwargs: Any
) -> None:
    """Writes ``model``'s weights as a Keras 3 ``.weights.h5`` file, as ``keras.saving``'s.

    Args:
      model: a phalanx model.
      filepath: a path (or URL) ending in ``.weights.h5``.
      overwrite: False raises when a file is there.
      max_shard_size: Keras's sharded ``.weights.json``; only None.
      **kwargs: none are taken.

    Raises:
      KerasFileError: another file name, ``max_shard_size``, or another argument.
    """
    if max_shard_size is not None:
        raise KerasFileError(
            f"save_weights(max_shard_size={max_shard_size!r}): phalanx writes one "
            ".weights.h5 file, not Keras's sharded .weights.json; leave it None."
        )
    _refuse("save_weights", kwargs)
    if not _keras_files.is_keras_weights(filepath):
        raise KerasFileError(
            f"The filename must end in `.weights.h5` (Keras 3); got {str(filepath)!r}. "
            "model.save_weights also writes .npz."
        )
    model.save_weights(filepath, overwrite=overwrite)


def load_weights(model: Any, filepath: Any, skip_mismatch: bool = False, **kwargs: Any) -> None:
    """Reads a ``.weights.h5`` file, or the weights of a ``.keras`` file, into ``model``.

    Args:
      model: a built phalanx model of the file's architecture.
      filepath: a ``.weights.h5`` or ``.keras`` file (or an ``.npz`` of ``save_weights``).
      skip_mismatch: only False: a layer that does not match raises.
      **kwargs: Keras 2's ``objects_to_skip`` and ``by_name`` are refused by name.

    Raises:
      KerasFileError: ``skip_mismatch=True``, another argument, or a file that does not
        match the model.
    """
    if skip_mismatch:
        raise KerasFileError(
            "load_weights(skip_mismatch=True): phalanx loads every layer or raises naming "
            "the one that does not match; leave skip_mismatch False."
        )
    _refuse("load_weights", kwargs)
    path = os.fspath(filepath)
    if not path.endswith(".keras"):
        model.load_weights(path)
        return
    with _keras_files.open_file(path, "model file") as handle:
        try:
            archive = zipfile.ZipFile(handle)
        except zipfile.BadZipFile as e:
            raise KerasFileError(f"{path!r} is not a Keras 3 .keras file (a zip): {e}.") from None
        with archive:
            cap = 8 * sum(int(w.nbytes) for w in model.get_weights()) + 2**24
            weights = _archive.read_member(archive, "model.weights.h5", path, cap)
    _keras_files.load_h5(model, weights, f"{path}:model.weights.h5")
