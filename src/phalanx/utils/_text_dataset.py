"""Keras's ``keras.utils.text_dataset_from_directory``: ``.txt`` files as a ``Dataset``.

The file list, its labels, its seeded shuffle and the validation split are Keras's
``dataset_utils.index_directory`` and ``get_training_or_validation_split``, step for step;
the texts are read lazily, as bytes (``tf.io.read_file``'s ``tf.string``), by the pipeline.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..data import AUTOTUNE, Dataset
from ..errors import UtilsArgumentError

_FORMATS = (".txt",)


def text_dataset_from_directory(
    directory: str | os.PathLike,
    labels: Any = "inferred",
    label_mode: str | None = "int",
    class_names: list[str] | None = None,
    batch_size: int | None = 32,
    max_length: int | None = None,
    shuffle: bool = True,
    seed: int | None = None,
    validation_split: float | None = None,
    subset: str | None = None,
    follow_links: bool = False,
    verbose: bool = True,
) -> Dataset | list[Dataset]:
    """A ``Dataset`` of the texts of the ``.txt`` files under ``directory``, as Keras's.

    With ``labels="inferred"`` each subdirectory of ``directory`` is a class (in
    alphanumeric order, or ``class_names``'s), and its ``.txt`` files (searched
    recursively, directories and files in sorted order) are labelled with its index.
    ``shuffle`` permutes the file list with ``np.random.RandomState(seed)`` as Keras
    does -- so a ``validation_split`` with one seed puts the same files in the same
    split as Keras -- and the training pipeline then shuffles with a buffer of
    ``batch_size * 8`` each epoch (that order is phalanx's ``Dataset.shuffle``, not
    TensorFlow's). The texts are Python ``bytes`` in object arrays (``tf.string``'s
    bytes): ``max_length`` keeps their first ``max_length`` bytes, as
    ``tf.strings.substr``. The dataset has a ``class_names`` attribute.

    Args:
      directory: the folder of the data: class subfolders with ``labels="inferred"``,
        otherwise any tree of ``.txt`` files.
      labels: ``"inferred"`` (from the subfolders), None (texts only), or a list/tuple
        of integer labels, one per file in the sorted order of the file paths.
      label_mode: ``"int"`` (int32 labels), ``"categorical"`` (float32 one-hot),
        ``"binary"`` (float32 of shape ``(batch, 1)``, 2 classes) or None (no labels).
      class_names: the subfolders to use, in this order (``labels="inferred"`` only).
      batch_size: texts per batch (the last may be smaller); None for single texts.
      max_length: the most bytes of a text kept; None keeps them all.
      shuffle: shuffle the files; False keeps them in alphanumeric order.
      seed: the seed of the shuffles; default drawn from numpy's global generator.
      validation_split: the fraction (in (0, 1)) of files kept for validation.
      subset: ``"training"``, ``"validation"`` or ``"both"`` (a list of the two
        datasets); only with ``validation_split``.
      follow_links: descend into subfolders that are symbolic links.
      verbose: print how many files and classes were found.

    Returns:
      A ``phalanx.data.Dataset`` of ``(texts, labels)`` batches (of texts alone when
      ``labels`` or ``label_mode`` is None), or ``[training, validation]`` for
      ``subset="both"``.

    Raises:
      UtilsArgumentError: an argument Keras refuses (its ``ValueError`` messages):
        ``labels`` neither ``"inferred"``, None nor a list, a ``label_mode`` or
        ``subset`` out of its options, ``class_names`` that are not subfolders,
        labels of the wrong length, ``"binary"`` without exactly 2 classes, a
        ``validation_split`` out of (0, 1) or without a seed while shuffling, no
        ``.txt`` file found, or a URL for ``directory`` (the folder must be local).

    Examples:
      >>> import pathlib, tempfile
      >>> root = pathlib.Path(tempfile.mkdtemp())
      >>> for name, text in [("neg/a.txt", "bad"), ("pos/b.txt", "good"), ("pos/c.txt", "fun")]:
      ...     (root / name).parent.mkdir(exist_ok=True)
      ...     _ = (root / name).write_text(text)
      >>> ds = text_dataset_from_directory(root, batch_size=2, shuffle=False)
      Found 3 files belonging to 2 classes.
      >>> texts, labels = next(iter(ds))
      >>> list(texts), labels.tolist(), ds.class_names
      ([b'bad', b'good'], [0, 1], ['neg', 'pos'])
    """
    _check_labels(labels, label_mode, class_names)
    if labels is None or label_mode is None:
        labels = label_mode = None
    _check_validation_split(validation_split, subset, shuffle, seed)
    if seed is None:
        seed = np.random.randint(1e6)
    directory = os.fspath(directory)
    if "://" in directory:
        raise UtilsArgumentError(
            f"text_dataset_from_directory({directory!r}): the folder is read on this machine, "
            "not from a URL. Copy it here first (phalanx.io.gfile.copy each file, or "
            "phalanx.utils.get_file for an archive), then pass the local folder."
        )
    file_paths, labels, class_names = index_directory(
        directory, labels, _FORMATS, class_names, shuffle, seed, follow_links, verbose
    )
    if label_mode == "binary" and len(class_names) != 2:
        _refuse(
            'When passing `label_mode="binary"`, there must be exactly 2 class_names. '
            f"Received: class_names={class_names}"
        )
    texts = _Texts(max_length)
    encode = _LabelEncoder(label_mode, len(class_names) if class_names else 0)
    buffer_size = 1024 if batch_size is None else batch_size * 8
    if subset == "both":
        datasets = []
        for part, part_shuffle in (("training", shuffle), ("validation", False)):
            paths, part_labels = split_files(file_paths, labels, validation_split, part)
            if not paths:
                _refuse(
                    f"No {part} text files found in directory {directory}. Allowed format: .txt"
                )
            ds = _dataset(paths, part_labels, encode, texts, part_shuffle, buffer_size, seed)
            datasets.append(_finish(ds, batch_size, class_names))
        return datasets
    file_paths, labels = split_files(file_paths, labels, validation_split, subset)
    if not file_paths:
        _refuse(f"No text files found in directory {directory}. Allowed format: .txt")
    ds = _dataset(file_paths, labels, encode, texts, shuffle, buffer_size, seed)
    return _finish(ds, batch_size, class_names)


def index_directory(
    directory: str,
    labels: Any,
    formats: tuple[str, ...],
    class_names: list[str] | None = None,
    shuffle: bool = True,
    seed: int | None = None,
    follow_links: bool = False,
    verbose: bool = True,
) -> tuple[list[str], np.ndarray | None, list[str] | None]:
    """Keras's ``dataset_utils.index_directory``: the files, their labels, the classes.

    Returns:
      ``(file_paths, labels, class_names)``: the paths (``directory`` joined with the
      path under it), int32 labels (None without labels), and the class names (None
      without labels); both lists permuted by ``RandomState(seed)`` with ``shuffle``.
    """
    subdirs = _class_subdirs(directory, labels, class_names)
    class_indices = {name: i for i, name in enumerate(subdirs)}
    filenames: list[str] = []
    label_list: list[int] = []
    for subdir in subdirs:
        names, indices = _index_subdirectory(
            os.path.join(directory, subdir), class_indices, follow_links, formats
        )
        filenames += names
        label_list += indices
    if labels == "inferred":
        labels, class_names = np.asarray(label_list, dtype=np.int32), subdirs
    elif labels is None:
        class_names = None
    else:
        if len(labels) != len(filenames):
            _refuse(
                "Expected the lengths of `labels` to match the number of files in the target "
                f"directory. len(labels) is {len(labels)} while we found {len(filenames)} "
                f"files in directory {directory}."
            )
        class_names = [str(label) for label in sorted(set(labels))]
        labels = _int32(np.asarray(labels))
    if verbose:
        if labels is None:
            print(f"Found {len(filenames)} files.")
        else:
            print(f"Found {len(filenames)} files belonging to {len(class_names)} classes.")
    file_paths = [os.path.join(directory, name) for name in filenames]
    if shuffle:
        if seed is None:
            seed = np.random.randint(1e6)
        np.random.RandomState(seed).shuffle(file_paths)
        if labels is not None:
            np.random.RandomState(seed).shuffle(labels)
    return file_paths, labels, class_names


def split_files(
    samples: list[str], labels: np.ndarray | None, validation_split: float | None, subset: Any
) -> tuple[list[str], np.ndarray | None]:
    """Keras's ``get_training_or_validation_split``: the last ``int(split * n)`` files
    are the validation subset, the others the training subset (it prints which)."""
    if not validation_split:
        return samples, labels
    num_val = int(validation_split * len(samples))
    if subset == "training":
        print(f"Using {len(samples) - num_val} files for training.")
        part = slice(None, -num_val)
    elif subset == "validation":
        print(f"Using {num_val} files for validation.")
        part = slice(-num_val, None)
    else:
        _refuse(f'`subset` must be either "training" or "validation", received: {subset}')
    return samples[part], None if labels is None else labels[part]


def _class_subdirs(directory: str, labels: Any, class_names: list[str] | None) -> list[str]:
    """The class subfolders, in order (``[""]``, the folder itself, without inferred labels)."""
    if labels != "inferred":
        if class_names is not None:
            if labels is None:
                _refuse(
                    "When `labels=None` (no labels), argument `class_names` cannot be specified."
                )
            _refuse(
                "When argument `labels` is specified, argument `class_names` cannot be "
                "specified (the `class_names` will be the sorted list of labels)."
            )
        return [""]
    subdirs = [
        name.rstrip("/")
        for name in sorted(os.listdir(directory))
        if os.path.isdir(os.path.join(directory, name)) and not name.startswith(".")
    ]
    if class_names is None:
        return subdirs
    if not set(class_names).issubset(set(subdirs)):
        _refuse(
            "The `class_names` passed did not match the names of the subdirectories of the "
            f"target directory. Expected: {subdirs} (or a subset of it), but received: "
            f"class_names={class_names}"
        )
    return list(class_names)


def _index_subdirectory(
    directory: str, class_indices: dict[str, int], follow_links: bool, formats: tuple[str, ...]
) -> tuple[list[str], list[int]]:
    """The files under ``directory`` (sorted folders, then sorted names), as paths
    relative to its parent, with the class index of its name."""
    dirname = os.path.basename(directory)
    filenames, labels = [], []
    for root, _, files in sorted(os.walk(directory, followlinks=follow_links), key=_first):
        for fname in sorted(files):
            if fname.lower().endswith(formats):
                relative = os.path.relpath(os.path.join(root, fname), directory)
                filenames.append(os.path.join(dirname, relative))
                labels.append(class_indices[dirname])
    return filenames, labels


def _first(walked: tuple) -> str:
    return walked[0]


def _int32(labels: np.ndarray) -> np.ndarray:
    """Integer labels as int32 where they fit (``tf.data`` of Python ints), else as given."""
    if labels.dtype.kind in "iu" and (
        labels.size == 0 or (labels.min() >= -(2**31) and labels.max() < 2**31)
    ):
        return labels.astype(np.int32)
    return labels


class _LabelEncoder:
    """Keras's ``labels_to_dataset``: int32 as given, binary ``(1,)`` float32, one-hot."""

    def __init__(self, label_mode: str | None, num_classes: int):
        self.label_mode, self.num_classes = label_mode, num_classes

    def __call__(self, labels: np.ndarray) -> np.ndarray:
        if self.label_mode == "binary":
            return labels.astype(np.float32)[:, None]
        if self.label_mode == "categorical":  # tf.one_hot: a row of zeros out of range
            return (labels[:, None] == np.arange(self.num_classes)).astype(np.float32)
        return labels


