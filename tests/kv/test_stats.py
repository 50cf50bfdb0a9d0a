"""Column statistics (lakeops.kv.stats) against Paimon 0.9's rules, spelled out as plain models
(the equality with Java's statistics is tests/interop/test_append_stats_interop.py)."""

from __future__ import annotations

import datetime as dt
import math
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.errors import ConfigurationError
from lakeops.format import binary_row
from lakeops.format.types import DataType
from lakeops.kv.stats import StatsCollector, StatsMode, stats_modes

STRING = DataType.parse("STRING")


def _collect(values: list[Any], mode: str, fmt: str | None = "parquet", t: DataType = STRING):
    collector = StatsCollector([t], [StatsMode.parse(mode, "m")], fmt, ["c"])
    for start in range(0, len(values), 3):  # several chunks, as a file is written
        collector.update([pa.array(values[start : start + 3], type=t.to_arrow())])
    stats = collector.result()
    lo = binary_row.deserialize(stats.min_values, [t])[0]
    hi = binary_row.deserialize(stats.max_values, [t])[0]
    return lo, hi, stats.null_counts[0]


@pytest.mark.parametrize(
    ("values", "mode", "expected"),
    [
        # Java's TruncateSimpleColStatsCollector: min cut, max cut and its last code point + 1
        (["abcdefghijklmnopqrstuvwxyz", "b"], "truncate(16)", ("abcdefghijklmnop", "b", 0)),
        (["a", "zzzzzzzzzzzzzzzzzzzz", None], "truncate(16)", ("a", "zzzzzzzzzzzzzzz{", 1)),
        (["é😀é😀", None, None], "truncate(3)", ("é😀é", "é😀ê", 2)),
        # the last code points cannot be incremented: the one before is
        (["a\U0010ffff\U0010ffffb"], "truncate(3)", ("a\U0010ffff\U0010ffff", "b", 0)),
        # no code point can be incremented: neither bound is kept
        (["\U0010ffff" * 5, "a"], "truncate(2)", (None, None, 0)),
        (["abcdefghijklmnopqrstuvwxyz", None], "full", ("abcdefghijklmnopqrstuvwxyz",) * 2 + (1,)),
        (["x", None], "counts", (None, None, 1)),
        (["x", None], "none", (None, None, None)),
        ([None, None], "truncate(16)", (None, None, 2)),
    ],
)
def test_string_bounds_follow_paimon(values: list[Any], mode: str, expected: tuple) -> None:
    for fmt in ("avro", "orc"):  # computed bounds (Parquet's come from its footer)
        assert _collect(values, mode, fmt) == expected


def test_truncated_bounds_hold_every_value() -> None:
    """Random strings (every plane): the truncated min and rounded-up max bound them all."""
    rng = random.Random(7)
    alphabet = ["a", "z", "é", "\ud7ff", "\ue000", "😀", "\U0010ffff"]
    for _ in range(200):
        values = ["".join(rng.choices(alphabet, k=rng.randint(0, 6))) for _ in range(5)]
        lo, hi, _ = _collect(values, "truncate(2)", "avro")
        if hi is None:
            assert lo is None
            continue
        encoded = [v.encode() for v in values]  # Java compares UTF-8 bytes
        assert lo.encode() <= min(encoded) and hi.encode() >= max(encoded), values


def test_floats_per_format() -> None:
    double = DataType.parse("DOUBLE")
    values = [0.0, 1.5, -0.0, None]
    # Parquet/ORC: a zero min is -0.0 and a zero max +0.0 (parquet-mr's reading of its stats)
    lo, hi, nulls = _collect([0.0, -0.0], "truncate(16)", "parquet", double)
    assert (math.copysign(1, lo), math.copysign(1, hi), nulls) == (-1, 1, 0)
    assert _collect(values, "full", "orc", double)[:2] == (-0.0, 1.5)
    # NaN: no bounds in Parquet; Java's total order (NaN the greatest) for Avro and keys
    assert _collect([1.0, math.nan], "full", "parquet", double) == (None, None, 0)
    lo, hi, _ = _collect([1.0, math.nan, -0.0, 0.0], "full", "avro", double)
    assert lo == 0.0 and math.copysign(1, lo) == -1 and math.isnan(hi)
    lo, hi, _ = _collect([math.nan, 0.0, -0.0], "full", None, double)
    assert math.copysign(1, lo) == -1 and math.isnan(hi)


