"""Row ids of a row-tracking append table's commits (lakeops.commit.row_ids), against a plain
model of Paimon's RowTrackingCommitUtils: every new file takes the next free ids in commit
order, compacted files and files with ids keep theirs, ``.blob`` files take their data file's;
and through the committer: a kill before the publish changes nothing, a commit that lost the
race re-plans with fresh ids."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.commit.row_ids import assign_row_tracking, next_row_id_start, split_groups
from lakeops.errors import CommitError
from lakeops.format.data_file import FILE_SOURCE_APPEND, FILE_SOURCE_COMPACT, DataFileMeta
from lakeops.format.manifest import FileKind, ManifestEntry
from lakeops.io.file_io import FileIO

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
TRACKED = {"row-tracking.enabled": "true"}


def _entry(
    name: str,
    rows: int,
    *,
    source: int = FILE_SOURCE_APPEND,
    first: int | None = None,
    seq: tuple[int, int] = (0, 0),
    cols: tuple[str, ...] | None = None,
) -> ManifestEntry:
    f = DataFileMeta(
        file_name=name,
        file_size=1,
        row_count=rows,
        min_key=b"",
        max_key=b"",
        key_stats=None,  # type: ignore[arg-type]
        value_stats=None,  # type: ignore[arg-type]
        min_sequence_number=seq[0],
        max_sequence_number=seq[1],
        schema_id=0,
        level=0,
        file_source=source,
        first_row_id=first,
        write_cols=cols,
    )
    return ManifestEntry(FileKind.ADD, b"", 0, -1, f)


def test_new_files_take_consecutive_ids_others_keep_theirs() -> None:
    entries = [
        _entry("a.parquet", 3),
        _entry("c.parquet", 4, source=FILE_SOURCE_COMPACT, seq=(2, 5), first=0),
        _entry("b.parquet", 2, seq=(0, 1)),
        _entry("r.parquet", 5, cols=("_ROW_ID", "v")),
        _entry("k.parquet", 1, first=40, seq=(3, 3)),
        _entry("d.parquet", 1, seq=(7, 9)),
    ]
    out, nxt = assign_row_tracking(entries, snapshot_id=6, first_row_id=10)
    assert [(e.file.file_name, e.file.first_row_id) for e in out] == [
        ("a.parquet", 10),
        ("c.parquet", 0),
        ("b.parquet", 13),
        ("r.parquet", None),
        ("k.parquet", 40),
        ("d.parquet", 15),
    ]
    assert nxt == 16
    seqs = [(e.file.min_sequence_number, e.file.max_sequence_number) for e in out]
    # min 0: (snapshot, snapshot); max 0 only: (min, snapshot); else kept
    assert seqs == [(6, 6), (2, 5), (6, 6), (6, 6), (3, 3), (7, 9)]


def test_blob_files_take_the_ids_of_their_data_file() -> None:
    entries = [
        _entry("a.parquet", 4),
        _entry("a-1.blob", 3, cols=("pic",)),
        _entry("a-2.blob", 1, cols=("pic",)),
        _entry("a-3.blob", 4, cols=("doc",)),
        _entry("b.parquet", 2),
        _entry("b-1.blob", 2, cols=("pic",)),
    ]
    out, nxt = assign_row_tracking(entries, snapshot_id=2, first_row_id=5)
    assert [e.file.first_row_id for e in out] == [5, 5, 8, 5, 9, 9]
    assert nxt == 11
    with pytest.raises(CommitError, match="blob"):
        assign_row_tracking([_entry("x.blob", 1, cols=("pic",))], snapshot_id=1, first_row_id=0)


def test_random_commits_match_the_model() -> None:
    """A plain model: a running counter over the new files, in order."""
    rng = random.Random(7)
    for _ in range(200):
        start = rng.randrange(0, 1000)
        entries = []
        for i in range(rng.randrange(0, 8)):
            kind = rng.choice(["new", "new", "compact", "kept"])
            rows = rng.randrange(1, 50)
            if kind == "new":
                entries.append(_entry(f"f{i}", rows))
            elif kind == "compact":
                entries.append(_entry(f"f{i}", rows, source=FILE_SOURCE_COMPACT, first=3))
            else:
                entries.append(_entry(f"f{i}", rows, first=start + 5000, seq=(1, 2)))
        out, nxt = assign_row_tracking(entries, snapshot_id=9, first_row_id=start)
        counter = start
        for before, after in zip(entries, out, strict=True):
            if before.file.first_row_id is None:
                assert after.file.first_row_id == counter
                counter += before.file.row_count
            else:
                assert after.file == replace(
                    before.file,
                    min_sequence_number=after.file.min_sequence_number,
                    max_sequence_number=after.file.max_sequence_number,
                )
        assert nxt == counter


def _ids(table) -> dict[int, int]:
    got = table.read(columns=["id", "_ROW_ID"]).to_pylist()
    return {r["id"]: r["_ROW_ID"] for r in got}


def test_a_kill_before_the_publish_leaves_the_table_and_its_next_row_id(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA, options=TRACKED)
    table.write(pa.table({"id": [0, 1, 2], "v": ["a", "b", "c"]}, schema=SCHEMA))
    written = FileIO.publish_exclusive

    def crash(self: FileIO, path: str, data: bytes) -> bool:
        if "/snapshot/snapshot-" in path:
            raise KeyboardInterrupt("killed before publish")
        return written(self, path, data)

    monkeypatch.setattr(FileIO, "publish_exclusive", crash)
    with pytest.raises(KeyboardInterrupt):
        table.write(pa.table({"id": [10, 11], "v": ["x", "y"]}, schema=SCHEMA))
    monkeypatch.undo()
    reopened = catalog.get_table("db.t")
    assert reopened.latest_snapshot().id == 1
    assert reopened.latest_snapshot().next_row_id == 3
    assert _ids(reopened) == {0: 0, 1: 1, 2: 2}
    reopened.write(pa.table({"id": [20, 21], "v": ["p", "q"]}, schema=SCHEMA))
    assert _ids(reopened) == {0: 0, 1: 1, 2: 2, 20: 3, 21: 4}
    assert reopened.latest_snapshot().next_row_id == 5


def test_a_commit_that_lost_the_race_takes_fresh_ids(catalog: Catalog, warehouse: Path) -> None:
    """The committer's first attempt plans on a stale snapshot (as after another writer
    published meanwhile): its publish loses, and the retry gives ids after the winner's."""
    table = catalog.create_table("db.t", schema=SCHEMA, options=TRACKED)
    table.write(pa.table({"id": [0, 1], "v": ["a", "b"]}, schema=SCHEMA))
    stale = table.store.latest_snapshot()
    writer = catalog.get_table("db.t")
    tw = writer.new_write()
    tw.write(pa.table({"id": [5, 6, 7], "v": ["l", "m", "n"]}, schema=SCHEMA))
    messages = tw.prepare_commit()
    table.write(pa.table({"id": [3, 4], "v": ["c", "d"]}, schema=SCHEMA))  # the winner
    calls = {"n": 0}
    real = writer.store.latest_snapshot

    def stalled():
        calls["n"] += 1
        return stale if calls["n"] == 1 else real()

    writer.store.latest_snapshot = stalled  # type: ignore[method-assign]
    snapshot = writer.commit(messages)
    assert calls["n"] >= 2 and snapshot is not None and snapshot.id == 3
    assert snapshot.next_row_id == 7
    assert _ids(catalog.get_table("db.t")) == {0: 0, 1: 1, 3: 2, 4: 3, 5: 4, 6: 5, 7: 6}
    assert next_row_id_start(None) == 0


