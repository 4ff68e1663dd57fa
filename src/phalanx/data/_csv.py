"""``CsvDataset`` and ``make_csv_dataset`` (``tf.data.experimental``'s CSV readers, TF 2.21).

``CsvDataset`` is a file source like ``TextLineDataset``: it reads its files
one after another through ``phalanx.io`` (local paths and URLs, GZIP/ZLIB),
with ``phalanx.io._csv_reader.CsvReader`` parsing records (quoted fields may hold
line breaks), so it shares that source's iterator: the state is the file, the
record and its byte offset, and a restored iterator seeks there. FILE
auto-sharding gives each input pipeline its share of the files.

``make_csv_dataset`` is TF's composition: the matching files (sorted, then
shuffled), column names from the header, column types inferred from the first
``num_rows_for_inference`` rows (Python's ``csv`` module, as TF), one
``CsvDataset`` per file interleaved, ``shuffle``/``repeat``, ``batch``, a map
to ``(dict of features, label)`` and ``prefetch``.
"""

from __future__ import annotations

import codecs
import itertools
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ..errors import DatasetArgumentError, DatasetTypeError
from ..io import Column, CsvReader, _fs, columns, csv_format, normalize_compression_type, text_rows
from ._dataset import Dataset
from ._options import AUTOTUNE, Options
from ._record_datasets import FileBlocksIterator, _RecordFileDataset
from ._sources import ListFilesDataset
from ._structure import TensorSpec

__all__ = ["CsvDataset", "make_csv_dataset"]


def _indices(name: str, cols: Any) -> list[int]:
    if cols is None:
        return []
    out = [int(c) for c in cols]
    if any(a >= b for a, b in itertools.pairwise(out)):
        raise DatasetArgumentError(
            f"CsvDataset: {name} should be strictly increasing indices; received {list(cols)}."
        )
    if out and out[0] < 0:
        raise DatasetArgumentError(
            f"CsvDataset: {name} should be non-negative indices; received {list(cols)}."
        )
    return out


