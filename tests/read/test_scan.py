"""Scan planning of primary-key tables with deletion vectors (Paimon 0.9's batch rule).

A lakeops table is fully compacted into one level-5 file, then a snapshot is published whose
deletion-vector index deletes some of that file's rows by position (what a Paimon lookup
compaction leaves), and a newer level-0 file is written beside it. The plain model: with
``deletion-vectors.enabled`` a batch read skips level 0 and drops the deleted positions; with the
option off Paimon reads neither the vectors nor skips level 0. A second table adds a level-4
file of newer rows above the vector's file: levels >= 1 merge after their vectors. A level-0
flush lifts the newer file onto the vectors.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakeops import Catalog
from lakeops.format.index_manifest import IndexFileMeta, IndexManifestEntry, write_index_manifest
from lakeops.format.manifest import FileKind
from tests.format.test_deletion_vector import blob32
from tests.options.test_registry import add_schema_options

SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), False), pa.field("v", pa.string()), pa.field("n", pa.int32())]
)
BASE = pa.table(
    {
        "id": list(range(20)),
        "v": [f"v{i}-é" for i in range(20)],
        "n": [i % 7 for i in range(20)],
    },
    schema=SCHEMA,
)
#: positions of the level-5 file the vector deletes (the file is sorted by id: position == id)
DELETED = [0, 3, 4, 11, 19]
#: written after the compaction: stays in level 0
LATER = pa.table({"id": [3, 5, 30], "v": ["new3", "new5", "new30"], "n": [1, 1, 1]}, schema=SCHEMA)


def _rows(t: pa.Table) -> list[tuple[Any, ...]]:
    return sorted(zip(*(t.column(c).to_pylist() for c in t.column_names), strict=True))


def _publish_vector(
    table_dir: Path, partition: bytes, data_file: str, positions: list[int]
) -> None:
    """A snapshot whose index manifest gives ``data_file`` (bucket 0) a 32-bit deletion vector
    of ``positions`` in a new index file, as Paimon's compaction commits one."""
    snapshot_dir = table_dir / "snapshot"
    latest = max(int(p.name.split("-")[1]) for p in snapshot_dir.glob("snapshot-*"))
    doc = json.loads((snapshot_dir / f"snapshot-{latest}").read_text())
    blob = blob32(positions)
    name = "index-0b1f2c3d-0"
    (table_dir / "index").mkdir(exist_ok=True)
    (table_dir / "index" / name).write_bytes(b"\x01" + blob)
    ranges = [{"f0": data_file, "f1": 1, "f2": len(blob) - 8, "_CARDINALITY": len(positions)}]
    meta = IndexFileMeta(
        "DELETION_VECTORS", name, 1 + len(blob), 1, (("_DELETIONS_VECTORS_RANGES", ranges),)
    )
    manifest = "index-manifest-0b1f2c3d-0"
    (table_dir / "manifest" / manifest).write_bytes(
        write_index_manifest([IndexManifestEntry(FileKind.ADD, partition, 0, meta)])
    )
    doc["id"] = latest + 1
    doc["indexManifest"] = manifest
    doc["commitKind"] = "COMPACT"
    (snapshot_dir / f"snapshot-{latest + 1}").write_text(json.dumps(doc))
    (snapshot_dir / "LATEST").write_text(str(latest + 1))


@pytest.fixture
def dv_table(catalog: Catalog, warehouse: Path) -> Path:
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"}
    )
    table.write(BASE)
    table.compact(full=True)
    (entry,) = table.store.live_entries(table.store.latest_snapshot())
    assert entry.file.level == 5 and entry.file.row_count == 20
    root = warehouse / "db.db" / "t"
    _publish_vector(root, entry.partition, entry.file.file_name, DELETED)
    table.write(LATER)  # level 0, after the vector
    add_schema_options(root, {"deletion-vectors.enabled": "true"})
    return root


def _model(enabled: bool) -> pa.Table:
    """Paimon's batch read: deletion vectors on -> level 5 minus the deleted positions (level 0
    skipped); off -> every file merged, vectors ignored."""
    if enabled:
        keep = pc.invert(pc.is_in(BASE.column("id"), pa.array(DELETED, pa.int64())))
        return BASE.filter(keep)
    newer = LATER.column("id")
    old = BASE.filter(pc.invert(pc.is_in(BASE.column("id"), newer)))
    return pa.concat_tables([old, LATER])


