"""Per-file metadata of many files at once (``dictionary_columns_of_runs``,
``key_stats_of_runs``), judged file by file against the per-file code (``dictionary_columns``,
``StatsCollector``) and against plain models: Python's min/max of each run, decoded from the
stats bytes, and parquet-mr's dictionary test computed with Python sets."""

from __future__ import annotations

import datetime as dt
import math
import random
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakeops.format import binary_row
from lakeops.format.types import DataType
from lakeops.kv.parquet_layout import (
    DICTIONARY_SAMPLE,
    dictionary_columns,
    dictionary_columns_of_runs,
)
from lakeops.kv.stats import (
    StatsCollector,
    StatsMode,
    collectors_of_runs,
    encode_stats,
    key_stats_of_runs,
)


def _offsets(lengths: list[int]) -> np.ndarray:
    return np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)


def _table(rows: int, seed: int) -> pa.Table:
    """Columns of every kind the dictionary test meets: repeated and unique, fixed and
    variable width, floats with NaN payloads and signed zeros, nulls, a boolean and a nested
    column (never dictionary-encoded)."""
    rng = np.random.default_rng(seed)
    odd_nan = np.array([0x7FF8000000000001], dtype=np.uint64).view(np.float64)[0]
    specials = np.array([0.0, -0.0, np.nan, odd_nan, 1.0])
    return pa.table(
        {
            "unique": pa.array(rng.permutation(rows).astype(np.int64)),
            "few": pa.array(rng.integers(0, 5, rows).astype(np.int32)),
            # about as many distinct values per 250 rows as make the test's two sides equal
            "near": pa.array(rng.integers(0, 900, rows).astype(np.int64)),
            "near_text": pa.array([f"v{i}" for i in rng.integers(0, 700, rows)]),
            "city": pa.array([f"city-{i}" for i in rng.integers(0, 40, rows)]),
            "hex": pa.array([f"{v:024x}" for v in rng.integers(0, 2**62, rows)]),
            "x": pa.array(rng.random(rows)),
            "zeros": pa.array(specials[rng.integers(0, len(specials), rows)]),
            "sparse": pa.array(
                [
                    None if v else int(w)
                    for v, w in zip(rng.random(rows) < 0.7, rng.integers(0, 3, rows), strict=True)
                ],
                type=pa.int64(),
            ),
            "nothing": pa.nulls(rows, pa.string()),
            "dec": pa.array(
                [Decimal(int(v)) / 100 for v in rng.integers(0, 9, rows)], pa.decimal128(9, 2)
            ),
            "flag": pa.array(rng.random(rows) < 0.5),
            "items": pa.array([[1, 2]] * rows, pa.list_(pa.int64())),
            "seq": pa.array(np.arange(rows, dtype=np.int64)),
        }
    )


def _model_pays(values: list[Any], width: int | None) -> bool:
    """parquet-mr's first-page test with Python sets: distinct values (told apart by their
    bits, for floats) PLAIN plus bit-packed indices, against every value PLAIN."""
    present = [v for v in values if v is not None]
    if not present:
        return False

    def key(v: Any) -> Any:
        return np.float64(v).tobytes() if isinstance(v, float) else v

    distinct = {key(v): v for v in present}.values()

    def plain(vs: Any) -> int:
        if width is not None:
            return width * len(list(vs))
        return sum(4 + len(v.encode() if isinstance(v, str) else v) for v in vs)

    bits = max(1, math.ceil(math.log2(len(distinct))))
    return plain(distinct) + len(present) * bits / 8 < plain(present)


WIDTHS = {
    "unique": 8,
    "few": 4,
    "near": 8,
    "near_text": None,
    "x": 8,
    "zeros": 8,
    "sparse": 8,
    "dec": 4,
    "city": None,
}


