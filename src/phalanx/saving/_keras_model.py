"""Keras 3 files: ``.weights.h5`` both ways, and ``.keras`` models read into phalanx.

**Weights** (``model.save_weights("m.weights.h5")``/``load_weights``): Keras 3
stores each layer's variables at ``layers/<key>/vars/<i>``, with ``<key>``
the snake-case class name made unique in the order of ``model.layers``
(``dense``, ``dense_1``, ...; a functional model's ``InputLayer`` s count, a
``Sequential``'s do not), not the layer's name; ``MultiHeadAttention`` nests
``query_dense``, ``key_dense``, ``value_dense``, ``output_dense``, a recurrent
layer its cell's (``lstm/cell/vars``) and ``Bidirectional`` its two layers'
(``forward_layer/cell/vars``, ``backward_layer/cell/vars``). phalanx
writes and reads that layout, each layer's arrays in Keras's order (what
``layer.get_weights()`` returns), so Keras loads a phalanx file and the
reverse, given the same architecture.

**Writing models** (``model.save("m.keras")``, Sequential and functional):
``config.json`` in Keras 3's format (each layer's Keras class and the
arguments phalanx's layer was given, functional ``inbound_nodes`` with
``__keras_tensor__`` histories), ``model.weights.h5`` as above, and
``metadata.json``; ``keras.models.load_model`` reads it. A lookup layer's adapted
vocabulary (``StringLookup``, ``IntegerLookup``, ``TextVectorization``: Keras's
``save_assets``) goes to ``assets/layers/<key>/vocabulary.txt``, and its IDF weights to
``layers/<key>/vars/idf_weights``, where Keras's saver writes them (`load_host_state`
reads them back). A model compiled with one of
phalanx's optimizers also gets its optimizer's state (``iterations``, ``learning_rate``
and the slots) under ``optimizer/vars`` in Keras 3's layout (``_keras_optimizer``), and
``load_model`` reads it back, so a loaded model continues training as Keras's does.

**Models** (``phalanx.models.load_model("m.keras")``): the zip's
``config.json`` is read as data and each layer is made from phalanx's class
of the same name with the arguments phalanx takes; ``Sequential`` and
functional models (several inputs and outputs, shared layers) are rebuilt
from their ``inbound_nodes``; then ``model.weights.h5`` is loaded. No code
from a file is run, as Keras's ``safe_mode``: a ``Lambda`` layer, a class not
registered (`phalanx.saving.register_keras_serializable`) nor given in ``custom_objects``,
or a function given by its code is refused with a clear error, and so
is a Keras argument phalanx does not implement (rather than a model that
computes something else).

Needs ``h5py`` (``pip install phalanx[keras]``; Keras itself is not needed).
"""

from __future__ import annotations

import contextlib
import datetime
import io
import json
import os
import tempfile
import zipfile
from typing import Any

import jax
import numpy as np

from ..errors import KerasFileError
from ..io import _fs
from ..layers import Layer, snake_case
from . import _archive, _keras_optimizer
from . import _compile_config as _keras_compile

_MHA_PARTS = ("query_dense", "key_dense", "value_dense", "output_dense")


def _h5py(needed_by: str = "Reading and writing Keras files"):
    try:
        import h5py
    except ImportError:
        raise KerasFileError(
            f"{needed_by} needs h5py: pip install h5py (or pip install 'phalanx[keras]')."
        ) from None
    return h5py


def require_h5py(needed_by: str) -> None:
    """Raises KerasFileError now, naming ``needed_by``, when h5py is not installed (so a
    callback that would write a Keras file fails at its construction, not after an epoch)."""
    _h5py(needed_by)


def is_keras_weights(path: Any) -> bool:
    """True for a path ending in ``.weights.h5`` (Keras 3's weights file)."""
    return os.fspath(path).endswith(".weights.h5")


def _keys(model: Any) -> list[tuple[str, Layer]]:
    """``(h5 key, layer)`` for the model's layers, Keras's unique snake-case class names."""
    used: dict[str, int] = {}
    out = []
    for layer in model.layers:
        base = snake_case(type(layer).__name__)
        if base in used:
            used[base] += 1
            key = f"{base}_{used[base]}"
        else:
            used[base] = 0
            key = base
        out.append((key, layer))
    return out


