"""Automatic tags across engines: Java Paimon 0.9 lists the automatic tags lakeops created, and
after a Java commit to the same table, Java's ``TagAutoCreation`` has created and retired
exactly the tags lakeops creates and retires for that same snapshot (lakeops run on a copy of
the table as it was before Java's tag step)."""

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
