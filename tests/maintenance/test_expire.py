"""Snapshot expiry: retention rules, nothing referenced is deleted, nothing garbage is left,
changelog outliving its snapshots."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest

from lakeops import Catalog, Table
from lakeops.format.manifest import FileKind

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("op", pa.string())])


def _table(catalog: Catalog, **options: str) -> Table:
    return catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["id"],
        options={"bucket": "2", "rowkind.field": "op", **options},
    )


def _commit(t: Table, i: int) -> None:
    rows = [{"id": k, "v": i * 10 + k, "op": "+U"} for k in range(i % 5, 40, 3)]
    rows.append({"id": i % 7, "v": 0, "op": "-D"})
    t.write(pa.Table.from_pylist(rows, schema=SCHEMA))


def _referenced(t: Table) -> tuple[set[str], set[str]]:
    """Data/changelog file names and manifest names the remaining snapshots reference."""
    files, manifests = set(), set()
    store = t.store
    for s in t.snapshots():
        files |= {e.file.file_name for e in store.live_entries(s)}
        files |= {e.file.file_name for e in store.changelog_entries(s)}
        for lst in (s.base_manifest_list, s.delta_manifest_list, s.changelog_manifest_list):
            if lst:
                manifests.add(lst)
                manifests |= {m.file_name for m in store.manifest_list(lst)}
    return files, manifests


def _on_disk(t: Table) -> tuple[set[str], set[str]]:
    root = Path(t.root)
    files = {p.name for p in root.rglob("*.parquet")}
    manifests = {p.name for p in (root / "manifest").iterdir()}
    return files, manifests


def test_expire_keeps_min_and_leaves_no_garbage(catalog: Catalog) -> None:
    t = _table(catalog)
    for i in range(14):
        _commit(t, i)
    state = t.read().sort_by("id").to_pylist()
    latest = t.latest_snapshot().id
    result = t.expire_snapshots(retain_min=3, time_retained="0 ms")
    assert [s.id for s in t.snapshots()] == list(range(latest - 2, latest + 1))
    assert result.expired_snapshots == tuple(range(1, latest - 2))
    assert result.data_files_deleted > 0 and result.manifests_deleted > 0
    assert t.read().sort_by("id").to_pylist() == state
    assert t.read(snapshot_id=latest - 2) is not None
    assert _on_disk(t) == _referenced(t)  # nothing dangling, nothing leaked
    assert (Path(t.root) / "snapshot" / "EARLIEST").read_text() == str(latest - 2)


def test_retention_rules(catalog: Catalog) -> None:
    t = _table(catalog, **{"snapshot.num-retained.max": "6", "snapshot.num-retained.min": "1"})
    for i in range(10):
        _commit(t, i)
    n = len(t.snapshots())
    assert t.expire_snapshots().expired_snapshots == tuple(range(1, n - 5))  # max 6, despite 1 h
    assert len(t.snapshots()) == 6
    assert t.expire_snapshots(retain_min=2).expired_snapshots == ()  # all newer than 1 h
    assert (
        len(t.expire_snapshots(retain_min=2, time_retained="0 s", limit=2).expired_snapshots) == 2
    )  # expire limit
    assert len(t.snapshots()) == 4


def test_changelog_outlives_its_snapshots(catalog: Catalog) -> None:
    t = _table(
        catalog,
        **{
            "changelog-producer": "input",
            "changelog.num-retained.max": "100",
            "changelog.num-retained.min": "100",
            "changelog.time-retained": "7 d",
        },
    )
    for i in range(8):
        _commit(t, i)
    full = t.read_changes(0)
    result = t.expire_snapshots(retain_min=2, time_retained="0 ms")
    assert result.kept_changelogs and result.changelog_files_deleted == 0
    assert len(t.snapshots()) == 2
    again = t.read_changes(0)  # served from changelog/changelog-<id> for expired snapshots
    assert again.to_pylist() == full.to_pylist()
    assert _on_disk(t)[0] >= _referenced(t)[0]


def test_changelog_retention_expires_kept_changelog(catalog: Catalog) -> None:
    t = _table(
        catalog,
        **{
            "changelog-producer": "input",
            "changelog.num-retained.max": "5",
            "changelog.num-retained.min": "3",
        },
    )
    for i in range(8):
        _commit(t, i)
    t.expire_snapshots(retain_min=2, retain_max=2, time_retained="0 ms")
    kept = sorted(p.name for p in (Path(t.root) / "changelog").iterdir())
    assert len(kept) + len(t.snapshots()) <= 5
    first_kept = int(kept[0].split("-")[1])
    with pytest.raises(Exception, match="expired"):
        t.read_changes(first_kept - 2)
    assert t.read_changes(first_kept - 1).num_rows > 0


@pytest.mark.parametrize("producer", ["input", "lookup", "none"])
def test_kept_changelogs_expire_in_fresh_processes(
    catalog: Catalog, warehouse: Path, producer: str
) -> None:
    """A kept changelog keeps its changelog only (its snapshot's data manifest lists go with
    the snapshot, as Paimon's expiry deletes them): its own expiry, in a process that never
    saw those lists, deletes its files without reading them (it raised on the missing list,
    and every later expiry of the table did too), and check() expects nothing more of it."""
    _table(
        catalog,
        **{
            "changelog-producer": producer,
            "changelog.num-retained.max": "6",
            "snapshot.num-retained.max": "2",
            "snapshot.num-retained.min": "1",
        },
    )
    expired: list[int] = []
    for i in range(12):
        _commit(Catalog(str(warehouse)).get_table("db.t"), i)
        result = Catalog(str(warehouse)).get_table("db.t").expire_snapshots()
        expired += result.expired_changelogs
        report = Catalog(str(warehouse)).get_table("db.t").check()
        assert report.ok, report.problems
    t = Catalog(str(warehouse)).get_table("db.t")
    kept = sorted(int(p.name.split("-")[1]) for p in (Path(t.root) / "changelog").iterdir())
    assert expired and kept and len(kept) + len(t.snapshots()) <= 6
    assert not (set(expired) & set(kept))
    # nothing left behind: every file on disk is one something still references
    orphans = t.remove_orphan_files(older_than=dt.timedelta(0), dry_run=True, force=True)
    assert orphans.deleted == ()
    if producer != "none":  # the changes the kept changelogs serve, then the snapshots'
        changes = t.read_changes(kept[0] - 1)
        assert changes.num_rows > 0


def test_expired_changelog_files_are_deleted_when_not_decoupled(catalog: Catalog) -> None:
    t = _table(catalog, **{"changelog-producer": "input"})
    for i in range(6):
        _commit(t, i)
    t.expire_snapshots(retain_min=2, time_retained="0 ms")
    files, _ = _on_disk(t)
    referenced, _ = _referenced(t)
    assert {f for f in files if f.startswith("changelog-")} == {
        f for f in referenced if f.startswith("changelog-")
    }
    assert not (Path(t.root) / "changelog").exists()


def test_expiry_never_deletes_live_files(catalog: Catalog) -> None:
    t = _table(catalog, **{"write-only": "true"})
    for i in range(6):
        _commit(t, i)
    t.compact(full=True)  # upgrades some files: deleted at one level, added at another
    for i in range(6, 8):
        _commit(t, i)
    t.expire_snapshots(retain_min=1, time_retained="0 ms")
    live = {e.file.file_name for e in t.store.live_entries(t.latest_snapshot())}
    assert live <= _on_disk(t)[0]
    deletes = [
        e for s in t.snapshots() for e in t.store.delta_entries(s) if e.kind == FileKind.DELETE
    ]
    assert all(e.file.file_name in _on_disk(t)[0] or e.file.file_name not in live for e in deletes)


@pytest.mark.parametrize("parallelism", [1, 3, None])
def test_pooled_deletes_remove_exactly_the_unreferenced_files(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch, parallelism: int | None
) -> None:
    """Model: after expiry the files on disk are exactly those the retained snapshots reference,
    and every file deleted was on disk before; snapshot files and EARLIEST go before any data
    file or manifest."""
    from lakeops.io.file_io import FileIO

    t = _table(catalog)
    for i in range(12):
        _commit(t, i)
    before = _on_disk(t)
    order: list[str] = []
    real = FileIO.delete
    monkeypatch.setattr(FileIO, "delete", lambda self, path: (order.append(path), real(self, path)))
    t.expire_snapshots(retain_min=2, time_retained="0 ms", parallelism=parallelism)
    after = _on_disk(t)
    assert after == _referenced(t)
    assert after[0] < before[0] and after[1] < before[1]
    kinds = ["snapshot" if "/snapshot/snapshot-" in p else "file" for p in order]
    assert kinds == sorted(kinds, key=lambda k: k == "file")  # snapshots first, then files
    assert len(order) == len(set(order))  # each file deleted once


def test_a_failed_pooled_delete_surfaces_after_the_snapshots_went(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lakeops.io.file_io import FileIO

    t = _table(catalog)
    for i in range(8):
        _commit(t, i)
    state = t.read().sort_by("id").to_pylist()
    real = FileIO.delete

    def delete(self: FileIO, path: str) -> None:
        if path.endswith(".parquet"):
            raise PermissionError(f"denied: {path}")
        real(self, path)

    monkeypatch.setattr(FileIO, "delete", delete)
    with pytest.raises(PermissionError, match="denied"):
        t.expire_snapshots(retain_min=2, time_retained="0 ms", parallelism=4)
    monkeypatch.undo()
    assert len(t.snapshots()) == 2  # the crash-safe steps before the deletes all happened
    assert t.read().sort_by("id").to_pylist() == state
    files, _ = _on_disk(t)
    assert files > _referenced(t)[0]  # the undeleted data files are left for orphan cleanup


PSCHEMA = pa.schema([("p", pa.string()), ("id", pa.int64()), ("v", pa.int64())])


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_parallel_listing_finds_and_deletes_what_the_serial_pass_does(
    catalog: Catalog, warehouse: Path
) -> None:
    """Two copies of a partitioned dynamic-bucket table with kept changelogs and a tag: expiry
    at parallelism 1 and 8 (listing, reading and deleting on a pool) reports the same result and
    leaves the same files, byte for byte; every retained snapshot and the changelog still read
    as before, and every file of the tagged snapshot is still there."""
    import random
    import shutil

    from lakeops.format.snapshot import Snapshot
    from lakeops.maintenance.expire import Retention, expire_snapshots

    a = catalog.create_table(
        "db.a",
        schema=PSCHEMA,
        primary_keys=["p", "id"],
        partition_keys=["p"],
        options={
            "bucket": "-1",
            "dynamic-bucket.target-row-num": "6",
            "changelog-producer": "input",
            "changelog.num-retained.min": "6",
            "changelog.num-retained.max": "8",
            "changelog.time-retained": "7 d",
        },
    )
    rng = random.Random(5)
    for i in range(12):
        ids = rng.sample(range(40), 15)
        rows = {"p": [f"p{k % 4}" for k in ids], "id": ids, "v": [i] * len(ids)}
        a.write(pa.table(rows, schema=PSCHEMA))
    root_a, root_b = warehouse / "db.db" / "a", warehouse / "db.db" / "b"
    (root_a / "tag").mkdir()
    shutil.copy(root_a / "snapshot" / "snapshot-4", root_a / "tag" / "tag-t4")
    shutil.copytree(root_a, root_b)
    b = catalog.get_table("db.b")
    latest = a.latest_snapshot().id
    changes = {k: a.read_changes(k).to_pylist() for k in range(latest - 8, latest)}
    state = a.read().sort_by([("p", "ascending"), ("id", "ascending")]).to_pylist()
    now = 4_000_000_000_000
    results = [
        expire_snapshots(
            t.context,
            Retention.from_options(t.schema, retain_min=3, time_retained_ms=0),
            now,
            parallelism=parallelism,
        )
        for t, parallelism in ((a, 1), (b, 8))
    ]
    serial, pooled = results
    assert serial == pooled
    assert serial.expired_snapshots and serial.kept_changelogs
    assert serial.data_files_deleted > 0 and serial.manifests_deleted > 0
    assert _tree(root_a) == _tree(root_b)
    tag = Snapshot.from_json((root_a / "tag" / "tag-t4").read_bytes(), "tag-t4")
    for t in (a, b):
        ctx = t.context
        for e in t.store.live_entries(tag):
            bucket = ctx.bucket_path(e.partition, e.bucket)
            assert Path(ctx.locations.data_file(bucket, e.file.file_name, None)).exists()
        first = min(serial.kept_changelogs) - 1
        assert t.read_changes(first).to_pylist() == changes[first]
        for s in t.snapshots():
            t.read(snapshot_id=s.id)  # every retained snapshot's files are there
        assert t.read().sort_by([("p", "ascending"), ("id", "ascending")]).to_pylist() == state


def test_a_pass_reads_what_it_expires_not_the_retained_history(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two tables with the same first commits, one keeping twice the history of the other:
    the same pass (expire the oldest 4) reads the same metadata files in both, and deletes the
    same ones — its cost does not grow with the snapshots it keeps."""
    from lakeops.io.file_io import FileIO

    reads: list[str] = []
    real = FileIO.read_bytes

    def read_bytes(self: FileIO, path: str, max_bytes: int | None = None) -> bytes:
        reads.append(path)
        return real(self, path, max_bytes)

    seen: dict[int, tuple[list[str], tuple[int, ...]]] = {}
    for retained in (12, 24):
        t = catalog.create_table(
            f"db.t{retained}",
            schema=SCHEMA,
            primary_keys=["id"],
            options={"bucket": "2", "rowkind.field": "op", "snapshot.num-retained.min": "99"},
        )
        for i in range(retained + 4):
            _commit(t, i)
        reads.clear()
        monkeypatch.setattr(FileIO, "read_bytes", read_bytes)
        result = t.expire_snapshots(retain_min=retained, time_retained="0 ms", limit=4)
        monkeypatch.undo()
        latest = t.latest_snapshot()
        assert latest is not None
        # the latest snapshot is read as well (a corrupt one stops maintenance): one file
        names = sorted(p[len(t.root) :] for p in reads if not p.endswith(f"/snapshot-{latest.id}"))
        seen[retained] = (names, result.expired_snapshots)
        assert result.expired_snapshots == (1, 2, 3, 4)
        snapshots_read = {int(n.rsplit("-", 1)[1]) for n in names if "/snapshot/snapshot-" in n}
        assert snapshots_read <= {1, 2, 3, 4, 5}  # the expired ones and the first kept
    assert seen[12] == seen[24]


@pytest.mark.parametrize("when", ["check_snapshots", "kept_alive"])
def test_a_pass_another_expiry_overtakes_stops_without_error(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    """Every Paimon writer expires after its commit, so expiries run side by side. Here another
    expiry (a second table object) runs inside this pass at ``when``: before it checks the
    files of the snapshots it expires (they are gone: it must stop quietly; before, it raised
    ``MissingMetadataError``, a corruption error, on a manifest the other pass deleted), or
    after it read them all (it finishes on what it read). Either way the table keeps exactly
    its two retained snapshots' files, and they read the same rows."""
    import lakeops.maintenance.expire as expire

    t = _table(catalog, **{"changelog-producer": "input"})
    for i in range(12):
        _commit(t, i)
    state = t.read().sort_by("id").to_pylist()
    name = when
    target = getattr(expire, name)

    def overtaken(*args: object, **kwargs: object) -> object:
        monkeypatch.setattr(expire, name, target)  # the other pass runs the real one
        catalog.get_table("db.t").expire_snapshots(retain_min=2, time_retained="0 ms")
        return target(*args, **kwargs)

    monkeypatch.setattr(expire, name, overtaken)
    t.expire_snapshots(retain_min=3, time_retained="0 ms")
    fresh = catalog.get_table("db.t")
    assert len(fresh.snapshots()) == 2
    assert fresh.read().sort_by("id").to_pylist() == state
    report = fresh.check()
    assert report.ok, report.problems
    assert _on_disk(fresh) == _referenced(fresh)
