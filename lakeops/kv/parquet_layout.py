"""The Parquet physical layout Paimon 0.9's writer gives each type, as pyarrow writer settings.

Paimon (``ParquetSchemaConverter`` / ``ParquetRowDataWriter``) writes:

* DECIMAL with precision <= 9 as INT32, <= 18 as INT64, else FIXED_LEN_BYTE_ARRAY (all with the
  DECIMAL annotation); its reader only accepts INT32/INT64 or FLBA for p <= 18;
* TIMESTAMP / TIMESTAMP_LTZ with precision <= 3 as INT64 millis, <= 6 as INT64 micros and > 6 as
  INT96 (its reader refuses anything but INT96 for p > 6 and anything but INT64 for p <= 6);
* TINYINT / SMALLINT as INT32 annotated INT(8) / INT(16); CHAR / VARCHAR as UTF8 BINARY;
  BINARY / VARBINARY as plain BINARY; DATE as INT32 DATE;
* TIME as INT32 ``TIME(MILLIS, isAdjustedToUTC=true)`` (milliseconds of the day, whatever the
  precision), which pyarrow writes for ``time32('ms')``;
* ARRAY as the 3-level ``list`` / ``element`` group, MAP as ``key_value`` with a required key,
  MULTISET<T> as that map from T to a required INT32 count, ROW as a plain group;
* VARIANT as a plain group of two required binaries, ``value`` then ``metadata`` (the
  unshredded variant encoding; Paimon leaves the Parquet VARIANT annotation off), which is
  what pyarrow writes for lakeops' ``struct<value, metadata>`` column;
* dictionary encoding where it pays: parquet-mr (``parquet.enable.dictionary`` on by default)
  starts every column with a dictionary, keeps it only if the first page's dictionary plus its
  indices come out smaller than the plain values (``FallbackValuesWriter``), else writes the
  column PLAIN, and falls back to PLAIN for the rest of the column once the dictionary passes
  the dictionary page size (1 MiB). :func:`dictionary_columns` makes that first-page decision
  up front from a sample of each column's first values (pyarrow, unlike parquet-mr, would
  otherwise dictionary-encode unique keys, random floats and other high-cardinality columns
  all the way to the 1 MiB limit and then keep those dictionary pages); pyarrow's
  ``dictionary_pagesize_limit`` (1 MiB by default, parquet-mr's size) does the later fallback.
  Either way a column is PLAIN or RLE_DICTIONARY pages, which every Parquet reader reads.

pyarrow produces the same with ``store_decimal_as_integer`` (DECIMAL), its default nested layout
and its default timestamp units (seconds coerced to millis), except that INT96 can only be
switched on for a whole file. A file whose timestamps (including nested ones) mix precisions
above and at most 6 therefore cannot be written as Paimon does, and :func:`writer_options`
refuses it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Collection, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeops.errors import UnsupportedFeatureError
from lakeops.format.schema import TableSchema
from lakeops.format.types import DataType

__all__ = [
    "DICTIONARY_SAMPLE",
    "check_writable",
    "dictionary_columns",
    "dictionary_columns_of_runs",
    "writer_options",
]

_INT96_MIN_PRECISION = 7
#: values of a column (evenly spaced over a file's first batch) that decide its encoding
DICTIONARY_SAMPLE = 4_096


def _timestamps(name: str, t: DataType) -> Iterator[tuple[str, int]]:
    """(path, precision) of every TIMESTAMP / TIMESTAMP_LTZ inside ``t``."""
    if t.root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        yield name, t.precision if t.precision is not None else 6
    elif t.root == "ARRAY" and t.element is not None:
        yield from _timestamps(f"{name}[]", t.element)
    elif t.root in ("MAP", "MULTISET") and t.key is not None and t.value is not None:
        yield from _timestamps(f"{name}.key", t.key)
        yield from _timestamps(f"{name}.value", t.value)
    elif t.root == "ROW":
        for _, child, child_type in t.fields:
            yield from _timestamps(f"{name}.{child}", child_type)


def _uses_int96(schema: TableSchema, what: str) -> bool:
    """Whether the data files of ``schema`` hold INT96 timestamps; raise if they must mix."""
    found = [ts for f in schema.fields for ts in _timestamps(f.name, f.type)]
    int96 = [n for n, p in found if p >= _INT96_MIN_PRECISION]
    int64 = [n for n, p in found if p < _INT96_MIN_PRECISION]
    if int96 and int64:
        raise UnsupportedFeatureError(
            f"cannot {what}: Paimon writes TIMESTAMP columns of precision 7..9 as Parquet INT96 "
            f"({', '.join(int96)}) and those of precision 0..6 as INT64 ({', '.join(int64)}), "
            "and lakeops' Parquet writer can only use INT96 for every timestamp of a file or "
            "for none; use one side of precision 6 for all timestamp columns of the table"
        )
    return bool(int96)


def check_writable(schema: TableSchema, what: str = "write this table") -> None:
    """Raise :class:`UnsupportedFeatureError` when lakeops cannot write data files of
    ``schema`` with exactly Paimon's Parquet layout (``what`` names the refused action)."""
    _uses_int96(schema, what)


