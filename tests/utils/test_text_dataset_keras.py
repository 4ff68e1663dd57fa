"""``phalanx.utils.text_dataset_from_directory``: Keras 3's file order, labels, splits, errors.

TensorFlow is not installed, so Keras's own function cannot run; its file indexing and
split arithmetic can (``dataset_utils.index_directory`` and
``get_training_or_validation_split`` use no TensorFlow for a local folder), and the tests
compare phalanx's datasets with them. Each file holds its own relative path, so a text
names its file. The rest ports keras/src/utils/text_dataset_utils_test.py.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from keras.src.utils import dataset_utils

import phalanx as px
from phalanx.errors import UtilsArgumentError
from phalanx.utils import text_dataset_from_directory


def _prepare_directory(root, num_classes=2, nested_dirs=False, count=16):
    """Keras's ``_prepare_directory``: files spread over class folders (and subfolders)."""
    paths = []
    for class_index in range(num_classes):
        class_directory = f"class_{class_index}"
        class_paths = [class_directory]
        if nested_dirs:
            class_paths += [
                os.path.join(class_directory, "subfolder_1"),
                os.path.join(class_directory, "subfolder_2"),
                os.path.join(class_directory, "subfolder_1", "sub-subfolder"),
            ]
        for path in class_paths:
            os.mkdir(os.path.join(root, path))
        paths += class_paths
    for i in range(count):
        name = os.path.join(paths[i % len(paths)], f"text_{i}.txt")
        with open(os.path.join(root, name), "w") as f:
            f.write(f"{name} {'x' * 12}")
    return str(root)


def _sub(root, name):
    (root / name).mkdir()
    return root / name


def _all(ds):
    """Every (text, label) of a batched dataset, texts decoded; labels as lists."""
    texts, labels = [], []
    for x, y in ds.as_numpy_iterator():
        texts += [t.decode() for t in x]
        labels += y.tolist()
    return texts, labels


def _keras_index(directory, labels="inferred", shuffle=True, seed=None, **kw):
    paths, labs, names = dataset_utils.index_directory(
        directory, labels, formats=(".txt",), shuffle=shuffle, seed=seed, verbose=False, **kw
    )
    return [os.path.relpath(p, directory) for p in paths], labs, names


def _text_name(text):
    return text.split(" ")[0]


def test_unshuffled_order_and_labels_are_keras_index(tmp_path):
    directory = _prepare_directory(tmp_path, num_classes=3, nested_dirs=True, count=30)
    with open(os.path.join(directory, "class_1", "skip.md"), "w") as f:
        f.write("not a text file")
    os.mkdir(os.path.join(directory, ".hidden"))
    ds = text_dataset_from_directory(directory, batch_size=7, shuffle=False, verbose=False)
    texts, labels = _all(ds)
    want_paths, want_labels, want_names = _keras_index(directory, shuffle=False)
    assert [_text_name(t) for t in texts] == want_paths
    assert labels == want_labels.tolist()
    assert ds.class_names == want_names == ["class_0", "class_1", "class_2"]


@pytest.mark.parametrize("seed", [1337, 7])
def test_validation_split_puts_keras_files_in_each_subset(tmp_path, seed):
    directory = _prepare_directory(tmp_path, num_classes=3, count=23)
    paths, labels, _ = _keras_index(directory, seed=seed)
    want = {}
    for subset in ("training", "validation"):
        p, y = dataset_utils.get_training_or_validation_split(paths, labels, 0.3, subset)
        want[subset] = sorted(zip(p, y.tolist(), strict=True))
    both = text_dataset_from_directory(
        directory, validation_split=0.3, subset="both", seed=seed, batch_size=4, verbose=False
    )
    for subset, ds in zip(("training", "validation"), both, strict=True):
        texts, labs = _all(ds)
        assert sorted(zip(map(_text_name, texts), labs, strict=True)) == want[subset]
        one = text_dataset_from_directory(
            directory, validation_split=0.3, subset=subset, seed=seed, verbose=False
        )
        assert sorted(_text_name(t) for t in _all(one)[0]) == [p for p, _ in want[subset]]
    # Validation is not shuffled again: it keeps Keras's permuted order.
    assert [_text_name(t) for t in _all(both[1])[0]] == paths[-int(0.3 * len(paths)) :]
    assert len(_all(both[0])[0]) == 23 - 6