class CsvDataset(_RecordFileDataset):
    """The records of one or more CSV files as tuples of scalars (``tf.data.experimental.CsvDataset``).

    RFC 4180 format is expected: fields separated by ``field_delim``, records by ``\\n``,
    ``\\r`` or ``\\r\\n``; a quoted field may hold delimiters, line breaks and ``""`` (a
    quote). Spaces around int and float fields are allowed, as TensorFlow. A record that
    does not parse raises ``CsvParseError`` when reached, naming the file, the record and
    the field; the iterator is then past it (``ignore_errors()`` drops just that record).
    Checkpointable: a restored iterator seeks to the record's byte offset.

    Args:
        filenames: a file name (local or a URL), a list of them, or a ``Dataset`` of names
            (``Dataset.list_files(...)``; TF takes names only).
        record_defaults: one entry per output column: a dtype (``"float32"``, ``np.int32``,
            ``"string"`` ...) or an empty list for a required column, a value or a
            one-element list (``[0.0]``, ``[""]``) for an optional one (its default).
        compression_type: ``None`` or ``""``, ``"ZLIB"`` or ``"GZIP"``.
        buffer_size: bytes to read at a time (positive; phalanx reads at least 4 MiB).
        header: skip each file's first record (the column names).
        field_delim: the one-character delimiter of fields.
        use_quote_delim: False treats double quotes as ordinary characters.
        na_value: a field equal to this is missing too (takes the default).
        select_cols: the sorted indices of the columns to read, one per
            ``record_defaults`` entry; all columns when None.
        exclude_cols: the sorted indices of the columns to leave out (not with
            ``select_cols``).
        name: accepted for TensorFlow compatibility.

    Raises:
        DatasetArgumentError: ``buffer_size`` is not positive, ``select_cols``/``exclude_cols``
            are not increasing non-negative indices or are both given, ``select_cols`` has
            another length than ``record_defaults``, ``field_delim`` is not one character
            (TF's messages).
        CsvParseError: while iterating, a record does not parse.

    Examples:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "a.csv")
        >>> _ = open(path, "w").write('name,x\\n"Smith, J",1.5\\nDoe,\\n')
        >>> ds = CsvDataset(path, ["string", [0.0]], header=True)
        >>> ds.element_spec
        (TensorSpec(shape=(), dtype=object, name=None), TensorSpec(shape=(), dtype=float32, name=None))
        >>> [(n.item(), float(x)) for n, x in ds]
        [(b'Smith, J', 1.5), (b'Doe', 0.0)]
    """

    def __init__(
        self,
        filenames: Any,
        record_defaults: Any,
        compression_type: str | None = None,
        buffer_size: int | None = None,
        header: bool = False,
        field_delim: str = ",",
        use_quote_delim: bool = True,
        na_value: str = "",
        select_cols: Sequence[int] | None = None,
        exclude_cols: Sequence[int] | None = None,
        *,
        name: str | None = None,
    ):
        super().__init__(filenames)
        self._cols = columns(record_defaults, "CsvDataset")
        self._fmt = csv_format(field_delim, use_quote_delim, na_value, "CsvDataset")
        self._compression = normalize_compression_type(compression_type)
        if buffer_size is not None and int(buffer_size) <= 0:
            raise DatasetArgumentError(
                f"CsvDataset: buffer_size should be positive; received {buffer_size!r}."
            )
        self._buffer_size = buffer_size
        if not isinstance(header, bool | np.bool_):
            raise DatasetTypeError(f"CsvDataset: header must be a bool; received {header!r}.")
        self._header = bool(header)
        select, exclude = (
            _indices("select_cols", select_cols),
            _indices("exclude_cols", exclude_cols),
        )
        if select and exclude:
            raise DatasetArgumentError(
                "CsvDataset: Either select_cols or exclude_cols should be empty; received both "
                f"select_cols={list(select_cols)} and exclude_cols={list(exclude_cols)}."
            )
        if select and len(select) != len(self._cols):
            raise DatasetArgumentError(
                f"CsvDataset: select_cols should match output size: {len(select)} columns "
                f"selected, {len(self._cols)} record_defaults."
            )
        self._include = select or (("exclude", exclude) if exclude else None)

    @classmethod
    def _parallel(cls, filenames: Any, *args: Any, **kwargs: Any) -> Dataset | None:
        """A ``Dataset`` of names: one ``CsvDataset`` per name, one after another."""
        if not isinstance(filenames, Dataset):
            return None
        return filenames.interleave(
            lambda f: cls(f, *args, **kwargs), cycle_length=1, block_length=1
        )

    def _reader(self, filename: str, start: tuple[int, int] | None) -> CsvReader:
        return CsvReader(
            filename,
            self._cols,
            self._fmt,
            include=self._include,
            header=self._header,
            compression_type=self._compression,
            buffer_size=self._buffer_size,
            start=start or (0, 0),
        )

    def _iterator(self, ctx):
        return _CsvIterator(self)

    def _compute_spec(self):
        return tuple(TensorSpec((), c.dtype) for c in self._cols)


class _CsvIterator(FileBlocksIterator):
    """Rows in blocks of tuples; a record that did not parse is raised when handed out."""

    def _element(self, value: Any) -> Any:
        if isinstance(value, Exception):
            raise value
        return value


# --- make_csv_dataset ---------------------------------------------------------------------------

_CSV_TYPES = ("int32", "int64", "float32", "float64")


def _file_names(file_pattern: Any) -> list[str]:
    """TF's ``_get_file_names(file_pattern, shuffle=False)``: every glob's matches, sorted."""
    if isinstance(file_pattern, list | tuple):
        if not file_pattern:
            raise DatasetArgumentError(
                "make_csv_dataset: Argument `file_pattern` should not be empty."
            )
        patterns = list(file_pattern)
    else:
        patterns = [file_pattern]
    names = [m for p in patterns for m in _fs.glob(str(p))]
    if not names:
        raise DatasetArgumentError(
            f"make_csv_dataset: No files match `file_pattern` {file_pattern!r}. Check the path "
            "(relative to the current directory, or a URL's bucket and prefix)."
        )
    return sorted(names)


