"""The metadata tables against plain models of what the test wrote: commits, partitions,
row counts, row kinds, schema changes, tags; and the refusals."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from lakeops import Catalog, Table
from lakeops.errors import ConfigurationError, TableNotFoundError
from lakeops.format import schema_change as sc
from lakeops.format.types import DataType
from lakeops.table.system_tables import SYSTEM_TABLES, system_table_schema

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), False),
        pa.field("dt", pa.string(), False),
        ("v", pa.string()),
        ("op", pa.string()),
    ]
)
B1 = {"id": [1, 2, 3, 4], "dt": ["a", "a", "b", "b"], "v": ["p", "q", "r", "s"]}
B2 = {"id": [2, 3, 5], "dt": ["a", "b", "c"], "v": ["Q", None, "t"], "op": ["+U", "-D", "+I"]}


def _batch(cols: dict[str, list[object]]) -> pa.Table:
    ops = cols.get("op", ["+I"] * len(cols["id"]))
    return pa.table({**cols, "op": ops}, schema=SCHEMA)


@pytest.fixture
def table(catalog: Catalog) -> Table:
    t = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["id", "dt"],
        partition_keys=["dt"],
        options={"bucket": "1", "rowkind.field": "op"},
    )
    t.write(_batch(B1))
    t.write(_batch(B2))
    return t


def test_every_table_of_an_empty_table_is_empty_with_its_schema(catalog: Catalog) -> None:
    t = catalog.create_table("db.e", schema=SCHEMA, primary_keys=["id", "dt"])
    for name in SYSTEM_TABLES:
        got = t.metadata_table(name)
        assert got.num_rows == (1 if name == "schemas" else 0), name  # schema 0 only
        assert got.schema == system_table_schema(name, t.schema), name


def test_snapshots_partitions_files_and_audit_log_of_each_snapshot(table: Table) -> None:
    snaps = table.metadata_table("snapshots").to_pylist()
    assert [(s["snapshot_id"], s["commit_kind"], s["delta_record_count"]) for s in snaps] == [
        (1, "APPEND", 4),
        (2, "APPEND", 3),
    ]
    # files and partitions of snapshot 1 hold batch 1 only; of the latest both batches' records
    files1 = table.metadata_table("files", snapshot_id=1)
    assert sum(files1.column("record_count").to_pylist()) == 4
    parts = {
        p["partition"]: p["record_count"] for p in table.metadata_table("partitions").to_pylist()
    }
    assert parts == {"[a]": 2 + 1, "[b]": 2 + 1, "[c]": 1}
    assert table.metadata_table("partitions", snapshot_id=1).column("partition").to_pylist() == [
        "[a]",
        "[b]",
    ]
    assert table.metadata_table("buckets").column("bucket").to_pylist() == [0, 0, 0]
    # audit_log: the merged rows with their kind, the deleted key kept until a full compaction
    audit = sorted(
        (r["rowkind"], r["id"], r["dt"], r["v"])
        for r in table.metadata_table("audit_log").to_pylist()
    )
    assert audit == [
        ("+I", 1, "a", "p"),
        ("+I", 4, "b", "s"),
        ("+I", 5, "c", "t"),
        ("+U", 2, "a", "Q"),
        ("-D", 3, "b", None),
    ]
    assert (
        table.metadata_table("audit_log", snapshot_id=1).column("rowkind").to_pylist() == ["+I"] * 4
    )
    table.compact(full=True)
    assert sorted(table.metadata_table("audit_log").column("id").to_pylist()) == [1, 2, 4, 5]
    assert table.metadata_table("snapshots").column("commit_kind").to_pylist()[-1] == "COMPACT"
    manifests = table.metadata_table("manifests")
    assert (
        sum(manifests.column("num_added_files").to_pylist())
        - sum(manifests.column("num_deleted_files").to_pylist())
        == table.metadata_table("files").num_rows
    )


def test_schemas_options_and_tags(table: Table) -> None:
    table.alter(
        [
            sc.AddColumn("note", DataType.parse("STRING")),
            sc.SetOption("snapshot.num-retained.max", "50"),
        ]
    )
    schemas = table.metadata_table("schemas").to_pylist()
    assert [s["schema_id"] for s in schemas] == [0, 1]
    assert [[f["name"] for f in json.loads(s["fields"])] for s in schemas] == [
        ["id", "dt", "v", "op"],
        ["id", "dt", "v", "op", "note"],
    ]
    assert json.loads(schemas[1]["primary_keys"]) == ["id", "dt"]
    assert json.loads(schemas[1]["partition_keys"]) == ["dt"]
    options = dict(zip(*table.metadata_table("options").to_pydict().values(), strict=True))
    assert options == {"bucket": "1", "rowkind.field": "op", "snapshot.num-retained.max": "50"}
    table.create_tag("one", 1)
    table.create_tag("week", 2, time_retained="7 d")
    tags = table.metadata_table("tags").to_pylist()
    assert [
        (t["tag_name"], t["snapshot_id"], t["record_count"], t["time_retained"]) for t in tags
    ] == [
        ("one", 1, 4, None),
        ("week", 2, 7, "PT168H"),
    ]
    assert tags[0]["create_time"] is None and tags[1]["create_time"] is not None


def test_refusals_name_what_is_wrong(catalog: Catalog, table: Table) -> None:
    with pytest.raises(
        ConfigurationError,
        match=(
            "unknown metadata table 'snapshot'; the known ones are snapshots, schemas, "
            "options, files, manifests, partitions, buckets, tags, audit_log"
        ),
    ):
        table.metadata_table("snapshot")
    with pytest.raises(ConfigurationError, match="takes no snapshot_id"):
        table.metadata_table("tags", snapshot_id=1)
    with pytest.raises(ConfigurationError, match="names no metadata table"):
        catalog.metadata_table("db.t")
    with pytest.raises(ConfigurationError, match="unknown metadata table 'filez'"):
        catalog.metadata_table("db.t$filez")
    with pytest.raises(TableNotFoundError, match=r"'db\.nope'"):
        catalog.metadata_table("db.nope$files")
    with pytest.raises(ConfigurationError, match=r"catalog.metadata_table\('db.t\$files'\)"):
        catalog.get_table("db.t$files")
    assert catalog.metadata_table("db.t$FILES").equals(table.metadata_table("files"))


def test_an_append_tables_metadata_and_audit_log(catalog: Catalog) -> None:
    """An append table: each write is one file in bucket 0 of its partition, and its audit log
    is every row written (duplicates included), each +I, through the table and the catalog."""
    schema = pa.schema([("dt", pa.string()), ("v", pa.int64())])
    t = catalog.create_table("db.events", schema=schema, partition_keys=["dt"])
    t.write(pa.table({"dt": ["a", "a", "b"], "v": [1, 1, 2]}, schema=schema))
    t.write(pa.table({"dt": ["b"], "v": [3]}, schema=schema))
    files = t.metadata_table("files").to_pylist()
    assert sorted((f["partition"], f["bucket"], f["record_count"]) for f in files) == [
        ("[a]", 0, 2),
        ("[b]", 0, 1),
        ("[b]", 0, 1),
    ]
    for audit in (t.metadata_table("audit_log"), catalog.metadata_table("db.events$audit_log")):
        assert audit.schema == system_table_schema("audit_log", t.schema)
        assert sorted(audit.to_pylist(), key=lambda r: (r["dt"], r["v"])) == [
            {"rowkind": "+I", "dt": "a", "v": 1},
            {"rowkind": "+I", "dt": "a", "v": 1},
            {"rowkind": "+I", "dt": "b", "v": 2},
            {"rowkind": "+I", "dt": "b", "v": 3},
        ]
    first = t.metadata_table("audit_log", snapshot_id=1)
    assert sorted(first.column("v").to_pylist()) == [1, 1, 2]