def test_shuffle_permutes_the_files_by_the_seed_and_reshuffles_each_epoch(tmp_path):
    directory = _prepare_directory(tmp_path, count=40)
    ds = text_dataset_from_directory(directory, batch_size=5, seed=3, verbose=False)
    first, second = _all(ds), _all(ds)
    assert sorted(first[0]) == sorted(second[0]) and first[0] != second[0]
    assert (
        _all(text_dataset_from_directory(directory, batch_size=5, seed=3, verbose=False)) == first
    )
    # Each text keeps its own label through the shuffles.
    assert all(int(t[len("class_")]) == y for t, y in zip(*first, strict=True))


def test_manual_labels_follow_the_sorted_paths_and_the_shuffle(tmp_path):
    directory = _prepare_directory(tmp_path, num_classes=2, count=6)
    manual = [5, 0, 3, 3, 0, 5]
    ds = text_dataset_from_directory(
        directory, labels=manual, validation_split=0.5, subset="validation", seed=11,
        verbose=False,
    )  # fmt: skip
    paths, labels, names = _keras_index(directory, labels=list(manual), seed=11)
    want = dataset_utils.get_training_or_validation_split(paths, labels, 0.5, "validation")
    texts, labs = _all(ds)
    # A lone validation subset is shuffled by the pipeline too (Keras: shuffle=shuffle).
    assert sorted(zip(map(_text_name, texts), labs, strict=True)) == sorted(
        zip(want[0], want[1], strict=True)
    )
    assert ds.class_names == names == ["0", "3", "5"]
    unshuffled = text_dataset_from_directory(
        directory, batch_size=8, labels=[0, 1] * 3, shuffle=False, verbose=False
    )
    assert _all(unshuffled)[1] == [0, 1] * 3


def test_label_modes_dtypes_shapes_and_max_length(tmp_path):
    directory = _prepare_directory(tmp_path, num_classes=2)
    x, y = next(iter(text_dataset_from_directory(directory, batch_size=8, max_length=10)))
    assert x.shape == (8,) and x.dtype == object and all(len(t) == 10 for t in x)
    assert y.shape == (8,) and y.dtype == np.int32
    _, y = next(iter(text_dataset_from_directory(directory, batch_size=8, label_mode="binary")))
    assert y.shape == (8, 1) and y.dtype == np.float32
    ds = text_dataset_from_directory(directory, batch_size=8, label_mode="categorical", seed=2)
    texts, y = next(iter(ds))
    assert y.shape == (8, 2) and y.dtype == np.float32
    assert [int(t.decode()[len("class_")]) for t in texts] == y.argmax(1).tolist()
    directory4 = _prepare_directory(_sub(tmp_path, "four"), num_classes=4, count=15)
    _, y = next(
        iter(text_dataset_from_directory(directory4, batch_size=8, label_mode="categorical"))
    )
    assert y.shape == (8, 4)


def test_no_labels_unbatched_and_counts(tmp_path, capsys):
    directory = _prepare_directory(tmp_path, count=7, num_classes=2)
    for i in range(3):
        (tmp_path / f"text_{i}.txt").write_text("top level " * 3)
    ds = text_dataset_from_directory(directory, batch_size=5, label_mode=None, max_length=10)
    assert "Found 10 files." in capsys.readouterr().out
    batches = list(ds.as_numpy_iterator())
    assert [len(b) for b in batches] == [5, 5] and ds.class_names is None
    single = text_dataset_from_directory(directory, batch_size=None, label_mode=None)
    first = next(single.as_numpy_iterator())
    assert type(first) is bytes
    nested = _prepare_directory(_sub(tmp_path, "nested"), 2, nested_dirs=True, count=25)
    ds = text_dataset_from_directory(nested, batch_size=8, label_mode=None, follow_links=True)
    assert sum(len(b) for b in ds.as_numpy_iterator()) == 25
    assert "Found 25 files." in capsys.readouterr().out