def _column_names(files: list[str], fmt: Any, compression: str, encoding: str) -> list[str]:
    """TF's ``_infer_column_names``: the first row of every file, which must agree."""
    names = None
    for path in files:
        try:
            row = next(text_rows(path, fmt, compression, encoding))
        except StopIteration:
            raise DatasetArgumentError(
                f"make_csv_dataset: Received StopIteration when reading the header line of "
                f"{path}. Empty file? Give column_names= (and header=False) for files without "
                "a header."
            ) from None
        if names is None:
            names = row
        elif row != names:
            raise DatasetArgumentError(
                f"make_csv_dataset: Files have different column names in the header row: "
                f"{files[0]} has {names}, {path} has {row}."
            )
    return names


def _infer_type(value: str, na_value: str, prev: str | None) -> str | None:
    """TF's ``_infer_type``: the least permissive of int32, int64, float32, float64, string
    that holds ``value`` and every earlier value of the column."""
    if value in ("", na_value):
        return prev
    order = ["int32", "int64", "float32", "float64", "string"]
    for i, kind in enumerate(order):
        if _valid(value, kind) and (prev is None or prev in order[: i + 1]):
            return kind
    return "string"


def _valid(value: str, kind: str) -> bool:
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            if kind == "int32":
                return bool(np.int32(value) == np.int64(value))
            if kind == "int64":
                np.int64(value)
                return True
            if kind in ("float32", "float64"):
                return bool(np.dtype(kind).type(value) < np.inf)
    except (ValueError, OverflowError):
        return False
    return True


def _column_defaults(files, n, fmt, na_value, header, rows, select, compression, encoding):
    """TF's ``_infer_column_defaults``: optional columns of the inferred types (0 or "")."""
    select = list(range(n)) if select is None else select
    kinds: list[str | None] = [None] * len(select)
    count = 0
    for path in files:
        reader = text_rows(path, fmt, compression, encoding)
        if header:
            next(reader, None)
        for row in reader:
            if rows is not None and count >= rows:
                break
            if len(row) != n:
                raise DatasetArgumentError(
                    f"make_csv_dataset: Problem inferring types: CSV row has different number of "
                    f"fields than expected: {len(row)} fields in {path} ({row!r:.80}), {n} "
                    "columns. Give column_defaults= or fix the file."
                )
            kinds = [_infer_type(row[c], na_value, k) for c, k in zip(select, kinds, strict=True)]
            count += 1
        if rows is not None and count >= rows:
            break
    kinds = [k or "string" for k in kinds]
    return [[""] if k == "string" else np.array([0], k) for k in kinds]


def _sorted_columns(select_columns: Sequence[Any], names: list[str]) -> list[int]:
    """TF's ``_get_sorted_col_indices`` (on a copy: TF's test checks the argument is kept)."""
    index = {n: i for i, n in enumerate(names)}
    out = []
    for v in select_columns:
        if isinstance(v, int | np.integer) and not isinstance(v, bool):
            if not 0 <= v < len(names):
                raise DatasetArgumentError(
                    f"make_csv_dataset: Column index {v} specified in select_columns out of valid "
                    f"range (the files have {len(names)} columns)."
                )
            out.append(int(v))
        elif v in index:
            out.append(index[v])
        else:
            raise DatasetArgumentError(
                f"make_csv_dataset: Value {v!r} specified in select_columns not a valid column "
                f"index or name; the columns are {names}."
            )
    result = sorted(set(out))
    if len(result) != len(out):
        raise DatasetArgumentError(
            f"make_csv_dataset: select_columns contains duplicate columns: {list(select_columns)}."
        )
    return result