def _groups(layer: Layer) -> list[tuple[str, int]]:
    """``(subpath, number of arrays)`` under the layer's group, in ``get_weights`` order."""
    count = len(layer.get_weights()) if layer.built else 0
    own = getattr(layer, "_keras_weight_groups", None)
    if own is not None and count:
        return own()  # recurrent layers: the cell's group, Bidirectional's two directions
    if type(layer).__name__ == "MultiHeadAttention" and count:
        per = count // 4
        return [(f"{part}/", per) for part in _MHA_PARTS]
    return [("", count)]


def _refuse_nested(model: Any) -> None:
    nested = [layer.name for layer in model.layers if layer.wraps_model]
    if nested:
        raise KerasFileError(
            f"Model {model.name!r} holds models used as layers ({nested}); phalanx does not "
            "write Keras files of nested models yet. Save each model's weights on its own, or "
            "use save_weights('m.npz')."
        )
    _refuse_wrappers(model)


def _refuse_wrappers(model: Any) -> None:
    wrappers = [layer.name for layer in model.layers if getattr(layer, "_no_keras_files", False)]
    if wrappers:
        raise KerasFileError(
            f"Model {model.name!r} holds wrapper layers ({wrappers}) that phalanx does not write or read "
            "in Keras files yet (Keras nests the wrapped layer's weights in its own group). Use "
            "save_weights('m.npz'), or a checkpoint."
        )


def save_weights(model: Any, path: Any, *, optimizer: list | None = None) -> None:
    """Writes ``model``'s weights as a Keras 3 ``.weights.h5`` file (on process 0).

    ``path`` is a local path or a URL (``gs://``, ``memory://``: `phalanx.io`);
    the file appears whole or not at all. ``optimizer``: Keras's optimizer variables
    (``_keras_optimizer.keras_variables``), written under ``optimizer/vars`` as Keras 3
    does in a ``.keras`` file.

    Raises:
      KerasFileError: the model has no weights yet, or holds nested models.
    """
    _refuse_nested(model)
    if not model.built:
        raise KerasFileError(
            f"Model {model.name!r} has no weights yet: build or fit it before save_weights."
        )
    if jax.process_index() != 0:
        return
    data = _weights_h5(model, optimizer)
    with _fs.atomic_write(path) as f:
        f.write(data)


def _weights_h5(model: Any, optimizer: list | None) -> bytes:
    """The bytes of ``model``'s Keras 3 weights file."""
    buffer = io.BytesIO()
    with _h5py().File(buffer, "w") as f:
        f.create_group("vars").attrs["name"] = model.name
        root = f.create_group("layers")
        for key, layer in _keys(model):
            arrays = layer.get_weights() if layer.built else []
            start = 0
            for sub, count in _groups(layer):
                vars_group = root.create_group(f"{key}/{sub}vars")
                vars_group.attrs["name"] = layer.name
                for i, array in enumerate(arrays[start : start + count]):
                    _dataset(vars_group, str(i), np.asarray(array))
                start += count
            if layer.runs_on_host:
                _host_variables(root, key, layer)
        if optimizer is not None:
            vars_group = f.create_group("optimizer/vars")
            vars_group.attrs["name"] = model.optimizer.name
            for i, array in enumerate(optimizer):
                _dataset(vars_group, str(i), np.asarray(array))
    return buffer.getvalue()


def _host_variables(root: Any, key: str, layer: Layer) -> None:
    """A lookup layer's ``save_own_variables`` (``idf_weights`` in ``"tf_idf"``) under
    ``layers/<key>/vars``, and again under each path Keras's saver also walks
    (``TextVectorization``'s ``_lookup_layer``), where Keras's loader reads them."""
    store: dict = {}
    layer.save_own_variables(store)
    for sub in layer.keras_state_paths:
        at = f"{key}/{sub}vars"
        group = root[at] if at in root else root.create_group(at)
        group.attrs["name"] = layer.name
        for name, array in store.items():
            _dataset(group, name, np.asarray(array))


def _host_assets(model: Any) -> dict[str, bytes]:
    """Keras's ``assets/`` members of the model's lookup layers (``save_assets``: an adapted
    vocabulary as ``assets/layers/<key>/vocabulary.txt``, one token a line, special tokens
    first), under each of the layer's `keras_state_paths` as Keras's saver writes them."""
    members = {}
    for key, layer in _keys(model):
        if not layer.runs_on_host:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            layer.save_assets(tmp)
            for name in sorted(os.listdir(tmp)):
                with open(os.path.join(tmp, name), "rb") as f:
                    data = f.read()
                for sub in layer.keras_state_paths:
                    members[f"assets/layers/{key}/{sub}{name}"] = data
    return members