def test_messages_are_keras(tmp_path, capsys):
    directory = _prepare_directory(tmp_path, num_classes=2, count=10)
    text_dataset_from_directory(directory, validation_split=0.2, subset="training", seed=1)
    out = capsys.readouterr().out
    assert "Found 10 files belonging to 2 classes.\nUsing 8 files for training.\n" in out
    text_dataset_from_directory(directory, validation_split=0.2, subset="both", seed=1)
    assert "Using 8 files for training.\nUsing 2 files for validation." in capsys.readouterr().out


def test_fit_consumes_it_through_text_vectorization(tmp_path):
    directory = _prepare_directory(tmp_path, num_classes=2, count=12)
    train = text_dataset_from_directory(directory, batch_size=4, seed=0, verbose=False)
    vectorize = px.layers.TextVectorization(max_tokens=30, output_sequence_length=4)
    vectorize.adapt(train.map(lambda x, y: x))
    train = train.map(lambda x, y: (vectorize(x), y))
    model = px.Sequential(
        [
            px.layers.Input((4,)),
            px.layers.Embedding(30, 4),
            px.layers.GlobalAveragePooling1D(),
            px.layers.Dense(2),
        ]
    )
    model.compile(optimizer="adam", loss=px.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(train, epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2 and np.isfinite(history.history["loss"]).all()


def test_errors_are_keras(tmp_path):
    directory = _prepare_directory(tmp_path, num_classes=3, count=5)
    cases = [
        ({"labels": "other"}, "`labels` argument should be"),
        ({"label_mode": "other"}, "`label_mode` argument must be"),
        (
            {"labels": [0, 0, 1, 1, 1], "class_names": ["class_0", "class_1", "class_2"]},
            'only pass `class_names` if `labels="inferred"`',
        ),
        ({"labels": [0, 0, 1, 1]}, "Expected the lengths of `labels` to match the number of files"),
        ({"class_names": ["class_0", "wrong_class"]}, "`class_names` passed did not match"),
        ({"label_mode": "binary"}, "there must be exactly 2"),
        ({"validation_split": 2}, "`validation_split` must be between 0 and 1"),
        (
            {"validation_split": 0.2, "subset": "other"},
            '`subset` must be either "training", "validation" or "both"',
        ),
        ({"validation_split": 0.0, "subset": "training"}, "`validation_split` must be set"),
        ({"validation_split": 0.2, "subset": "training"}, "must provide a `seed`"),
        ({"label_mode": None, "class_names": ["class_0"]}, r"When `labels=None` \(no labels\)"),
    ]
    for kwargs, match in cases:
        with pytest.raises(UtilsArgumentError, match=match):
            text_dataset_from_directory(directory, verbose=False, **kwargs)
        with pytest.raises(ValueError, match=match):
            text_dataset_from_directory(directory, verbose=False, **kwargs)
    empty = _prepare_directory(_sub(tmp_path, "empty"), num_classes=2, count=0)
    with pytest.raises(UtilsArgumentError, match="No text files found in directory"):
        text_dataset_from_directory(empty)
    with pytest.raises(UtilsArgumentError, match="No training text files found"):
        text_dataset_from_directory(
            directory, validation_split=0.1, subset="both", seed=1, verbose=False
        )


@pytest.mark.parametrize("follow_links", [False, True])
def test_symlinked_folders_as_keras_follow_links(tmp_path, follow_links):
    directory = _prepare_directory(_sub(tmp_path, "data"), num_classes=2, count=4)
    elsewhere = _sub(tmp_path, "elsewhere")
    (elsewhere / "linked.txt").write_text("class_0/link/linked.txt")
    os.symlink(elsewhere, os.path.join(directory, "class_0", "link"))
    os.symlink(elsewhere, os.path.join(directory, "class_2"))  # a linked class folder
    ds = text_dataset_from_directory(
        directory, shuffle=False, follow_links=follow_links, verbose=False
    )
    paths, labels, names = _keras_index(directory, shuffle=False, follow_links=follow_links)
    texts, labs = _all(ds)
    assert len(texts) == len(paths) == (6 if follow_links else 5)
    assert labs == labels.tolist() and ds.class_names == names
