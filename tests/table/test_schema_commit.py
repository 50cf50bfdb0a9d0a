"""Publishing schemas: concurrent ALTERs each land exactly once in consecutive schema files,
and a writer that started under an older schema refuses to commit across a change."""

from __future__ import annotations

import json
import multiprocessing as mp
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakeops import Catalog, CommitConflictError
from lakeops.format.schema_change import AddColumn, UpdateColumnComment
from lakeops.format.types import DataType

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
ALTERERS = 4
ADDS_EACH = 5


def _alterer(warehouse: str, n: int, start: Any) -> None:
    catalog = Catalog(warehouse)
    start.wait()
    for i in range(ADDS_EACH):
        catalog.alter_table("db.t", [AddColumn(f"c{n}_{i}", DataType.parse("INT"))])


def test_concurrent_alters_all_land_with_unique_ids(warehouse: Path) -> None:
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"])
    ctx = mp.get_context("spawn")
    start = ctx.Event()
    procs = [ctx.Process(target=_alterer, args=(str(warehouse), n, start)) for n in range(ALTERERS)]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    schema_dir = warehouse / "db.db" / "t" / "schema"
    total = ALTERERS * ADDS_EACH
    assert sorted(p.name for p in schema_dir.iterdir()) == sorted(
        f"schema-{i}" for i in range(total + 1)
    )
    last = json.loads((schema_dir / f"schema-{total}").read_text())
    names = [f["name"] for f in last["fields"]][2:]
    assert sorted(names) == sorted(f"c{n}_{i}" for n in range(ALTERERS) for i in range(ADDS_EACH))
    # every schema adds exactly one field to its predecessor: no change was lost or doubled
    ids = [f["id"] for f in last["fields"]]
    assert sorted(ids) == list(range(total + 2)) and last["highestFieldId"] == total + 1


def test_a_writer_does_not_commit_across_a_schema_change(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"])
    table.write(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
    writer = table.new_write()
    writer.write(pa.table({"id": [2], "v": ["b"]}, schema=SCHEMA))
    messages = writer.prepare_commit()
    catalog.alter_table("db.t", [AddColumn("extra", DataType.parse("STRING"))])
    with pytest.raises(CommitConflictError, match="changed from 0 to 1"):
        table.commit(messages)
    assert catalog.get_table("db.t").read().to_pylist() == [{"id": 1, "v": "a", "extra": None}]
    assert len(catalog.get_table("db.t").snapshots()) == 1


def test_a_comment_change_does_not_stop_a_writer(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"])
    writer = table.new_write()
    writer.write(pa.table({"id": [2], "v": ["b"]}, schema=SCHEMA))
    messages = writer.prepare_commit()
    catalog.alter_table("db.t", [UpdateColumnComment("v", "the value")])
    table.commit(messages)
    assert catalog.get_table("db.t").read().to_pylist() == [{"id": 2, "v": "b"}]


@pytest.mark.parametrize(
    "options",
    [{"bucket": "2", "bucket-key": "v"}, {"sequence.field": "v"}],
)
def test_variant_bucket_key_or_sequence_field_is_refused_before_anything_is_written(
    catalog: Catalog, warehouse: Path, options: dict[str, str]
) -> None:
    """Nothing can hash or order a VARIANT as lakeops does a BinaryRow value: refused by name."""
    from lakeops.errors import UnsupportedFeatureError

    schema = pa.schema(
        [pa.field("id", pa.int64(), False), ("v", DataType.parse("VARIANT").to_arrow())]
    )
    keys = [] if "bucket-key" in options else ["id"]
    with pytest.raises(UnsupportedFeatureError, match="'v' is VARIANT"):
        catalog.create_table("db.v", schema=schema, primary_keys=keys, options=options)
    assert not (warehouse / "db.db" / "v").exists()