#: A vocabulary file larger than this in a ``.keras`` archive is refused.
MAX_ASSET_BYTES = 256 * 2**20


def load_host_state(model: Any, archive: zipfile.ZipFile, weights: bytes, where: str) -> None:
    """Keras's ``load_own_variables`` and ``load_assets`` of the model's lookup layers
    (``StringLookup``, ``IntegerLookup``, ``TextVectorization``), from ``model.weights.h5``
    and ``assets/layers/<key>/`` of the ``.keras`` archive, in Keras's order.

    Raises:
      KerasFileError: an adapted layer's vocabulary (or IDF weights) is not in the file.
    """
    hosts = [(key, layer) for key, layer in _keys(model) if layer.runs_on_host]
    if not hosts:
        return
    with _h5py().File(io.BytesIO(weights), "r") as f:
        for key, layer in hosts:
            if layer.output_mode == "tf_idf":
                at = f"layers/{key}/vars/idf_weights"
                if at not in f:
                    raise KerasFileError(
                        f"{where!r} holds no IDF weights for layer '{layer.name}' "
                        f"({type(layer).__name__}, output_mode='tf_idf') at {at!r}."
                    )
                layer.load_own_variables({"idf_weights": np.asarray(f[at])})
    names = set(archive.namelist())
    for key, layer in hosts:
        member = f"assets/layers/{key}/vocabulary.txt"
        if member not in names:
            if not layer.get_vocabulary(include_special_tokens=False):
                raise KerasFileError(
                    f"{where!r} has no {member!r}: layer '{layer.name}' "
                    f"({type(layer).__name__}) was adapted, and its vocabulary is not in the "
                    "file. Save the model again with the adapted layer."
                )
            continue  # a vocabulary given as a list: in the config
        data = _archive.read_member(archive, member, where, MAX_ASSET_BYTES)
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, "vocabulary.txt"), "wb") as f:
                f.write(data)
            layer.load_assets(tmp)


def _dataset(group: Any, name: str, array: np.ndarray) -> None:
    """One array, with HDF5's Fletcher-32 checksum of its bytes where HDF5 allows a filter
    (a non-empty array of rank 1 or more): a flipped bit in it is then an error on read,
    not a silently different weight. Keras and h5py read such a dataset as any other."""
    checked = array.ndim >= 1 and array.size > 0
    group.create_dataset(name, data=array, fletcher32=checked)


def load_weights(model: Any, path: Any) -> None:
    """Reads a Keras 3 ``.weights.h5`` file (a local path or a URL) into ``model``.

    Raises:
      FileNotFoundError: no such file.
      KerasFileError: not an HDF5 weights file, or its layers or shapes differ.
    """
    load_h5(model, read_bytes(path, "weights file"), os.fspath(path))


def read_bytes(path: Any, what: str) -> bytes:
    """The bytes of the file at ``path`` (a local path or a URL).

    Raises:
      FileNotFoundError: nothing there.
    """
    with open_file(path, what) as f:
        return f.read()


def open_file(path: Any, what: str) -> Any:
    """The file at ``path`` (a local path or a URL) opened to read bytes, seekable.

    Raises:
      FileNotFoundError: nothing there.
    """
    if not _fs.exists(path) or _fs.isdir(path):
        raise FileNotFoundError(f"No {what} at {os.fspath(path)!r}.")
    return _fs.open(path, "rb")


def load_h5(model: Any, data: bytes, where: str) -> None:
    h5py = _h5py()
    _refuse_wrappers(model)
    try:
        f = h5py.File(io.BytesIO(data), "r")
    except OSError as e:
        raise KerasFileError(f"{where!r} is not a Keras .weights.h5 file (HDF5): {e}.") from None
    except _H5_DAMAGE as e:
        raise KerasFileError(
            f"{where!r} is damaged: its HDF5 superblock cannot be read ({type(e).__name__}: "
            f"{e}); write it again."
        ) from None
    with f, _damaged(where, "layers"):
        if "layers" not in f:
            raise KerasFileError(f"{where!r} has no 'layers' group: not a Keras 3 weights file.")
        stored = f["layers"]
        for key, layer in _keys(model):
            if not layer.built or not layer.get_weights():
                continue
            with _damaged(where, f"layers/{key}"):
                _load_layer(f, stored, key, layer, where)