def test_row_ids_are_never_reused_after_a_rollback(catalog: Catalog) -> None:
    """A rollback keeps nextRowId (Paimon keeps the larger of the latest and the target's):
    rows written after it take ids past every id ever given."""
    table = catalog.create_table("db.t", schema=SCHEMA, options=TRACKED)
    table.write(pa.table({"id": [0, 1], "v": ["a", "b"]}, schema=SCHEMA))
    table.write(pa.table({"id": [2, 3, 4], "v": ["c", "d", "e"]}, schema=SCHEMA))
    rolled = table.rollback_to(1)
    assert rolled is not None and rolled.next_row_id == 5
    table.write(pa.table({"id": [7], "v": ["h"]}, schema=SCHEMA))
    assert _ids(table) == {0: 0, 1: 1, 7: 5}


def test_split_groups_match_a_plain_model() -> None:
    """Random live files (row-id ranges of two buckets) and a change deleting some and adding
    ranges: offenders exist exactly where, by brute force over pairs of the result in a bucket
    the change deletes from, two files overlap without the same range."""
    rng = random.Random(5)
    for _ in range(300):
        live: list[ManifestEntry] = []
        for i in range(rng.randrange(1, 6)):
            lo = rng.randrange(0, 20)
            e = _entry(f"l{i}", rng.randrange(1, 8), first=lo, seq=(1, 1))
            live.append(replace(e, bucket=rng.randrange(2)))
        change = [replace(e, kind=FileKind.DELETE) for e in live if rng.random() < 0.4]
        for i in range(rng.randrange(0, 3)):
            e = _entry(f"n{i}", rng.randrange(1, 12), first=rng.randrange(0, 20), seq=(1, 1))
            change.append(replace(e, bucket=rng.randrange(2), file=replace(e.file, file_source=1)))
        gone = {(e.bucket, e.file.file_name) for e in change if e.kind == FileKind.DELETE}
        touched = {b for b, _ in gone}
        result = [e for e in live if (e.bucket, e.file.file_name) not in gone]
        result += [e for e in change if e.kind == FileKind.ADD]

        def span(e: ManifestEntry) -> tuple[int, int]:
            first = e.file.first_row_id or 0
            return first, first + e.file.row_count

        broken = any(
            a.bucket == b.bucket
            and a.bucket in touched
            and span(a) != span(b)
            and span(a)[0] < span(b)[1]
            and span(b)[0] < span(a)[1]
            for i, a in enumerate(result)
            for b in result[i + 1 :]
        )
        assert bool(split_groups(change, live)) == broken