def make_csv_dataset(
    file_pattern: Any,
    batch_size: int,
    column_names: Sequence[str] | None = None,
    column_defaults: Sequence[Any] | None = None,
    label_name: str | None = None,
    select_columns: Sequence[Any] | None = None,
    field_delim: str = ",",
    use_quote_delim: bool = True,
    na_value: str = "",
    header: bool = True,
    num_epochs: int | None = None,
    shuffle: bool = True,
    shuffle_buffer_size: int = 10000,
    shuffle_seed: int | None = None,
    prefetch_buffer_size: int | None = None,
    num_parallel_reads: int | None = None,
    sloppy: bool = False,
    num_rows_for_inference: int | None = 100,
    compression_type: str | None = None,
    ignore_errors: bool = False,
    encoding: str = "utf-8",
) -> Any:
    """Reads CSV files into batches of ``(features, label)`` (``tf.data.experimental.make_csv_dataset``).

    The pipeline is TF 2.21's: the files matching ``file_pattern`` (sorted; shuffled when
    ``shuffle``), one ``CsvDataset`` per file interleaved ``num_parallel_reads`` at a time,
    ``shuffle(shuffle_buffer_size, shuffle_seed)`` and ``repeat(num_epochs)``,
    ``batch(batch_size, drop_remainder=num_epochs is None)``, a map to the features and
    ``prefetch``. Column names come from the first file's header (every file's must agree)
    unless given; column types, unless given, are inferred from the first
    ``num_rows_for_inference`` rows: the least permissive of int32, int64, float32, float64
    and string holding every value, each column optional (default 0 or ``""``).

    Args:
        file_pattern: a glob, or a list of globs or file names (local or URLs).
        batch_size: rows per batch.
        column_names: the names of the files' columns, in order (the header's when None).
        column_defaults: one entry per selected column, as ``CsvDataset``'s
            ``record_defaults`` (a dtype: required); inferred when None.
        label_name: the column returned apart as the label; no label when None.
        select_columns: the columns to read, by index or name; all when None.
        field_delim: the one-character delimiter of fields.
        use_quote_delim: False treats double quotes as ordinary characters.
        na_value: a field equal to this is missing too.
        header: the files' first row holds the column names (skipped as data).
        num_epochs: passes over the files; None repeats forever (and drops the last
            partial batch, as TF).
        shuffle: shuffle the files and the rows.
        shuffle_buffer_size: the row shuffle's buffer.
        shuffle_seed: the seed of both shuffles.
        prefetch_buffer_size: batches to prefetch (``AUTOTUNE`` when None; 0: none).
        num_parallel_reads: files read at a time, a row from each in turn (1 when None;
            ``AUTOTUNE`` as TF: an interleave with that many threads).
        sloppy: let rows of different files come in any order (threads' order).
        num_rows_for_inference: rows read to infer the column types; every row when None.
        compression_type: ``None`` or ``""``, ``"ZLIB"`` or ``"GZIP"``.
        ignore_errors: drop the records that do not parse instead of raising.
        encoding: the text encoding of the header and of the rows read for inference.

    Returns:
        A ``Dataset`` of ``(features, label)``: ``features`` a dict of column name to a
        ``(batch,)`` array, in column order (TF: an ``OrderedDict``), ``label`` a ``(batch,)``
        array; only ``features`` without ``label_name``.

    Raises:
        DatasetArgumentError: no file matches; no ``column_names`` and ``header=False``;
            duplicate column names; a ``select_columns`` entry out of range, unknown or
            repeated; ``column_defaults`` and ``select_columns`` of different lengths; a
            ``label_name`` not among the columns (TF's messages, with what was received).

    Examples:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "a.csv")
        >>> _ = open(path, "w").write("x,y,label\\n1,0.5,a\\n2,1.5,b\\n3,2.5,c\\n")
        >>> ds = make_csv_dataset(path, 2, label_name="label", num_epochs=1, shuffle=False)
        >>> features, label = next(iter(ds))
        >>> sorted(features), features["x"], label
        (['x', 'y'], array([1, 2], dtype=int32), array([b'a', b'b'], dtype=object))
    """
    reads = 1 if num_parallel_reads is None else num_parallel_reads
    prefetch = AUTOTUNE if prefetch_buffer_size is None else prefetch_buffer_size
    fmt = csv_format(field_delim, use_quote_delim, na_value, "make_csv_dataset")
    compression = normalize_compression_type(compression_type)
    codecs.lookup(encoding)  # an unknown encoding fails here, by name
    probe = _Probe(_file_names(file_pattern), fmt, compression, encoding, header)
    names = _names(probe, column_names)
    select = None if select_columns is None else _sorted_columns(select_columns, names)
    names, cols = _columns(probe, names, column_defaults, select, num_rows_for_inference)
    if label_name is not None and label_name not in names:
        raise DatasetArgumentError(
            f"make_csv_dataset: `label_name` provided must be one of the columns: {names}. "
            f"Received: {label_name!r}."
        )
    # The columns as CsvDataset's record_defaults: a dtype where required, else the default.
    defaults = [c.name if c.default is None else np.array([c.default], c.dtype) for c in cols]

    def one_file(filename: Any) -> Any:
        ds = CsvDataset(
            filename,
            defaults,
            compression,
            header=header,
            field_delim=field_delim,
            use_quote_delim=use_quote_delim,
            na_value=na_value,
            select_cols=select,
        )
        return ds.ignore_errors() if ignore_errors else ds

    def to_features(*values: Any) -> Any:
        features = dict(zip(names, values, strict=True))
        if label_name is None:
            return features
        label = features.pop(label_name)
        return features, label

    dataset = _interleaved(probe.files, one_file, reads, sloppy, shuffle, shuffle_seed)
    if shuffle:
        dataset = dataset.shuffle(shuffle_buffer_size, shuffle_seed)
    if num_epochs != 1:
        dataset = dataset.repeat(num_epochs)
    dataset = dataset.batch(batch_size, drop_remainder=num_epochs is None)
    dataset = dataset.map(to_features)
    return dataset if prefetch == 0 else dataset.prefetch(prefetch)