def _load_layer(f: Any, stored: Any, key: str, layer: Layer, where: str) -> None:
    h5py = _h5py()
    if key not in stored:
        raise KerasFileError(
            f"{where!r} holds no weights for layer '{layer.name}' "
            f"({type(layer).__name__}, key {key!r}); it holds {sorted(stored)}. Load it "
            "into a model of the same architecture (same layers, same order)."
        )
    expected = layer.get_weights()
    arrays = []
    for sub, count in _groups(layer):
        at = f"layers/{key}/{sub}vars"
        group = _member(f, at, h5py.Group, where)
        if len(group) != count:
            raise KerasFileError(
                f"Layer '{layer.name}' has {count} arrays under {key}/{sub}vars; "
                f"{where!r} holds {len(group)}."
            )
        for i in range(count):
            want = expected[len(arrays)]
            arrays.append(_read(f, f"{at}/{i}", want, where, layer.name))
    try:
        layer.set_weights(arrays)
    except ValueError as e:
        raise KerasFileError(f"{where!r}, layer '{layer.name}': {e}") from None


#: What h5py raises reading a damaged HDF5 file (a flipped bit in an object header, a
#: B-tree, a heap or a datatype message): "bad object header version number" (KeyError),
#: "bad heap free list" (RuntimeError), "Insufficient precision ..." (ValueError), OSError.
_H5_DAMAGE = (KeyError, RuntimeError, OSError, ValueError, TypeError, OverflowError)


@contextlib.contextmanager
def _damaged(where: str, at: str):
    """Turns h5py's bare errors while reading ``at`` into a ``KerasFileError`` naming the
    file and the object whose HDF5 metadata is damaged."""
    try:
        yield
    except KerasFileError:
        raise
    except _H5_DAMAGE as e:
        raise KerasFileError(
            f"{where!r} is damaged: reading {at!r} failed ({type(e).__name__}: {e}). The "
            "file's HDF5 structure is corrupt (a flipped bit, a cut copy?); write it again."
        ) from None


def _member(f: Any, at: str, kind: type, where: str) -> Any:
    """The object at ``at``, reached through hard links only: a soft or external link
    (which could point at another file, or anywhere in this one) or external or virtual
    storage is refused, so a crafted file cannot read other files into the model."""
    h5py = _h5py()
    with _damaged(where, at):
        node = f
        for part in at.split("/"):
            if part not in node:
                raise KerasFileError(f"{where!r} has no {at!r}: not a Keras 3 weights file.")
            link = node.get(part, getlink=True)
            if not isinstance(link, h5py.HardLink):
                raise KerasFileError(
                    f"{where!r}: {at!r} is reached through an HDF5 {type(link).__name__}; a "
                    "Keras weights file holds its arrays itself. Refusing to follow it."
                )
            node = node[part]
        if not isinstance(node, kind):
            raise KerasFileError(
                f"{where!r}: {at!r} is an HDF5 {type(node).__name__}, expected a {kind.__name__}."
            )
        return node


def _read(f: Any, at: str, want: np.ndarray, where: str, layer: str) -> np.ndarray:
    """The array at ``at``, its declared shape and dtype checked against the layer's
    ``want`` before a byte is read (a crafted file may declare terabytes)."""
    h5py = _h5py()
    with _damaged(where, at):
        dataset = _member(f, at, h5py.Dataset, where)
        if dataset.external or dataset.is_virtual:
            raise KerasFileError(
                f"{where!r}: {at!r} keeps its bytes outside the file "
                f"({'virtual' if dataset.is_virtual else 'external'} storage); a Keras weights "
                "file holds its arrays itself. Refusing to read it."
            )
        if dataset.dtype.kind not in "biuf" or dataset.dtype.fields is not None:
            raise KerasFileError(
                f"{where!r}: {at!r} (layer '{layer}') holds {dataset.dtype}; weights are numbers."
            )
        _check_storage(dataset, at, where, h5py)
        if tuple(dataset.shape) != tuple(np.shape(want)):
            raise KerasFileError(
                f"{where!r}, layer '{layer}': {at!r} has shape {tuple(dataset.shape)}, the layer "
                f"expects {tuple(np.shape(want))}. Load it into a model of the same architecture."
            )
        return np.asarray(dataset[()])


