"""TIME(p) and VARIANT with pypaimon 2.1, both ways (Java Paimon 0.9 has no VARIANT type).
pypaimon reads TIME as ``time32('ms')`` and VARIANT as ``struct<value: binary NOT NULL,
metadata: binary NOT NULL>`` (the two binaries Paimon's Parquet writer stores), as lakeops
does: a table pypaimon creates and writes reads exactly in lakeops, which writes more rows and
compacts for pypaimon to read back exactly; a table lakeops creates reads in pypaimon. The
variant values are real variant encodings (spec: a one-byte header per value, the metadata's
version byte and empty dictionary), though neither side interprets them."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest

from lakeops import Catalog
from tests.interop.oracle import oracle_create, oracle_read, oracle_write

pytestmark = pytest.mark.interop

VARIANT = pa.struct(
    [pa.field("value", pa.binary(), False), pa.field("metadata", pa.binary(), False)]
)
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), False),
        ("t", pa.time32("ms")),
        ("v", VARIANT),
    ]
)
EMPTY_METADATA = bytes([0x01, 0x00, 0x00])  # version 1, no dictionary entries


def _variant(i: int) -> dict[str, bytes] | None:
    """A variant per row: null column, int8 ``i`` or the short string ``s<i>``."""
    if i % 4 == 0:
        return None
    if i % 2:
        return {"value": bytes([0x0C, i % 128]), "metadata": EMPTY_METADATA}  # int8
    text = f"s{i}".encode()
    return {"value": bytes([(len(text) << 2) | 1]) + text, "metadata": EMPTY_METADATA}


def _rows(ids: range, shift: int) -> pa.Table:
    rows = [
        {
            "id": i,
            "t": None
            if i % 5 == 0
            else (
                dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=i * 3_600_123 + shift)
            ).time(),
            "v": _variant(i + shift),
        }
        for i in ids
    ]
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def _by_id(table: pa.Table) -> list[dict]:
    return sorted(table.to_pylist(), key=lambda r: r["id"])


def test_pypaimon_time_variant_table_read_written_compacted_read_back(warehouse: Path) -> None:
    oracle_create(warehouse, "db.pv", SCHEMA, ["id"], options={"bucket": "1"})
    first = _rows(range(1, 9), 0)
    oracle_write(warehouse, "db.pv", first)
    table = Catalog(str(warehouse)).get_table("db.pv")
    assert table.schema.field("t").type.to_paimon() == "TIME(3)"
    assert table.schema.field("v").type.to_paimon() == "VARIANT"
    assert _by_id(table.read()) == _by_id(first)
    second = _rows(range(5, 12), 7)
    table.write(second)
    table.compact(full=True)
    model = {r["id"]: r for r in first.to_pylist()} | {r["id"]: r for r in second.to_pylist()}
    back = oracle_read(warehouse, "db.pv")
    assert back.schema.field("t").type == pa.time32("ms")
    assert back.schema.field("v").type == VARIANT
    assert _by_id(back) == sorted(model.values(), key=lambda r: r["id"])


def test_lakeops_time_variant_table_reads_in_pypaimon(catalog: Catalog, warehouse: Path) -> None:
    table = catalog.create_table(
        "db.lv", schema=SCHEMA, primary_keys=["id"], options={"bucket": "2"}
    )
    data = _rows(range(1, 13), 3)
    table.write(data)
    assert table.schema.field("t").type.to_paimon() == "TIME(3)"
    assert _by_id(oracle_read(warehouse, "db.lv")) == _by_id(data)


def test_time_partition_directories_are_named_as_pypaimon_names_them(warehouse: Path) -> None:
    """``partition.legacy-name`` false: pypaimon names TIME(3) partitions by Paimon's
    ``CAST(TIME AS STRING)``; lakeops' writes into the same partitions land in pypaimon's
    directories (no directory of another spelling appears) and pypaimon reads every row."""
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), False),
            pa.field("p", pa.time32("ms"), False),
            ("x", pa.int64()),
        ]
    )
    times = [dt.time(0, 0), dt.time(1, 2, 3), dt.time(1, 2, 3, 500000), dt.time(23, 59, 59, 4000)]
    oracle_create(
        warehouse,
        "db.tp",
        schema,
        ["id", "p"],
        ["p"],
        options={"bucket": "1", "partition.legacy-name": "false"},
    )
    theirs = pa.table(
        {"id": [1, 2, 3, 4], "p": pa.array(times, pa.time32("ms")), "x": [1, 2, 3, 4]},
        schema=schema,
    )
    oracle_write(warehouse, "db.tp", theirs)
    root = warehouse / "db.db" / "tp"
    before = sorted(d.name for d in root.glob("p=*"))
    assert len(before) == 4
    mine = pa.table(
        {"id": [11, 12, 13, 14], "p": pa.array(times, pa.time32("ms")), "x": [5, 6, 7, 8]},
        schema=schema,
    )
    Catalog(str(warehouse)).get_table("db.tp").write(mine)
    assert sorted(d.name for d in root.glob("p=*")) == before
    assert _by_id(oracle_read(warehouse, "db.tp")) == _by_id(pa.concat_tables([theirs, mine]))
