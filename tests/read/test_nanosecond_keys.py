"""Keys and partitions of TIMESTAMP(9) whose values differ below the microsecond: filtered
reads, lookups and compactions give exactly the rows a plain model over the written rows
gives (their statistics and partition values, once cut to the microsecond, pruned every
file holding a sought key)."""

from __future__ import annotations

import datetime as dt
import struct
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakeops import Catalog
from lakeops.format import binary_row
from lakeops.format.types import DataType
from tests.without_pandas import run_without_pandas

BASE = 1_700_000_000_000_000_000
NS = pa.timestamp("ns")


def _stamps(offsets: list[int]) -> pa.Array:
    return pa.array([BASE + o for o in offsets], NS)


def _upsert_model(batches: list[pa.Table], keys: list[str]) -> pa.Table:
    """The last row of each key over ``batches`` in order (the deduplicate engine)."""
    rows: dict[tuple[object, ...], dict[str, object]] = {}
    for batch in batches:
        for row in batch.to_pylist():
            rows[tuple(row[k] for k in keys)] = row
    return pa.Table.from_pylist(list(rows.values()), schema=batches[0].schema)


def _sorted(table: pa.Table) -> list[dict[str, object]]:
    return table.sort_by([(n, "ascending") for n in table.column_names]).to_pylist()


@pytest.mark.parametrize("options", [{}, {"deletion-vectors.enabled": "true"}])
def test_filters_lookups_and_compaction_on_nanosecond_keys(
    tmp_path: Path, options: dict[str, str]
) -> None:
    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    schema = pa.schema([pa.field("k", NS, False), pa.field("p", NS, False), ("v", pa.int64())])
    table = catalog.create_table(
        "db.t",
        schema=schema,
        primary_keys=["p", "k"],
        partition_keys=["p"],
        options={"bucket": "2", **options},
    )
    batches = [
        pa.table({"k": _stamps([1, 2, 3, 5]), "p": _stamps([7, 7, 8, 8]), "v": [1, 2, 3, 5]}),
        pa.table({"k": _stamps([2, 4, 5]), "p": _stamps([7, 7, 8]), "v": [20, 40, 50]}),
    ]
    for batch in batches:
        table.write(batch.cast(schema))
    model = _upsert_model([b.cast(schema) for b in batches], ["p", "k"])
    filters = [
        pc.field("k") == pa.scalar(BASE + 3, NS),
        pc.field("k") >= pa.scalar(BASE + 5, NS),
        pc.field("k") < pa.scalar(BASE + 2, NS),
        pc.field("p") == pa.scalar(BASE + 8, NS),
        (pc.field("p") == pa.scalar(BASE + 7, NS)) & (pc.field("k") > pa.scalar(BASE + 1, NS)),
    ]
    for round_ in ("written", "compacted"):
        assert _sorted(table.read()) == _sorted(model), round_
        for f in filters:
            assert _sorted(table.read(filter=f)) == _sorted(model.filter(f)), (round_, f)
        sought = pa.table({"p": _stamps([7, 8, 8]), "k": _stamps([2, 3, 4])})
        got = table.lookup(sought)
        want = model.join(sought, keys=["p", "k"], join_type="left semi")
        assert _sorted(got.select(model.column_names)) == _sorted(want), round_
        table.compact(full=True)


def test_nanoseconds_deserialize_exactly() -> None:
    # a value 7 ns past the microsecond comes back with its nanoseconds; round-trips exactly
    for text in ("TIMESTAMP(9)", "TIMESTAMP(9) WITH LOCAL TIME ZONE"):
        t = DataType.parse(text)
        for offset in (7, 1_000, 999_999_999, -3):
            arrow = pa.array([BASE + offset], t.to_arrow())
            data = binary_row.serialize([arrow[0].as_py()], [t])
            (value,) = binary_row.deserialize(data, [t])
            assert value == arrow[0].as_py(), (text, offset)
            assert binary_row.serialize([value], [t]) == data


def _row(millis: int, nanos: int) -> bytes:
    """A serialized one-field BinaryRow of a non-compact TIMESTAMP: the arity, the null bits,
    the slot (the variable part's offset and the nano-of-millisecond) and the epoch millis."""
    return (
        struct.pack(">i", 1)
        + bytes(8)
        + struct.pack("<Q", (16 << 32) | nanos)
        + struct.pack("<q", millis)
    )


#: 9999-12-31 23:59:59.999999999, a sentinel Java Paimon writes, beyond nanosecond timestamps
SENTINEL = (253_402_300_799_999, 999_999)


def test_a_value_beyond_nanosecond_timestamps_stays_a_datetime() -> None:
    # every value pyarrow gives lies within 1677-2262, and compares with the sentinel as with
    # its microseconds
    t = DataType.parse("TIMESTAMP(9)")
    assert _row(BASE // 1_000_000, 7) == binary_row.serialize(
        [pa.scalar(BASE + 7, NS).as_py()], [t]
    )
    (value,) = binary_row.deserialize(_row(*SENTINEL), [t])
    assert value == dt.datetime(9999, 12, 31, 23, 59, 59, 999999)
    assert value > pa.scalar(2**63 - 1, NS).as_py()
    # minutes before the first nanosecond timestamp (1677-09-21 00:12:43.145224192)
    early = dt.datetime(1677, 9, 21, 0, 5) - dt.datetime(1970, 1, 1)
    millis = early.days * 86_400_000 + early.seconds * 1000
    (value,) = binary_row.deserialize(_row(millis, 1), [t])
    assert value == dt.datetime(1677, 9, 21, 0, 5)
    assert value < pa.scalar(-(2**63) + 1, NS).as_py()


def test_nanoseconds_without_pandas_are_refused() -> None:
    script = f"""
from lakeops.errors import UnsupportedFeatureError
from lakeops.format import binary_row
from lakeops.format.types import DataType
t = DataType.parse("TIMESTAMP(9)")
micro = binary_row.serialize_rows([binary_row.pa.array([{BASE + 1000}], "timestamp[ns]")], [t])
print(binary_row.deserialize(micro[0], [t])[0].isoformat())
print(binary_row.deserialize(SENTINEL_ROW, [t])[0].isoformat())
nano = binary_row.serialize_rows([binary_row.pa.array([{BASE + 7}], "timestamp[ns]")], [t])
try:
    binary_row.deserialize(nano[0], [t])
except UnsupportedFeatureError as exc:
    print("refused:", exc)
"""
    lines = run_without_pandas(script.replace("SENTINEL_ROW", repr(_row(*SENTINEL))))
    assert lines[0] == "2023-11-14T22:13:20.000001"
    assert lines[1] == "9999-12-31T23:59:59.999999"
    assert lines[2].startswith("refused:") and "pip install 'lakeops[pandas]'" in lines[2]
