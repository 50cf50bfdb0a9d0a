"""``rewrite_file_index`` (Paimon's procedure): existing files get the indexes the options now
ask for, data untouched, as one ``COMPACT`` commit; only the chosen partitions; a new index file
name per rewrite (Paimon's ``createNewFileIndexFilePath``); the replaced index file goes with
expiry; a kill before the publish leaves the table as it was.

Judged by the file tree, the manifest entries, and bloom-filter membership of every value the
file holds (the bloom bytes themselves are judged against a plain model in
tests/format/test_file_index.py)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.format.file_index import BloomFilter, fast_hash, read_container
from lakeops.format.schema_change import RemoveOption, SetOption
from lakeops.format.snapshot import CommitKind
from lakeops.format.types import DataType
from lakeops.maintenance.file_index import next_index_name

SCHEMA = pa.schema([("p", pa.string()), ("id", pa.int64()), ("v", pa.string())])
INDEX = {"file-index.bloom-filter.columns": "id", "file-index.bloom-filter.id.items": "2000"}


def _rows(p: str, ids: range) -> pa.Table:
    return pa.table(
        {"p": [p] * len(ids), "id": list(ids), "v": [f"v{i}" for i in ids]}, schema=SCHEMA
    )


def _live(table):  # type: ignore[no-untyped-def]
    return table.store.live_entries(table.store.latest_snapshot())


def _sorted(t: pa.Table) -> list[tuple[object, ...]]:
    return sorted(tuple(r.values()) for r in t.select(["p", "id", "v"]).to_pylist())


def test_next_index_name_follows_paimon() -> None:
    assert next_index_name("data-ab-0.parquet.index") == "data-ab-0.parquet-1.index"
    assert next_index_name("data-ab-0.parquet-1.index") == "data-ab-0.parquet-2.index"
    assert next_index_name("data-ab-0.parquet-41.index") == "data-ab-0.parquet-42.index"


@pytest.mark.parametrize("primary_keys", [[], ["p", "id"]], ids=["append", "primary-key"])
def test_rewrite_adds_indexes_to_the_chosen_partitions_only(
    catalog: Catalog, warehouse: Path, primary_keys: list[str]
) -> None:
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=primary_keys,
        partition_keys=["p"],
        options={"bucket": "1" if primary_keys else "-1"},
    )
    table.write(pa.concat_tables([_rows("a", range(0, 30)), _rows("b", range(0, 30))]))
    table.write(_rows("a", range(30, 50)))
    before = _sorted(table.read())
    files_before = {e.file.file_name: e.file for e in _live(table)}
    assert all(f.embedded_file_index is None and not f.extra_files for f in files_before.values())
    table.alter(
        [SetOption(k, v) for k, v in {**INDEX, "file-index.in-manifest-threshold": "1 b"}.items()]
    )
    table = catalog.get_table("db.t")

    result = table.rewrite_file_index(partitions=[{"p": "a"}])
    assert result.files == 2
    snapshot = table.store.latest_snapshot()
    assert snapshot.id == result.snapshot_id and snapshot.commit_kind == CommitKind.COMPACT
    assert _sorted(table.read()) == before
    root = warehouse / "db.db" / "t"
    for e in _live(table):
        old = files_before[e.file.file_name]
        assert (e.file.row_count, e.file.file_size, e.file.level) == (
            old.row_count,
            old.file_size,
            old.level,
        )
        p = "a" if b"a" in e.partition else "b"
        if p == "b":
            assert e.file.extra_files == () and e.file.embedded_file_index is None
            continue
        assert e.file.extra_files == (e.file.file_name + ".index",)
        (index_path,) = root.glob(f"p={p}/bucket-*/{e.file.extra_files[0]}")
        bloom = BloomFilter.from_bytes(
            read_container(index_path.read_bytes())["id"]["bloom-filter"] or b""
        )
        ids = range(0, 30) if e.file.row_count == 30 else range(30, 50)
        assert bloom.might_contain(
            fast_hash(pa.array(ids, pa.int64()), DataType.parse("BIGINT"))
        ).all()


def test_a_second_rewrite_names_a_new_file_and_expiry_deletes_the_old_one(
    catalog: Catalog, warehouse: Path
) -> None:
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        options={"bucket": "-1", **INDEX, "file-index.in-manifest-threshold": "1 b"},
    )
    table.write(_rows("a", range(0, 40)))
    (entry,) = _live(table)
    first = entry.file.extra_files
    assert first == (entry.file.file_name + ".index",)
    table.alter(SetOption("file-index.bloom-filter.id.items", "4000"))
    table = catalog.get_table("db.t")
    table.rewrite_file_index()
    (entry,) = _live(table)
    assert entry.file.extra_files == (next_index_name(first[0]),)
    bucket = warehouse / "db.db" / "t" / "bucket-0"
    assert {p.name for p in bucket.glob("*.index")} == {first[0], entry.file.extra_files[0]}
    table.expire_snapshots(retain_min=1, retain_max=1)
    assert {p.name for p in bucket.glob("*.index")} == {entry.file.extra_files[0]}
    assert table.read().num_rows == 40

    # options removed: the rewrite drops the index
    table.alter([RemoveOption(k) for k in INDEX])
    table = catalog.get_table("db.t")
    table.rewrite_file_index()
    (entry,) = _live(table)
    assert entry.file.extra_files == () and entry.file.embedded_file_index is None


def test_a_kill_before_the_publish_leaves_the_table_as_it_was(
    catalog: Catalog, warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lakeops.io.file_io import FileIO

    table = catalog.create_table("db.t", schema=SCHEMA, options={"bucket": "-1"})
    table.write(_rows("a", range(0, 40)))
    table.alter([SetOption(k, v) for k, v in INDEX.items()])
    table = catalog.get_table("db.t")
    before = table.store.latest_snapshot_id()
    written = FileIO.publish_exclusive

    def crash(self: FileIO, path: str, data: bytes) -> bool:
        if "/snapshot/snapshot-" in path:
            raise KeyboardInterrupt("killed before publish")
        return written(self, path, data)

    monkeypatch.setattr(FileIO, "publish_exclusive", crash)
    with pytest.raises(KeyboardInterrupt):
        table.rewrite_file_index()
    monkeypatch.undo()
    table = catalog.get_table("db.t")
    assert table.store.latest_snapshot_id() == before
    (entry,) = _live(table)
    assert entry.file.embedded_file_index is None and entry.file.extra_files == ()
    assert table.rewrite_file_index().files == 1
    (entry,) = _live(table)
    assert entry.file.extra_files == (entry.file.file_name + ".index",)