class _Texts:
    """Reads one file's bytes (its first ``max_length`` bytes), as ``tf.io.read_file``."""

    def __init__(self, max_length: int | None):
        self.max_length = max_length

    def read(self, path: Any) -> bytes:
        with open(np.asarray(path, dtype=object).item(), "rb") as f:  # bytes, or 0-d of them
            text = f.read()
        return text if self.max_length is None else text[: self.max_length]

    def with_label(self, path: Any, label: np.ndarray) -> tuple[bytes, np.ndarray]:
        return self.read(path), label


def _dataset(
    paths: list[str],
    labels: np.ndarray | None,
    encode: _LabelEncoder,
    texts: _Texts,
    shuffle: bool,
    buffer_size: int,
    seed: int,
) -> Dataset:
    """Keras's ``paths_and_labels_to_dataset``: paths (and labels), shuffled, then read."""
    if labels is None:
        ds = Dataset.from_tensor_slices(paths)
    else:
        ds = Dataset.from_tensor_slices((paths, encode(labels)))
    if shuffle:
        ds = ds.shuffle(buffer_size, seed=seed)
    read = texts.read if labels is None else texts.with_label
    return ds.map(read, num_parallel_calls=AUTOTUNE)


def _finish(ds: Dataset, batch_size: int | None, class_names: list[str] | None) -> Dataset:
    if batch_size is not None:
        ds = ds.batch(batch_size)
    ds.class_names = class_names
    return ds


