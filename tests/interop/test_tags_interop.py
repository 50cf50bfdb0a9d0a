"""Tags and time travel across engines: pypaimon 2.1 and Java Paimon 0.9 read lakeops' tags
(plain, and with Paimon's retention fields) after lakeops expired the tagged snapshots and
removed orphan files, and read by time as lakeops does; lakeops reads the tags they create."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest

from lakeops import Catalog, Table
from tests.interop.java_oracle import id_v_model, java_id_v_rows, json_rows, run_ops
from tests.interop.oracle import oracle_script

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
BASE = 1_700_000_000_000
BATCHES = [
    pa.table({"id": list(ids), "v": [f"{n}-{i}" for i in ids]}, schema=SCHEMA)
    for n, ids in enumerate([range(0, 40), range(20, 60), range(0, 10), range(80, 90)])
]


def _rows(table: pa.Table) -> dict[int, str]:
    return dict(zip(table.column("id").to_pylist(), table.column("v").to_pylist(), strict=True))


def _tagged_table(catalog: Catalog, warehouse: Path) -> Table:
    """Four commits at known times (BASE + id s); tags 'plain' (1) and 'kept' (2, retained),
    then snapshots 1 and 2 expired and orphan files removed."""
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "2"}
    )
    for batch in BATCHES:
        table.write(batch)
    for snapshot in table.snapshots():
        path = warehouse / "db.db" / "t" / "snapshot" / f"snapshot-{snapshot.id}"
        path.write_text(
            dataclasses.replace(snapshot, time_millis=BASE + snapshot.id * 1000).to_json()
        )
    table.create_tag("plain", 1)
    table.create_tag("kept", 2, time_retained="3 d")
    table.expire_snapshots(retain_min=2, retain_max=2, time_retained="0 ms")
    table.remove_orphan_files(older_than=dt.timedelta(0), force=True)
    assert [s.id for s in table.snapshots()] == [3, 4]
    return table


def test_pypaimon_reads_lakeops_tags_and_lakeops_reads_pypaimons(
    catalog: Catalog, warehouse: Path
) -> None:
    table = _tagged_table(catalog, warehouse)
    plain, kept, latest, by_time, tagged = oracle_script(
        warehouse,
        [
            {"op": "read", "table": "db.t", "tag": "plain"},
            {"op": "read", "table": "db.t", "tag": "kept"},
            {"op": "read", "table": "db.t"},
            {"op": "read", "table": "db.t", "timestamp_millis": BASE + 3500},
            {"op": "tag", "table": "db.t", "name": "py"},
            {"op": "read", "table": "db.t", "tag": "py"},
        ],
    )
    assert _rows(plain) == id_v_model(BATCHES[0]) == _rows(table.read(tag="plain"))
    assert _rows(kept) == id_v_model(*BATCHES[:2]) == _rows(table.read(tag="kept"))
    assert _rows(latest) == id_v_model(*BATCHES)
    assert _rows(by_time) == id_v_model(*BATCHES[:3]) == _rows(table.read(as_of=BASE + 3500))
    py = next(t for t in table.tags() if t.name == "py")
    assert py.snapshot.id == 4
    assert _rows(table.read(tag="py")) == id_v_model(*BATCHES) == _rows(tagged)


def test_java_reads_lakeops_tags_and_lakeops_reads_javas(
    catalog: Catalog, warehouse: Path, java_classpath: str
) -> None:
    table = _tagged_table(catalog, warehouse)
    later = pa.table({"id": [1, 100], "v": ["java1", "java100"]}, schema=SCHEMA)
    results = run_ops(
        java_classpath,
        str(warehouse),
        [
            {"op": "tags", "table": "db.t"},
            {"op": "read", "table": "db.t", "tag": "plain"},
            {"op": "read", "table": "db.t", "tag": "kept"},
            {"op": "read", "table": "db.t", "timestamp_millis": BASE + 3500},
            {"op": "tag", "table": "db.t", "name": "java"},
            {"op": "write", "table": "db.t", "rows": json_rows(later)},
        ],
    )
    assert results[0]["tags"] == {"plain": 1, "kept": 2}
    assert java_id_v_rows(results[1]) == id_v_model(BATCHES[0])
    assert java_id_v_rows(results[2]) == id_v_model(*BATCHES[:2])
    assert java_id_v_rows(results[3]) == id_v_model(*BATCHES[:3])
    assert _rows(table.read(as_of=BASE + 3500)) == id_v_model(*BATCHES[:3])
    assert {t.name: t.snapshot.id for t in table.tags()} == {"plain": 1, "kept": 2, "java": 4}
    assert _rows(table.read(tag="java")) == id_v_model(*BATCHES)
    assert _rows(table.read()) == id_v_model(*BATCHES, later)
    # lakeops rolls back to Java's tag; Java reads the result
    table.rollback_to(tag="plain")
    final = run_ops(java_classpath, str(warehouse), [{"op": "read", "table": "db.t"}])
    assert java_id_v_rows(final[0]) == id_v_model(BATCHES[0])


def test_java_and_pypaimon_read_renamed_replaced_and_timed_tags_by_name(
    catalog: Catalog, warehouse: Path, java_classpath: str
) -> None:
    """lakeops renames 'kept' (its snapshot 2 expired: only the tag holds it), points 'plain'
    at snapshot 3, tags the snapshot of a time, and removes the files nothing holds any more;
    both engines list and read the tags by their names."""
    table = _tagged_table(catalog, warehouse)
    table.rename_tag("kept", "renamed")
    table.replace_tag("plain", 3)
    table.create_tag("timed", as_of=BASE + 3500)  # the first snapshot at or after: 4
    table.remove_orphan_files(older_than=dt.timedelta(0), force=True)
    expected = {"renamed": BATCHES[:2], "plain": BATCHES[:3], "timed": BATCHES}
    assert {t.name: t.snapshot.id for t in table.tags()} == {"renamed": 2, "plain": 3, "timed": 4}
    ops: list[dict[str, object]] = [{"op": "read", "table": "db.t", "tag": n} for n in expected]
    java = run_ops(java_classpath, str(warehouse), [{"op": "tags", "table": "db.t"}, *ops])
    assert java[0]["tags"] == {"renamed": 2, "plain": 3, "timed": 4}
    python = oracle_script(warehouse, ops)
    for (name, batches), java_read, python_read in zip(
        expected.items(), java[1:], python, strict=True
    ):
        model = id_v_model(*batches)
        assert java_id_v_rows(java_read) == model == _rows(python_read), name
        assert _rows(table.read(tag=name)) == model, name