def test_batch_reads_skip_level0_and_drop_deleted_positions(
    catalog: Catalog, dv_table: Path
) -> None:
    table = catalog.get_table("db.t")
    want = _model(enabled=True)
    (split,) = table.splits()
    assert [f.level for f in split.files] == [5]  # the level-0 file is not planned
    assert split.deletion_of(split.files[0]) is not None
    assert _rows(table.read()) == _rows(want)
    assert _rows(table.read(columns=["v"])) == _rows(want.select(["v"]))
    batches = list(table.to_batches(batch_rows=3, parallelism=2))
    assert _rows(pa.Table.from_batches(batches, schema=SCHEMA)) == _rows(want)
    flt = (pc.field("n") >= 3) & (pc.field("id") < 15)
    assert _rows(table.read(filter=flt)) == _rows(want.filter(flt))
    found = table.lookup(pa.table({"id": pa.array([1, 3, 11, 12, 30], pa.int64())}))
    assert _rows(found) == _rows(want.filter(pc.is_in(want.column("id"), pa.array([1, 12]))))
    audit = table.metadata_table("audit_log")
    assert set(audit.column(0).to_pylist()) == {"+I"}
    assert _rows(audit.drop_columns([audit.column_names[0]])) == _rows(want)
    # time travel to the snapshot before the vector: nothing deleted yet
    first = table.store.latest_snapshot_id() - 2
    assert _rows(table.read(snapshot_id=first)) == _rows(BASE)


def test_vectors_are_ignored_while_the_option_is_off(catalog: Catalog, dv_table: Path) -> None:
    add_schema_options(dv_table, {"deletion-vectors.enabled": "false"})
    table = catalog.get_table("db.t")
    assert _rows(table.read()) == _rows(_model(enabled=False))
    assert all(not s.deletions for s in table.splits())


def test_a_flush_lifts_level0_onto_the_vectors(catalog: Catalog, dv_table: Path) -> None:
    """lakeops now maintains the vectors: a level-0 flush merges the level-0 rows with the live
    rows of the level-5 file (deleted positions stay deleted), marks the superseded position
    of id 5 (id 3's was already deleted) and the read is the vectors' model plus LATER."""
    table = catalog.get_table("db.t")
    assert table.flush_level0() is not None
    base = _model(enabled=True)
    old = base.filter(pc.invert(pc.is_in(base.column("id"), LATER.column("id"))))
    assert _rows(table.read()) == _rows(pa.concat_tables([old, LATER]))
    (split,) = table.splits()
    assert sorted(f.level for f in split.files)[0] > 0


def test_levels_above_zero_merge_after_their_vectors(catalog: Catalog, warehouse: Path) -> None:
    """A newer level-4 file (updates, a new key) above the level-5 file whose vector deletes
    the superseded rows and one key deleted outright: the rows of every level >= 1 are merged
    after the vectors, level 0 is skipped."""
    table = catalog.create_table(
        "db.m", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"}
    )
    table.write(BASE)
    table.compact(full=True)
    (base,) = table.store.live_entries(table.store.latest_snapshot())
    newer = pa.table({"id": [2, 6, 7, 25], "v": ["u2", None, "u7", "n25"], "n": [9, 9, 9, 9]})
    table.write(newer.cast(SCHEMA))
    table.flush_level0()
    levels = sorted(e.file.level for e in table.store.live_entries(table.store.latest_snapshot()))
    assert levels[0] > 0 and levels[-1] == 5
    root = warehouse / "db.db" / "m"
    _publish_vector(root, base.partition, base.file.file_name, [2, 6, 7, 11])
    table.write(LATER)
    add_schema_options(root, {"deletion-vectors.enabled": "true"})
    table = catalog.get_table("db.m")
    gone = pa.array([2, 6, 7, 11], pa.int64())
    want = pa.concat_tables(
        [BASE.filter(pc.invert(pc.is_in(BASE.column("id"), gone))), newer.cast(SCHEMA)]
    )
    assert _rows(table.read()) == _rows(want)
    streamed = pa.Table.from_batches(list(table.to_batches(batch_rows=2)), schema=SCHEMA)
    assert _rows(streamed) == _rows(want)
    probe = pa.table({"id": pa.array([2, 11, 25, 30], pa.int64())})
    assert _rows(table.lookup(probe)) == [r for r in _rows(want) if r[0] in (2, 11, 25, 30)]