def _check_labels(labels: Any, label_mode: Any, class_names: Any) -> None:
    """Keras's first checks of ``labels``, ``class_names`` and ``label_mode``."""
    if labels not in ("inferred", None):
        if not isinstance(labels, list | tuple):
            _refuse(
                "`labels` argument should be a list/tuple of integer labels, of the same size "
                "as the number of text files in the target directory. If you wish to infer "
                "the labels from the subdirectory names in the target directory, pass "
                '`labels="inferred"`. If you wish to get a dataset that only contains text '
                f"samples (no labels), pass `labels=None`. Received: labels={labels}"
            )
        if class_names:
            _refuse(
                'You can only pass `class_names` if `labels="inferred"`. '
                f"Received: labels={labels}, and class_names={class_names}"
            )
    if label_mode not in {"int", "categorical", "binary", None}:
        _refuse(
            '`label_mode` argument must be one of "int", "categorical", "binary", or None. '
            f"Received: label_mode={label_mode}"
        )


def _check_validation_split(validation_split: Any, subset: Any, shuffle: bool, seed: Any) -> None:
    """Keras's ``check_validation_split_arg``."""
    if validation_split and not 0 < validation_split < 1:
        _refuse(f"`validation_split` must be between 0 and 1, received: {validation_split}")
    if (validation_split or subset) and not (validation_split and subset):
        _refuse("If `subset` is set, `validation_split` must be set, and inversely.")
    if subset not in ("training", "validation", "both", None):
        _refuse(f'`subset` must be either "training", "validation" or "both", received: {subset}')
    if validation_split and shuffle and seed is None:
        _refuse(
            "If using `validation_split` and shuffling the data, you must provide a `seed` "
            "argument, to make sure that there is no overlap between the training and "
            "validation subset."
        )


def _refuse(message: str) -> None:
    raise UtilsArgumentError(message)
