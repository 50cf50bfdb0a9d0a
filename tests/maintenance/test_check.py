"""Corrupt files are named and refused, and ``Table.check()`` / ``lakeops check`` find them
without changing anything. Each case breaks one file of a table lakeops wrote and compares
with what was there (the rows are a plain model, never lakeops' own read of the table)."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakeops import Catalog
from lakeops.errors import (
    CorruptDataFileError,
    CorruptMetadataError,
    MissingDataFileError,
)
from lakeops.table.primary_key import Table

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def table(catalog: Catalog) -> Table:
    t = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": list(range(650)), "v": [f"a{i}" for i in range(650)]}, schema=SCHEMA))
    t.write(pa.table({"id": list(range(639)), "v": [f"b{i}" for i in range(639)]}, schema=SCHEMA))
    return t


def _data_files(table: Table) -> list[Path]:
    root = Path(table.root)
    entries = sorted(
        table.store.live_entries(table.latest_snapshot()), key=lambda e: -e.file.row_count
    )
    return [root / "bucket-0" / e.file.file_name for e in entries]


def _assert_unchanged_and_named(table: Table, name: str, error: type[Exception]) -> None:
    root = Path(table.root)
    before = _tree(root)
    with pytest.raises(error) as raised:
        table.read()
    assert name in str(raised.value)
    assert raised.value.path == name  # type: ignore[attr-defined]
    assert _tree(root) == before


def test_a_swapped_data_file_with_fewer_rows_is_refused(table: Table) -> None:
    big, small = _data_files(table)  # 650 and 639 rows
    shutil.copyfile(small, big)  # a valid Parquet file, fewer rows than the entry records
    name = str(big.relative_to(table.root))
    _assert_unchanged_and_named(table, name, CorruptDataFileError)
    report = table.check()
    assert [(p.path, p.snapshots) for p in report.problems] == [(name, (1, 2))]


def test_same_size_but_fewer_rows_is_refused(table: Table) -> None:
    big = _data_files(table)[0]
    rows = pq.read_table(big)
    size = big.stat().st_size
    # rewrite the file with 400 rows fewer and pad it to the recorded size: zeros between the
    # data pages and the footer keep every offset valid (the footer is found from the end)
    pq.write_table(rows.slice(400), big, compression="zstd", compression_level=19)
    short = big.read_bytes()
    footer = int.from_bytes(short[-8:-4], "little") + 8
    assert len(short) < size
    big.write_bytes(short[:-footer] + b"\0" * (size - len(short)) + short[-footer:])
    assert big.stat().st_size == size
    assert pq.ParquetFile(big).metadata.num_rows == 250
    name = str(big.relative_to(table.root))
    _assert_unchanged_and_named(table, name, CorruptDataFileError)
    assert [p.problem for p in table.check().problems] == [
        "holds 250 rows, its manifest entry records 650"
    ]


@pytest.mark.parametrize("damage", ["empty", "truncated", "missing"])
def test_damaged_data_files_are_named(table: Table, damage: str) -> None:
    victim = _data_files(table)[0]
    name = str(victim.relative_to(table.root))
    if damage == "empty":
        victim.write_bytes(b"")
    elif damage == "truncated":
        victim.write_bytes(victim.read_bytes()[:-100])
    else:
        victim.unlink()
    error = MissingDataFileError if damage == "missing" else CorruptDataFileError
    _assert_unchanged_and_named(table, name, error)
    assert isinstance(MissingDataFileError("x"), FileNotFoundError)
    problems = table.check().problems
    assert [p.path for p in problems] == [name]
    assert ("missing" if damage == "missing" else "bytes") in problems[0].problem


def test_compaction_refuses_a_damaged_file_and_writes_nothing(table: Table) -> None:
    victim = _data_files(table)[1]
    victim.write_bytes(victim.read_bytes()[:-100])
    root = Path(table.root)
    before = _tree(root)
    with pytest.raises(CorruptDataFileError, match=str(victim.relative_to(root))):
        table.compact(full=True)
    assert _tree(root) == before


def _snapshot_path(table: Table, sid: int) -> Path:
    return Path(table.root) / "snapshot" / f"snapshot-{sid}"


@pytest.mark.parametrize("content", ["{not json", "[" * 200_000, "big"])
def test_a_corrupt_latest_snapshot_is_named_with_the_way_out(table: Table, content: str) -> None:
    path = _snapshot_path(table, 2)
    if content == "big":
        with path.open("r+b") as f:
            f.truncate(65 << 20)  # 65 MiB (sparse): beyond any snapshot Paimon writes
    else:
        path.write_text(content)
    root = Path(table.root)
    before = _tree(root)
    for operation in (
        table.read,
        table.expire_snapshots,
        lambda: table.remove_orphan_files(older_than=dt.timedelta(0), force=True),
        lambda: table.write(pa.table({"id": [1], "v": ["x"]}, schema=SCHEMA)),
    ):
        with pytest.raises(CorruptMetadataError) as raised:
            operation()
        assert raised.value.path == "snapshot/snapshot-2"
        assert "snapshot/snapshot-2" in str(raised.value) and "backup" in str(raised.value)
    assert _tree(root) == before
    assert table.read(snapshot_id=1).num_rows == 650  # older snapshots still read
    problems = table.check().problems
    assert [p.path for p in problems] == ["snapshot/snapshot-2"]


def test_a_truncated_manifest_is_named(table: Table) -> None:
    snapshot = table.latest_snapshot()
    assert snapshot is not None
    metas = table.store.manifest_list(snapshot.delta_manifest_list)
    manifest = Path(table.root) / "manifest" / metas[0].file_name
    manifest.write_bytes(manifest.read_bytes()[:40])
    table.store._manifest_cache.clear()
    fresh = Catalog(str(Path(table.root).parent.parent)).get_table("db.t")
    with pytest.raises(CorruptMetadataError) as raised:
        fresh.read()
    assert raised.value.path == f"manifest/{metas[0].file_name}"
    report = fresh.check()
    assert [(p.path, p.snapshots) for p in report.problems] == [
        (f"manifest/{metas[0].file_name}", (2,))
    ]


def test_check_of_a_sound_table_and_the_cli(table: Table, warehouse: Path) -> None:
    from typer.testing import CliRunner

    from lakeops.cli.main import app

    report = table.check()
    assert report.ok and report.snapshots == 2 and report.data_files == 2
    runner = CliRunner()
    ok = runner.invoke(app, ["-w", str(warehouse), "--json", "check", "db.t"])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.stdout)["ok"] is True
    _data_files(table)[0].unlink()
    bad = runner.invoke(app, ["-w", str(warehouse), "check", "db.t"])
    assert bad.exit_code == 1 and "missing" in bad.stdout


@pytest.mark.parametrize("keeper", ["tag", "branch"])
def test_a_tagged_snapshot_s_expired_changelog_is_not_a_problem(
    catalog: Catalog, keeper: str
) -> None:
    """Expiry deletes the changelog files of every snapshot it expires, tagged or not (as
    Paimon's ``ExpireSnapshotsImpl``: a tag keeps its snapshot's data for batch reads), so a
    check after it finds nothing wrong; a data file of the tagged snapshot gone is still one."""
    t = catalog.create_table(
        "db.c",
        schema=SCHEMA,
        primary_keys=["id"],
        options={"bucket": "1", "changelog-producer": "lookup"},
    )
    t.write(pa.table({"id": [1, 2], "v": ["a", "a"]}, schema=SCHEMA))
    t.write(pa.table({"id": [2, 3], "v": ["b", "b"]}, schema=SCHEMA))
    kept = t.latest_snapshot()
    assert kept.changelog_manifest_list  # the lookup compaction's changelog
    if keeper == "tag":
        t.create_tag("x", kept.id)
    else:
        t.create_branch("x", from_snapshot=kept.id)
    t.write(pa.table({"id": [4], "v": ["c"]}, schema=SCHEMA))
    t.compact(full=True)
    t.expire_snapshots(retain_max=1, retain_min=1)
    assert not t.store.snapshot_exists(kept.id)
    assert t.check().ok
    old = [e for e in t.store.live_entries(kept) if e.file.level > 0]
    (Path(t.root) / "bucket-0" / old[0].file.file_name).unlink()
    problems = t.check().problems
    assert [p.path for p in problems] == [f"bucket-0/{old[0].file.file_name}"]