def test_stats_modes_per_field_and_refused_modes(catalog: Catalog, warehouse: Path) -> None:
    options = {"metadata.stats-mode": "counts", "fields.b.stats-mode": "Truncate(4)"}
    assert stats_modes(options, ["a", "b"]) == [StatsMode("counts"), StatsMode("truncate", 4)]
    assert stats_modes({}, ["a"]) == [StatsMode("truncate", 16)]
    schema = pa.schema([("a", pa.int64())])
    for bad in ("truncate(0)", "min-max"):
        table = catalog.create_table(
            f"db.t{len(bad)}", schema=schema, options={"fields.a.stats-mode": bad}
        )
        with pytest.raises(ConfigurationError, match=r"fields\.a\.stats-mode"):
            table.write(pa.table({"a": [1]}, schema=schema))
        assert table.latest_snapshot() is None
        assert not list((warehouse / "db.db" / f"t{len(bad)}").glob("bucket-*/*"))


def test_parquet_string_bounds_come_from_the_footer(catalog: Catalog) -> None:
    """What the Parquet writer keeps (values up to 4 KiB) bounds; a longer value leaves the
    file without string bounds, as parquet-mr; nested columns get no statistics at all."""
    schema = pa.schema([("s", pa.string()), ("arr", pa.list_(pa.int32()))])
    table = catalog.create_table("db.f", schema=schema, options={"metadata.stats-mode": "full"})
    table.write(pa.table({"s": ["m", None, "b" * 100], "arr": [[1], None, []]}, schema=schema))
    table.write(pa.table({"s": ["a" * 5000, "q"], "arr": [None, None]}, schema=schema))
    types = [DataType.parse("STRING"), table.schema.field("arr").type]
    files = sorted(
        (f for s in table.splits() for f in s.files), key=lambda f: f.min_sequence_number
    )
    got = [
        (
            binary_row.deserialize(f.value_stats.min_values, types),
            binary_row.deserialize(f.value_stats.max_values, types),
            f.value_stats.null_counts,
            f.value_stats_cols,
        )
        for f in files
    ]
    assert got == [
        (("b" * 100, None), ("m", None), (1, None), None),
        ((None, None), (None, None), (0, None), None),
    ]


TIME_VALUES = [dt.time(1, 2, 3, 4000), None, dt.time(0, 0, 0, 1000), dt.time(23, 59, 59, 999000)]


def test_time_bounds_are_the_least_and_greatest_milliseconds() -> None:
    """Paimon's TIME statistics: min/max of the int millisecond of the day, nulls counted."""
    t = DataType.parse("TIME(3)")
    for fmt in ("avro", "orc"):
        assert _collect(TIME_VALUES, "full", fmt, t) == (TIME_VALUES[2], TIME_VALUES[3], 1)


def test_parquet_time_bounds_and_variant_null_counts(catalog: Catalog) -> None:
    """TIME bounds of a Parquet file (its footer's INT32 statistics) are the same; a VARIANT
    column gets no bounds, as a nested one."""
    variant = DataType.parse("VARIANT")
    schema = pa.schema([("t", pa.time32("ms")), ("v", variant.to_arrow())])
    table = catalog.create_table("db.tv", schema=schema)
    table.write(
        pa.table({"t": pa.array(TIME_VALUES, pa.time32("ms")), "v": [None] * 4}, schema=schema)
    )
    [f] = [f for s in table.splits() for f in s.files]
    types = [DataType.parse("TIME(3)"), variant]
    assert binary_row.deserialize(f.value_stats.min_values, types) == (TIME_VALUES[2], None)
    assert binary_row.deserialize(f.value_stats.max_values, types) == (TIME_VALUES[3], None)
    assert f.value_stats.null_counts[0] == 1