class _Probe(NamedTuple):
    """What reading the files' header and first rows (names and types) takes."""

    files: list[str]
    fmt: Any
    compression: str
    encoding: str
    header: bool


def _names(probe: _Probe, column_names: Sequence[str] | None) -> list[str]:
    """The given column names, or the header's (TF's checks: one of them, no duplicates)."""
    if column_names is None:
        if not probe.header:
            raise DatasetArgumentError(
                "make_csv_dataset: Expected `column_names` or `header` arguments. Neither is "
                "provided. Pass column_names=[...] for files without a header row."
            )
        column_names = _column_names(probe.files, probe.fmt, probe.compression, probe.encoding)
    names = list(column_names)
    if len(names) != len(set(names)):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise DatasetArgumentError(
            "make_csv_dataset: Either `column_names` argument or CSV header row contains "
            f"duplicate column names: {dup}."
        )
    return names


def _columns(
    probe: _Probe, names: list[str], defaults: Any, select: list[int] | None, rows: int | None
) -> tuple[list[str], list[Column]]:
    """The selected columns' names and types (given, or inferred from the first ``rows``)."""
    if defaults is None:
        defaults = _column_defaults(
            probe.files,
            len(names),
            probe.fmt,
            probe.fmt.na_value.decode("utf-8"),
            probe.header,
            rows,
            select,
            probe.compression,
            probe.encoding,
        )
    cols = columns(list(defaults), "make_csv_dataset")
    if select is None:
        return names, cols
    if len(cols) != len(select):
        raise DatasetArgumentError(
            "make_csv_dataset: If specified, `column_defaults` and `select_columns` must have "
            f"the same length: `column_defaults` has length {len(cols)}, `select_columns` has "
            f"length {len(select)}."
        )
    return [names[i] for i in select], cols


def _interleaved(files, one_file, reads, sloppy, shuffle, seed) -> Dataset:
    """TF's file order (shuffled when ``shuffle``) and interleave of one dataset per file."""
    dataset: Dataset = ListFilesDataset(files)
    if shuffle:
        dataset = dataset.shuffle(len(files), seed)
    if reads == AUTOTUNE:
        options = Options()
        options.deterministic = not sloppy
        return dataset.interleave(one_file, num_parallel_calls=AUTOTUNE).with_options(options)
    return dataset.interleave(
        one_file,
        cycle_length=reads,
        block_length=1,
        num_parallel_calls=reads if reads > 1 else None,
        deterministic=not sloppy,
    )
