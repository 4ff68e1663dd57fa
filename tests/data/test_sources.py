"""Sources: from_tensor_slices, from_tensors, range, from_generator, zip, concatenate, list_files."""

import itertools

import numpy as np
import pytest
from data_support import elements

from phalanx.data import INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Dataset, TensorSpec
from phalanx.errors import ComponentLengthError, GeneratorSignatureError, StructureMismatchError


def test_from_tensor_slices_dtypes_follow_tensorflow():
    assert Dataset.from_tensor_slices([1.0, 2.0]).element_spec == TensorSpec((), np.float32)
    assert Dataset.from_tensor_slices([1, 2]).element_spec == TensorSpec((), np.int32)
    assert Dataset.from_tensor_slices(np.arange(3, dtype=np.int32)).element_spec == TensorSpec(
        (), np.int32
    )
    assert Dataset.from_tensor_slices(np.zeros((3, 2), np.float64)).element_spec == TensorSpec(
        (2,), np.float64
    )
    assert elements(Dataset.from_tensor_slices(["a", "b"])) == [b"a", b"b"]


def test_from_tensor_slices_nested():
    ds = Dataset.from_tensor_slices({"a": [1, 2], "b": ([3, 4], [[5, 6], [7, 8]])})
    assert elements(ds) == [{"a": 1, "b": (3, [5, 6])}, {"a": 2, "b": (4, [7, 8])}]
    assert ds.element_spec == {
        "a": TensorSpec((), np.int32),
        "b": (TensorSpec((), np.int32), TensorSpec((2,), np.int32)),
    }


def test_from_tensor_slices_different_lengths_is_a_clear_error():
    with pytest.raises(
        ComponentLengthError, match=r"same first dimension.*\[0\]: \(3,\).*\[1\]: \(2,\)"
    ):
        Dataset.from_tensor_slices((np.zeros(3), np.zeros(2)))


def test_from_tensors_and_range():
    assert elements(Dataset.from_tensors(([1, 2], 3))) == [([1, 2], 3)]
    assert elements(Dataset.range(5)) == [0, 1, 2, 3, 4]
    assert elements(Dataset.range(2, 5)) == [2, 3, 4]
    assert elements(Dataset.range(1, 5, 2)) == [1, 3]
    assert elements(Dataset.range(1, 5, -2)) == []
    assert elements(Dataset.range(5, 1, -2)) == [5, 3]
    assert Dataset.range(5).element_spec == TensorSpec((), np.int64)
    assert next(iter(Dataset.range(3))).dtype == np.int64
    assert Dataset.range(5, 1, -2).cardinality() == 2


def test_from_generator_tf_docstring():
    def gen():
        for i in itertools.count(1):
            yield (i, [1] * i)

    ds = Dataset.from_generator(
        gen, output_signature=(TensorSpec((), np.int64), TensorSpec((None,), np.int64))
    )
    assert elements(ds.take(3)) == [(1, [1]), (2, [1, 1]), (3, [1, 1, 1])]
    assert ds.cardinality() == UNKNOWN_CARDINALITY
    legacy = Dataset.from_generator(
        gen, output_types=(np.int64, np.int64), output_shapes=((), (None,))
    )
    assert elements(legacy.take(2)) == [(1, [1]), (2, [1, 1])]


def test_from_generator_signature_errors():
    sig = TensorSpec((2,), np.float32)
    with pytest.raises(
        GeneratorSignatureError,
        match=r"element 1 has shape \(3,\) where output_signature expects \(2,\)",
    ):
        list(Dataset.from_generator(lambda: iter([[1, 2], [1, 2, 3]]), output_signature=sig))
    with pytest.raises(GeneratorSignatureError, match="element 0 has structure"):
        list(Dataset.from_generator(lambda: iter([(1, 2)]), output_signature=sig))
    with pytest.raises(GeneratorSignatureError, match="could not be converted to float32"):
        list(Dataset.from_generator(lambda: iter([["a", "b"]]), output_signature=sig))


def test_zip_tf_docstring():
    a, b = Dataset.range(1, 4), Dataset.range(4, 7)
    assert elements(Dataset.zip((a, b))) == [(1, 4), (2, 5), (3, 6)]
    assert elements(Dataset.zip(a, b)) == [(1, 4), (2, 5), (3, 6)]
    c = Dataset.range(7, 13).batch(2)
    assert elements(Dataset.zip((a, b, c))) == [(1, 4, [7, 8]), (2, 5, [9, 10]), (3, 6, [11, 12])]
    d = Dataset.range(13, 15)
    assert elements(Dataset.zip((a, d))) == [(1, 13), (2, 14)]
    assert Dataset.zip({"x": a, "y": d}).cardinality() == 2
    assert Dataset.zip((a, d.repeat())).cardinality() == 3


def test_concatenate_tf_docstring():
    a, b = Dataset.range(1, 4), Dataset.range(4, 8)
    assert elements(a.concatenate(b)) == [1, 2, 3, 4, 5, 6, 7]
    assert a.concatenate(b).cardinality() == 7
    with pytest.raises(StructureMismatchError, match="differ in structure"):
        a.concatenate(Dataset.zip((a, b)))


def test_list_files_sorted_or_shuffled(tmp_path):
    for name in ["c.txt", "a.txt", "b.txt", "skip.bin"]:
        (tmp_path / name).write_text(name)
    names = [str(tmp_path / n).encode() for n in ["a.txt", "b.txt", "c.txt"]]
    assert elements(Dataset.list_files(str(tmp_path / "*.txt"), shuffle=False)) == names
    shuffled = elements(Dataset.list_files(str(tmp_path / "*.txt"), seed=3))
    assert sorted(shuffled) == names
    assert elements(Dataset.list_files(str(tmp_path / "*.txt"), seed=3)) == shuffled
    with pytest.raises(ValueError, match="no files matched pattern"):
        Dataset.list_files(str(tmp_path / "*.nothing"))


def test_cardinality_and_len():
    assert Dataset.range(42).cardinality() == 42
    assert Dataset.range(42).repeat().cardinality() == INFINITE_CARDINALITY
    assert Dataset.range(42).filter(lambda x: True).cardinality() == UNKNOWN_CARDINALITY
    assert len(Dataset.range(10).batch(3)) == 4
    assert len(Dataset.range(10).batch(3, drop_remainder=True)) == 3
    with pytest.raises(TypeError, match="infinite"):
        len(Dataset.range(3).repeat())
    with pytest.raises(TypeError, match="unknown"):
        len(Dataset.range(3).filter(lambda x: x > 0))
