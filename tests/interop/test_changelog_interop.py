"""The changelog of an input-producer table, read by pypaimon and by lakeops, both ways."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lakeops import Catalog
from tests.interop.oracle import oracle_changes, oracle_create, oracle_write

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("op", pa.string())])
OPTIONS = {"bucket": "2", "changelog-producer": "input", "rowkind.field": "op"}
COMMITS = [
    [(1, "a", "+I"), (2, "b", "+I"), (3, "c", "+I")],
    [(1, "a2", "+U"), (2, "b", "-D"), (4, "d", "+I")],
    [(3, "c2", "+U"), (4, "d", "-D"), (5, "e", "+I")],
]


def _batch(rows: list[tuple]) -> pa.Table:
    return pa.Table.from_pylist(
        [dict(zip(SCHEMA.names, r, strict=True)) for r in rows], schema=SCHEMA
    )


def _set(t: pa.Table) -> list[tuple]:
    return sorted((r["_row_kind"], r["id"], r["v"]) for r in t.to_pylist())


def test_pypaimon_reads_lakeops_changelog(warehouse) -> None:
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    table = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options=OPTIONS)
    for rows in COMMITS:
        table.write(_batch(rows))
    for sid in range(1, len(COMMITS) + 1):  # snapshot by snapshot: same records and kinds
        ours = table.read_changes(sid - 1, sid)
        assert _set(oracle_changes(warehouse, "db.t", sid - 1, sid)) == _set(ours)
        assert _set(ours) == sorted((k, i, v) for i, v, k in COMMITS[sid - 1])


def test_lakeops_reads_pypaimon_changelog(warehouse) -> None:
    oracle_create(warehouse, "db.t", SCHEMA, primary_keys=["id"], options=OPTIONS)
    for rows in COMMITS:
        oracle_write(warehouse, "db.t", _batch(rows))
    table = Catalog(str(warehouse)).get_table("db.t")
    for sid in range(1, len(COMMITS) + 1):
        assert _set(table.read_changes(sid - 1, sid)) == _set(
            oracle_changes(warehouse, "db.t", sid - 1, sid)
        )
    table.write(_batch([(5, "e2", "+U")]))  # lakeops appends its own changelog
    assert _set(oracle_changes(warehouse, "db.t", 3, 4)) == [("+U", 5, "e2")]


def test_pypaimon_reads_after_expiry(warehouse) -> None:
    from tests.interop.oracle import oracle_read

    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    table = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options=OPTIONS)
    for rows in COMMITS * 3:
        table.write(_batch(rows))
    result = table.expire_snapshots(retain_min=2, time_retained="0 ms")
    assert result.expired_snapshots
    ours = sorted(table.read().to_pylist(), key=lambda r: r["id"])
    assert sorted(oracle_read(warehouse, "db.t").to_pylist(), key=lambda r: r["id"]) == ours
    latest = table.latest_snapshot().id
    assert _set(oracle_changes(warehouse, "db.t", latest - 1, latest)) == _set(
        table.read_changes(latest - 1, latest)
    )


@pytest.mark.parametrize(
    "options",
    [
        {"file.format": "orc", "file.compression": "snappy"},
        {"file.format": "avro"},
        {"file.format": "parquet", "changelog-file.format": "avro", "avro.codec": "deflate"},
    ],
    ids=["orc", "avro", "avro-changelog-only"],
)
def test_pypaimon_reads_lakeops_orc_and_avro_changelog(warehouse, options) -> None:
    """Changelog files take the level's format (ORC, Avro here) or their own, as Paimon
    writes them."""
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    options = {**OPTIONS, **options}
    table = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options=options)
    for rows in COMMITS:
        table.write(_batch(rows))
    changelog = list(warehouse.rglob("bucket-*/changelog-*"))
    fmt = options.get("changelog-file.format", options["file.format"])
    assert changelog and all(p.suffix == f".{fmt}" for p in changelog)
    for sid in range(1, len(COMMITS) + 1):
        ours = table.read_changes(sid - 1, sid)
        assert _set(oracle_changes(warehouse, "db.t", sid - 1, sid)) == _set(ours)
        assert _set(ours) == sorted((k, i, v) for i, v, k in COMMITS[sid - 1])
