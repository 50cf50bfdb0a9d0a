"""``expire_partitions`` on tables: one OVERWRITE commit, no file deleted, dry run, both
kinds of table."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.errors import ConfigurationError

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("hour", pa.string())])
NOW = dt.datetime(2024, 3, 10, 12, 0, 0)
DAYS = ["2024-03-01", "2024-03-05", "2024-03-09", "2024-03-10", "not-a-date"]


def _rows() -> list[dict[str, object]]:
    return [{"id": i, "dt": d, "hour": "10"} for i, d in enumerate(DAYS)]


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("primary_key", [True, False])
def test_values_time_drop_is_one_overwrite_commit(catalog: Catalog, primary_key: bool) -> None:
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        partition_keys=["dt", "hour"],
        primary_keys=["id", "dt", "hour"] if primary_key else [],
        options={"partition.expiration-time": "2 d", **({"bucket": "1"} if primary_key else {})},
    )
    table.write(pa.Table.from_pylist(_rows(), schema=SCHEMA))
    root = Path(table.root)
    before_files = _files(root)
    before_id = table.store.latest_snapshot_id()

    dry = table.expire_partitions(dry_run=True, now=NOW)
    assert dry.dry_run and dry.snapshot_id is None
    assert dry.partitions == [
        {"dt": "2024-03-01", "hour": "10"},
        {"dt": "2024-03-05", "hour": "10"},
    ]
    assert table.store.latest_snapshot_id() == before_id

    result = table.expire_partitions(now=NOW)
    assert sorted(p["dt"] for p in result.partitions) == ["2024-03-01", "2024-03-05"]
    snapshot = table.store.latest_snapshot()
    assert snapshot is not None and snapshot.id == result.snapshot_id == before_id + 1
    assert snapshot.commit_kind.upper() == "OVERWRITE"
    assert sorted(table.read().column("dt").to_pylist()) == DAYS[2:]
    # no data file deleted; only new metadata
    assert before_files <= _files(root)
    # time travel to the snapshot before still reads every row
    assert table.read(snapshot_id=before_id).num_rows == len(DAYS)
    # nothing left to expire: no new commit
    again = table.expire_partitions(now=NOW)
    assert again.partitions == [] and again.snapshot_id is None
    # the table stays writable with the options set
    table.write(pa.Table.from_pylist([{"id": 9, "dt": "2024-03-01", "hour": "1"}], schema=SCHEMA))
    assert table.read().num_rows == 4


def test_pattern_formatter_and_update_time(catalog: Catalog) -> None:
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        partition_keys=["dt", "hour"],
        options={
            "partition.expiration-time": "2 h",
            "partition.timestamp-pattern": "$dt $hour:00:00",
            "partition.timestamp-formatter": "yyyyMMdd HH:mm:ss",
        },
    )
    rows = [
        {"id": 1, "dt": "20240310", "hour": "09"},
        {"id": 2, "dt": "20240310", "hour": "11"},
        {"id": 3, "dt": "20240309", "hour": "23"},
    ]
    table.write(pa.Table.from_pylist(rows, schema=SCHEMA))
    result = table.expire_partitions(now=NOW)
    assert sorted((p["dt"], p["hour"]) for p in result.partitions) == [
        ("20240309", "23"),
        ("20240310", "09"),
    ]
    assert table.read().column("id").to_pylist() == [2]

    updated = catalog.create_table(
        "db.u",
        schema=SCHEMA,
        partition_keys=["dt"],
        options={
            "partition.expiration-time": "1 h",
            "partition.expiration-strategy": "update-time",
        },
    )
    updated.write(pa.Table.from_pylist(rows, schema=SCHEMA))
    assert updated.expire_partitions(dry_run=True).partitions == []
    later = dt.datetime.now() + dt.timedelta(hours=2)
    assert sorted(p["dt"] for p in updated.expire_partitions(now=later).partitions) == [
        "20240309",
        "20240310",
    ]
    assert updated.read().num_rows == 0


def test_without_expiration_time_is_refused(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"])
    with pytest.raises(ConfigurationError, match=r"partition\.expiration-time"):
        table.expire_partitions()


def test_a_crash_before_publish_leaves_the_table_as_it_was(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lakeops.io.file_io import FileIO

    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        partition_keys=["dt"],
        options={"partition.expiration-time": "2 d"},
    )
    table.write(pa.Table.from_pylist(_rows(), schema=SCHEMA))
    before_id = table.store.latest_snapshot_id()
    written = FileIO.publish_exclusive

    def crash(self: FileIO, path: str, data: bytes) -> bool:
        if "/snapshot/snapshot-" in path:
            raise KeyboardInterrupt("killed before publish")
        return written(self, path, data)

    monkeypatch.setattr(FileIO, "publish_exclusive", crash)
    with pytest.raises(KeyboardInterrupt):
        table.expire_partitions(now=NOW)
    monkeypatch.undo()
    reopened = catalog.get_table("db.t")
    assert reopened.store.latest_snapshot_id() == before_id
    assert sorted(reopened.read().column("dt").to_pylist()) == sorted(DAYS)
    assert len(reopened.expire_partitions(now=NOW).partitions) == 2


def test_max_num_and_batch_size_drop_in_several_overwrite_commits(catalog: Catalog) -> None:
    """Seven expired days, ``max-num`` 5, ``batch-size`` 2: the five smallest (by value) go in
    three OVERWRITE commits of 2, 2 and 1 partitions; the next run drops the last two. Model:
    the sorted day list cut as Paimon 1.x cuts it."""
    days = [f"2024-02-{d:02d}" for d in (9, 3, 7, 1, 5, 2, 8)]
    table = catalog.create_table(
        "db.b",
        schema=SCHEMA,
        partition_keys=["dt"],
        options={
            "partition.expiration-time": "2 d",
            "partition.expiration-max-num": "5",
            "partition.expiration-batch-size": "2",
        },
    )
    table.write(
        pa.Table.from_pylist(
            [{"id": i, "dt": d, "hour": "1"} for i, d in enumerate([*days, "2024-03-10"])],
            schema=SCHEMA,
        )
    )
    model = sorted(days)
    before = table.store.latest_snapshot_id()
    assert before is not None
    dry = table.expire_partitions(dry_run=True, now=NOW)
    assert [p["dt"] for p in dry.partitions] == model[:5]
    result = table.expire_partitions(now=NOW)
    assert [p["dt"] for p in result.partitions] == model[:5]
    assert result.snapshot_ids == (before + 1, before + 2, before + 3)
    assert result.snapshot_id == before + 3
    kept = [
        sorted(set(table.read(snapshot_id=s).column("dt").to_pylist())) for s in result.snapshot_ids
    ]
    assert kept == [
        [*model[2:], "2024-03-10"],
        [*model[4:], "2024-03-10"],
        [*model[5:], "2024-03-10"],
    ]
    for sid in result.snapshot_ids:
        assert table.snapshot(sid).commit_kind.upper() == "OVERWRITE"
    again = table.expire_partitions(now=NOW)
    assert [p["dt"] for p in again.partitions] == model[5:]
    assert again.snapshot_ids == (before + 4,)  # 2 partitions: one batch
    assert table.read().column("dt").to_pylist() == ["2024-03-10"]