def writer_options(schema: TableSchema) -> dict[str, Any]:
    """Keyword arguments for ``pyarrow.parquet.ParquetWriter`` that give a data file of
    ``schema`` Paimon's physical types and encodings (raises as :func:`check_writable`)."""
    return {
        "store_decimal_as_integer": True,
        "use_deprecated_int96_timestamps": _uses_int96(schema, "write this table"),
        "use_compliant_nested_type": True,
    }


def _plain_width(arrow_type: pa.DataType) -> int | None:
    """Bytes one value of a fixed-width column takes PLAIN-encoded in Paimon's layout (INT32
    at least; DECIMAL by its physical type), or None for a variable-width one."""
    if pa.types.is_decimal(arrow_type):
        precision = arrow_type.precision
        return 4 if precision <= 9 else 8 if precision <= 18 else 16
    if pa.types.is_timestamp(arrow_type):
        return 8
    try:
        bits: int = arrow_type.bit_width
    except ValueError:
        return None
    return max(4, bits // 8)


def _plain_size(values: pa.Array, width: int | None) -> int:
    """Bytes the non-null ``values`` take PLAIN-encoded (a length prefix per binary value)."""
    if width is not None:
        return width * len(values)
    lengths = pc.sum(pc.binary_length(values)).as_py() or 0
    return 4 * len(values) + int(lengths)


def _dictionary_pays(sample: pa.Array) -> bool:
    """parquet-mr's test on ``sample``: its dictionary (the distinct values, PLAIN) plus the
    bit-packed indices of its values is smaller than its values PLAIN."""
    values = sample.drop_null()
    if len(values) == 0:
        return False  # no values: nothing to encode either way (parquet-mr falls back too)
    width = _plain_width(values.type)
    distinct = pc.unique(values)
    index_bits = max(1, math.ceil(math.log2(len(distinct))))
    dictionary = _plain_size(distinct, width) + len(values) * index_bits / 8
    return dictionary < _plain_size(values, width)


def dictionary_columns(first: pa.Table, plain: Collection[str] = ()) -> list[str]:
    """The columns of a new data file to dictionary-encode, decided from ``first``, the first
    batch written to it (see the module docstring): every top-level primitive column, except
    those in ``plain`` and BOOLEAN ones (which neither writer dictionary-encodes), whose
    :data:`DICTIONARY_SAMPLE` values evenly spaced over ``first`` pass parquet-mr's
    first-page test. A sample shows fewer repeats than a whole page, so a column of moderately
    repeated values that parquet-mr would keep a dictionary for may be written PLAIN: the same
    values in another standard encoding. Nested columns are written PLAIN."""
    rows = first.num_rows
    if rows <= DICTIONARY_SAMPLE:
        picks = pa.array(np.arange(rows, dtype=np.int64))
    else:  # evenly spaced, strictly increasing
        picks = pa.array(np.arange(DICTIONARY_SAMPLE, dtype=np.int64) * rows // DICTIONARY_SAMPLE)
    chosen = []
    for field, column in zip(first.schema, first.columns, strict=True):
        t = field.type
        if field.name in plain or pa.types.is_nested(t) or pa.types.is_boolean(t):
            continue
        if pa.types.is_null(t) or rows == 0:
            continue
        if _dictionary_pays(column.take(picks).combine_chunks()):
            chosen.append(field.name)
    return chosen


def _sample_rows(offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row index, run index) of every sampled row of the runs ``offsets`` delimits: for each
    run, the rows :func:`dictionary_columns` samples of a batch of that run's length (all of
    them up to :data:`DICTIONARY_SAMPLE`, else that many evenly spaced), in run order."""
    lengths = np.diff(offsets)
    taken = np.minimum(lengths, DICTIONARY_SAMPLE)
    runs = np.repeat(np.arange(len(lengths), dtype=np.int64), taken)
    within = np.arange(int(taken.sum()), dtype=np.int64) - np.repeat(
        np.cumsum(taken) - taken, taken
    )
    length = lengths[runs]
    spaced = np.where(length <= DICTIONARY_SAMPLE, within, within * length // DICTIONARY_SAMPLE)
    return offsets[:-1][runs] + spaced, runs


def _pays_per_run(sample: pa.Array, runs: np.ndarray, count: int) -> np.ndarray:
    """Per run, :func:`_dictionary_pays` of its part of ``sample`` (``runs``: the run of each
    sampled value, ascending), for every run at once: the values are dictionary-encoded once
    (the hash table ``pyarrow.compute.unique`` uses, so the same values count as distinct),
    and each run's distinct values are the distinct (run, dictionary index) pairs."""
    valid = ~sample.is_null().to_numpy(zero_copy_only=False)
    values = sample.filter(pa.array(valid)) if sample.null_count else sample
    value_runs = runs[valid]
    width = _plain_width(values.type)
    n = np.bincount(value_runs, minlength=count)
    encoded = pc.dictionary_encode(values)
    size = max(len(encoded.dictionary), 1)
    pairs = value_runs.astype(np.int64) * size + encoded.indices.to_numpy(zero_copy_only=False)
    pairs.sort()
    pairs = pairs[np.concatenate(([True], pairs[1:] != pairs[:-1]))] if len(pairs) else pairs
    distinct_runs = pairs // size
    d = np.bincount(distinct_runs, minlength=count)
    plain_values: np.ndarray
    plain_distinct: np.ndarray
    if width is not None:
        plain_values = (width * n).astype(np.float64)
        plain_distinct = (width * d).astype(np.float64)
    else:
        entry = pc.binary_length(encoded.dictionary).to_numpy(zero_copy_only=False)
        lengths = entry[encoded.indices.to_numpy(zero_copy_only=False)]
        plain_values = 4.0 * n + np.bincount(value_runs, weights=lengths, minlength=count)
        plain_distinct = 4.0 * d + np.bincount(
            distinct_runs, weights=entry[pairs % size], minlength=count
        )
    # ceil(log2(d)) for d >= 1 is the bit length of d - 1 (frexp's exponent, exactly)
    index_bits = np.maximum(1, np.frexp(np.maximum(d - 1, 0).astype(np.float64))[1])
    dictionary = plain_distinct + n * index_bits / 8
    result: np.ndarray = (n > 0) & (dictionary < plain_values)
    return result


def dictionary_columns_of_runs(
    table: pa.Table, offsets: np.ndarray, plain: Collection[str] = ()
) -> list[list[str]]:
    """:func:`dictionary_columns` of many new data files at once: run ``i`` of ``table`` (rows
    ``offsets[i]`` to ``offsets[i + 1]``, each run non-empty) is the first batch of file ``i``,
    and entry ``i`` of the result is ``dictionary_columns(<that run>, plain)`` — the same
    sample and the same test, computed for every file in one pass over each column (a column
    whose type the grouped pass does not support is decided file by file)."""
    offsets = np.asarray(offsets, dtype=np.int64)
    count = len(offsets) - 1
    if count <= 0:
        return []
    if np.any(np.diff(offsets) <= 0):
        raise ValueError("every run of a file must hold rows")
    rows, runs = _sample_rows(offsets)
    picks = pa.array(rows)
    chosen = np.zeros((table.num_columns, count), dtype=bool)
    for j, (field, column) in enumerate(zip(table.schema, table.columns, strict=True)):
        t = field.type
        if field.name in plain or pa.types.is_nested(t) or pa.types.is_boolean(t):
            continue
        if pa.types.is_null(t):
            continue
        sample = column.take(picks).combine_chunks()
        try:
            chosen[j] = _pays_per_run(sample, runs, count)
        except (pa.ArrowNotImplementedError, pa.ArrowTypeError):  # decided file by file
            bounds = np.searchsorted(runs, np.arange(count + 1))
            chosen[j] = [
                _dictionary_pays(sample.slice(int(lo), int(hi - lo)))
                for lo, hi in itertools.pairwise(bounds)
            ]
    names = table.schema.names
    return [[names[j] for j in np.flatnonzero(chosen[:, i])] for i in range(count)]
