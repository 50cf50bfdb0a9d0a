"""Automatic tags across engines: Java Paimon 0.9 lists the automatic tags lakeops created, and
after a Java commit to the same table, Java's ``TagAutoCreation`` has created and retired
exactly the tags lakeops creates and retires for that same snapshot (lakeops run on a copy of
the table as it was before Java's tag step). Watermark and batch tags lakeops created are
listed by Java (whose commit without a watermark carries the latest one and tags nothing new)
and their snapshots read by pypaimon."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

import lakeops.commit.committer as committer_module
from lakeops import Catalog
from lakeops.maintenance.auto_tags import create_auto_tags
from lakeops.options.auto_tag import AutoTagOptions
from tests.interop.java_oracle import json_rows, run_ops
from tests.interop.oracle import oracle_batch

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
OPTIONS = {
    "bucket": "1",
    "tag.automatic-creation": "process-time",
    "tag.creation-period": "daily",
    "tag.num-retained-max": "2",
}


class _Clock:
    def __init__(self) -> None:
        self.now = dt.datetime(2024, 1, 1)
        self.sleep = lambda _seconds: None

    def time(self) -> float:
        return self.now.timestamp()


def _batch(i: int) -> pa.Table:
    return pa.table({"id": [i], "v": [str(i)]}, schema=SCHEMA)


def test_java_and_lakeops_create_and_retire_the_same_automatic_tags(
    catalog: Catalog, warehouse: Path, java_classpath: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options=OPTIONS)
    clock = _Clock()
    with monkeypatch.context() as patch:
        patch.setattr(committer_module, "time", clock)
        for i, when in enumerate([dt.datetime(2024, 1, 1, 10), dt.datetime(2024, 1, 3, 10)]):
            clock.now = when
            table.write(_batch(i))
    ours = {t.name: t.snapshot.id for t in table.tags()}
    assert ours == {"2023-12-31": 1, "2024-01-02": 2}
    root = warehouse / "db.db" / "t"
    tags_before = {p.name: p.read_bytes() for p in (root / "tag").iterdir()}

    # Java commits snapshot 3 now: its TagAutoCreation tags it and retires the oldest tag
    listed, _, after = run_ops(
        java_classpath,
        str(warehouse),
        [
            {"op": "tags", "table": "db.t"},
            {"op": "write", "table": "db.t", "rows": json_rows(_batch(9))},
            {"op": "tags", "table": "db.t"},
        ],
    )
    assert listed["tags"] == ours
    java = after["tags"]
    assert 3 in java.values() and "2023-12-31" not in java and len(java) == 2

    # lakeops on a copy of the table with the tags as they were before Java's tag step
    copy = warehouse / "db.db" / "u"
    shutil.copytree(root, copy)
    shutil.rmtree(copy / "tag")
    (copy / "tag").mkdir()
    for name, data in tags_before.items():
        (copy / "tag" / name).write_bytes(data)
    twin = catalog.get_table("db.u")
    options = AutoTagOptions.from_options(twin.schema.options)
    assert options is not None
    create_auto_tags(twin.store, options)
    assert {t.name: t.snapshot.id for t in twin.tags()} == java
    assert {t.name: t.snapshot.id for t in table.tags()} == java  # lakeops reads Java's


def test_watermark_and_batch_tags_are_listed_by_java_and_read_by_pypaimon(
    catalog: Catalog, warehouse: Path, java_classpath: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    utc = dt.UTC
    watermarked = catalog.create_table(
        "db.w",
        schema=SCHEMA,
        primary_keys=["id"],
        options={"bucket": "1", "write-only": "true", "tag.automatic-creation": "watermark"},
    )
    batch = catalog.create_table(
        "db.b",
        schema=SCHEMA,
        primary_keys=["id"],
        options={"bucket": "1", "tag.automatic-creation": "batch"},
    )
    clock = _Clock()
    with monkeypatch.context() as patch:
        patch.setattr(committer_module, "time", clock)
        for i, day in enumerate([1, 2]):
            when = dt.datetime(2024, 1, day, 10)
            clock.now = when
            millis = int(when.replace(tzinfo=utc).timestamp() * 1000)
            watermarked.write(_batch(i), watermark=millis)
            batch.write(_batch(i))
    ours_w = {t.name: t.snapshot.id for t in watermarked.tags()}
    ours_b = {t.name: t.snapshot.id for t in batch.tags()}
    assert ours_w == {"2023-12-31": 1, "2024-01-01": 2}
    assert ours_b == {"batch-write-2024-01-01": 1, "batch-write-2024-01-02": 2}

    # Java lists them; its commit without a watermark carries the latest one: no new tag
    listed_w, listed_b, _, after_w = run_ops(
        java_classpath,
        str(warehouse),
        [
            {"op": "tags", "table": "db.w"},
            {"op": "tags", "table": "db.b"},
            {"op": "write", "table": "db.w", "rows": json_rows(_batch(9))},
            {"op": "tags", "table": "db.w"},
        ],
    )
    assert listed_w["tags"] == ours_w and listed_b["tags"] == ours_b
    assert after_w["tags"] == ours_w
    latest = catalog.get_table("db.w").snapshots()[-1]
    assert latest.id == 3 and latest.watermark == watermarked.snapshots()[1].watermark

    # pypaimon reads each tagged snapshot
    reads, errors = oracle_batch(
        [
            {"group": g, "warehouse": warehouse, "op": "read", "table": t, "tag": tag}
            for g, t, tag in [
                ("w", "db.w", "2023-12-31"),
                ("b", "db.b", "batch-write-2024-01-01"),
            ]
        ]
    )
    assert errors == {}
    for group in ("w", "b"):
        assert reads[group][0].column("id").to_pylist() == [0], group