def _check_storage(dataset: Any, at: str, where: str, h5py: Any) -> None:
    """Refuses an array whose HDF5 datatype is not a standard integer or IEEE float (a
    flipped exponent bias or precision reinterprets every value), or whose contiguous
    storage is not its element count times its item size (a flipped type size)."""
    t = h5py.h5t
    standard = (
        t.IEEE_F16LE, t.IEEE_F32LE, t.IEEE_F64LE, t.IEEE_F16BE, t.IEEE_F32BE, t.IEEE_F64BE,
        t.STD_I8LE, t.STD_I16LE, t.STD_I32LE, t.STD_I64LE, t.STD_I8BE, t.STD_I16BE,
        t.STD_I32BE, t.STD_I64BE, t.STD_U8LE, t.STD_U16LE, t.STD_U32LE, t.STD_U64LE,
        t.STD_U8BE, t.STD_U16BE, t.STD_U32BE, t.STD_U64BE,
    )  # fmt: skip
    stored = dataset.id.get_type()
    if dataset.dtype.kind != "b" and not any(stored.equal(s) for s in standard):
        raise KerasFileError(
            f"{where!r} is damaged: {at!r} declares a non-standard HDF5 {dataset.dtype} "
            "type (its datatype message is corrupt?); write it again."
        )
    if dataset.chunks is None and dataset.size:
        size, want = dataset.id.get_storage_size(), dataset.size * dataset.dtype.itemsize
        if size != want:
            raise KerasFileError(
                f"{where!r} is damaged: {at!r} ({dataset.dtype}, shape {dataset.shape}) "
                f"needs {want} bytes and stores {size}; write it again."
            )


# -- .keras models --------------------------------------------------------------------


def optimizer_variables(model: Any) -> list[np.ndarray] | None:
    """Keras's optimizer variables for a compiled ``model`` (on every process), or None."""
    config = model._config
    if config is None:
        return None
    paths = [w._nnx_path for w in model.trainable_weights]
    values = model._optimizer_values()
    if values is None:
        return _keras_optimizer.keras_variables(config.optimizer, None, 0, None, paths)
    params, opt_state, step = values
    return _keras_optimizer.keras_variables(config.optimizer, opt_state, step, params, paths)


def restore_optimizer(model: Any, data: bytes, where: str) -> None:
    """Makes a ``.keras`` file's ``optimizer/vars`` the compiled ``model``'s optimizer state
    (each array read as the layers' are: hard links only, its shape checked first)."""
    h5py = _h5py()
    with h5py.File(io.BytesIO(data), "r") as f, _damaged(where, "optimizer"):
        if "optimizer" not in f:
            return
        count = len(_member(f, "optimizer/vars", h5py.Group, where))
        model._init_state()
        params, opt_state, _ = model._optimizer_values()
        paths = [w._nnx_path for w in model.trainable_weights]

        def read(i: int, shape: tuple) -> np.ndarray:
            want = np.broadcast_to(np.float32(0), shape)
            return _read(f, f"optimizer/vars/{i}", want, where, "optimizer")

        restored = _keras_optimizer.restore_keras_variables(
            model._config.optimizer, opt_state, params, paths, (count, read), where
        )
    if restored is not None:
        model._set_optimizer_values(*restored)


# -- writing .keras ---------------------------------------------------------------------


def save_model(model: Any, path: Any, config: dict) -> None:
    """Writes ``model``, whose Keras configuration is ``config``, as a Keras 3 ``.keras`` file.

    ``keras.models.load_model`` reads it; ``config`` comes from the model's package
    (`phalanx.models._keras_config.model_config`), which sits above this one.

    Raises:
      KerasFileError: a subclassed model, or no weights yet.
    """
    _refuse_nested(model)
    config = dict(config)
    config["compile_config"] = _keras_compile.compile_config(model)
    # Keras's layout of the optimizer's state, for an optimizer Keras rebuilds from the file.
    optimizer = optimizer_variables(model) if config["compile_config"] else None
    if jax.process_index() != 0:
        return
    metadata = {
        "keras_version": "3.10.0",
        "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S"),
        "saved_by": "phalanx",
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("metadata.json", json.dumps(metadata))
        archive.writestr("config.json", json.dumps(config))
        archive.writestr("model.weights.h5", _weights_h5(model, optimizer))
        for member, data in _host_assets(model).items():
            archive.writestr(member, data)
    with _fs.atomic_write(path) as f:  # a local path or a URL, whole or not at all
        f.write(buffer.getvalue())