@pytest.mark.parametrize(
    "lengths",
    [[1], [250] * 12, [1, 2, 3, 4096, 4097, 9000, 7], [DICTIONARY_SAMPLE * 3 + 5, 30]],
)
def test_dictionary_choice_of_runs_is_each_files_choice(lengths: list[int]) -> None:
    table = _table(sum(lengths), seed=len(lengths))
    offsets = _offsets(lengths)
    got = dictionary_columns_of_runs(table, offsets, plain={"seq"})
    assert len(got) == len(lengths)
    for i, n in enumerate(lengths):
        run = table.slice(int(offsets[i]), n)
        assert got[i] == dictionary_columns(run, plain={"seq"})
        # the plain model, on the sample the choice reads
        picks = (
            range(n)
            if n <= DICTIONARY_SAMPLE
            else [j * n // DICTIONARY_SAMPLE for j in range(DICTIONARY_SAMPLE)]
        )
        for name, width in WIDTHS.items():
            values = run.column(name).to_pylist()
            sample = [values[j] for j in picks]
            if name == "dec":
                sample = [None if v is None else str(v) for v in sample]
                width = 4
            assert (name in got[i]) == _model_pays(sample, width), (i, name)
        for never in ("flag", "items", "seq", "nothing"):
            assert never not in got[i]


def test_dictionary_choice_tells_floats_apart_by_their_bits() -> None:
    """Two values that are equal as numbers but differ in bits (signed zeros, NaN payloads)
    are two dictionary entries, as pyarrow's ``unique`` counts them: for two values that
    decides the choice."""
    odd_nan = float(np.array([0x7FF8000000000001], dtype=np.uint64).view(np.float64)[0])
    runs = [[0.0, -0.0], [0.0, 0.0], [math.nan, odd_nan], [math.nan, math.nan], [1.0, None]]
    table = pa.table({"x": pa.array([v for run in runs for v in run], pa.float64())})
    got = dictionary_columns_of_runs(table, _offsets([len(r) for r in runs]))
    assert got == [[], ["x"], [], ["x"], []]
    for i, run in enumerate(runs):
        assert got[i] == dictionary_columns(table.slice(2 * i, 2))
        assert (got[i] == ["x"]) == _model_pays(run, 8)


def test_dictionary_runs_must_hold_rows() -> None:
    table = _table(10, seed=1)
    assert dictionary_columns_of_runs(table, np.array([0])) == []
    with pytest.raises(ValueError, match="hold rows"):
        dictionary_columns_of_runs(table, np.array([0, 5, 5, 10]))


KEY_TYPES = [
    ("INT NOT NULL", lambda r: r.randrange(-50, 50)),
    ("BIGINT", lambda r: None if r.random() < 0.2 else r.randrange(-(2**40), 2**40)),
    (
        "STRING",
        lambda r: (
            None if r.random() < 0.1 else r.choice(["a", "ab", "b", "zz", "é", "long string value"])
        ),
    ),
    ("DOUBLE", lambda r: r.choice([None, 0.0, -0.0, float("nan"), 1.5, -3.25, float("inf")])),
    ("FLOAT", lambda r: r.choice([None, 0.0, -0.0, 2.5, -1.0])),
    ("DATE", lambda r: dt.date(2000, 1, 1) + dt.timedelta(days=r.randrange(-400, 400))),
    ("DECIMAL(12, 3)", lambda r: Decimal(r.randrange(-(10**9), 10**9)) / 1000),
    ("DECIMAL(25, 2)", lambda r: Decimal(r.randrange(-(10**20), 10**20)) / 100),
    (
        "TIMESTAMP(6)",
        lambda r: dt.datetime(2020, 1, 1) + dt.timedelta(microseconds=r.randrange(10**12)),
    ),
    ("BYTES", lambda r: r.choice([None, b"", b"\x00", b"\xff\x01", b"abcdefghij"])),
    ("BOOLEAN", lambda r: r.choice([None, True, False])),
]


def _order(value: Any) -> Any:
    """Java's total order of a float (``-0.0 < 0.0``, NaN greatest); others as they are."""
    if isinstance(value, float):
        return (1, 0.0) if value != value else (0, value, math.copysign(1.0, value))
    return value


@pytest.mark.parametrize("lengths", [[1], [3, 1, 7, 40, 2], [250] * 9])
def test_key_stats_of_runs_are_each_files_stats(lengths: list[int]) -> None:
    rng = random.Random(sum(lengths))
    types = [DataType.parse(t) for t, _ in KEY_TYPES]
    values = [[make(rng) for _ in range(sum(lengths))] for _, make in KEY_TYPES]
    # a run of nulls only, where the type allows it
    values[1][:1] = [None]
    columns = [pa.array(v, type=t.to_arrow()) for v, t in zip(values, types, strict=True)]
    offsets = _offsets(lengths)
    got = key_stats_of_runs(columns, types, offsets)
    assert len(got) == len(lengths)
    for i, n in enumerate(lengths):
        lo, hi = int(offsets[i]), int(offsets[i]) + n
        collector = StatsCollector(types)
        collector.update([c.slice(lo, n) for c in columns])
        assert got[i] == collector.result()
        mins = binary_row.deserialize(got[i].min_values, types)
        maxs = binary_row.deserialize(got[i].max_values, types)
        for j, run in enumerate(v[lo:hi] for v in values):
            present = [v for v in run if v is not None]
            assert got[i].null_counts[j] == n - len(present)
            if not present:
                assert mins[j] is None and maxs[j] is None
                continue
            want_lo, want_hi = min(present, key=_order), max(present, key=_order)
            assert _order(mins[j]) == _order(want_lo), (i, KEY_TYPES[j][0])
            assert _order(maxs[j]) == _order(want_hi), (i, KEY_TYPES[j][0])


def test_key_stats_of_chunked_columns_and_refused_runs() -> None:
    types = [DataType.parse("BIGINT NOT NULL")]
    column = pa.chunked_array([[5, 1], [9, 2, 4]], type=pa.int64())
    got = key_stats_of_runs([column], types, np.array([0, 3, 5]))
    assert [binary_row.deserialize(s.min_values, types) for s in got] == [(1,), (2,)]
    assert [binary_row.deserialize(s.max_values, types) for s in got] == [(9,), (4,)]
    assert key_stats_of_runs([column], types, np.array([0])) == []
    with pytest.raises(ValueError, match="hold rows"):
        key_stats_of_runs([column], types, np.array([0, 0, 5]))


VALUE_FIELDS = [
    ("s", "STRING", lambda r: r.choice([None, "", "abc", "zzzz-long-string-over-16-chars", "é€"])),
    ("n", "INT", lambda r: None if r.random() < 0.2 else r.randrange(-100, 100)),
    ("d", "DOUBLE", lambda r: r.choice([None, -0.0, 0.0, 1.5, -2.5, float("nan")])),
    ("f", "FLOAT", lambda r: r.choice([None, 0.0, 3.5, -1.25])),
    ("b", "BYTES", lambda r: r.choice([None, b"", b"\x01\x02"])),
    (
        "t",
        "TIMESTAMP(6)",
        lambda r: dt.datetime(2024, 1, 1) + dt.timedelta(seconds=r.randrange(10**6)),
    ),
    ("t9", "TIMESTAMP(9)", lambda r: None),
    ("dec", "DECIMAL(20, 4)", lambda r: Decimal(r.randrange(-(10**12), 10**12)) / 10000),
    ("on", "BOOLEAN", lambda r: r.choice([None, True, False])),
    ("arr", {"type": "ARRAY", "element": "INT"}, lambda r: r.choice([None, [1, 2]])),
]


def _parquet_footer(table: pa.Table) -> Any:
    sink = pa.BufferOutputStream()
    writer = pq.ParquetWriter(sink, table.schema)
    writer.write(table)
    writer.close()
    return writer.writer.metadata


@pytest.mark.parametrize("file_format", ["parquet", "orc", "avro", None])
@pytest.mark.parametrize("mode", ["truncate(3)", "full", "counts", "none"])
def test_value_collectors_of_runs_are_each_files_collector(
    file_format: str | None, mode: str
) -> None:
    """Every run's collector, fed in one pass, gives what a collector fed that run alone
    gives: the same bounds (Parquet strings from each run's own footer) and the same bytes,
    encoded one by one or all together."""
    rng = random.Random(hash((file_format, mode)) % 1000)
    types = [DataType.parse(t) for _, t, _ in VALUE_FIELDS]
    names = [n for n, _, _ in VALUE_FIELDS]
    modes = [StatsMode.parse(mode, "test")] * len(types)
    lengths = [1, 5, 2, 30, 3, 1, 12]
    columns = [
        pa.array([make(rng) for _ in range(sum(lengths))], type=t.to_arrow())
        for (_, _, make), t in zip(VALUE_FIELDS, types, strict=True)
    ]
    offsets = _offsets(lengths)
    got = collectors_of_runs(columns, offsets, types, modes, file_format, names)
    bounds = []
    for i, n in enumerate(lengths):
        run = [c.slice(int(offsets[i]), n) for c in columns]
        footer = _parquet_footer(pa.table(run, names=names)) if file_format == "parquet" else None
        alone = StatsCollector(types, modes, file_format, names)
        alone.update(run)
        mine = got[i].bounds(footer)
        assert repr(mine) == repr(alone.bounds(footer))  # (repr: NaN equals NaN)
        assert got[i].result(footer) == alone.result(footer)
        bounds.append(mine)
        # the plain model: null counts as counted here, ints bounded by Python's min/max
        values = [c.to_pylist() for c in run]
        if mode != "none":
            assert mine.nulls[1] == sum(v is None for v in values[1])
        present = [v for v in values[1] if v is not None]
        if mode in ("full", "truncate(3)") and present:
            assert (mine.mins[1], mine.maxs[1]) == (min(present), max(present))
    assert encode_stats(bounds, types) == [encode_stats([b], types)[0] for b in bounds]
