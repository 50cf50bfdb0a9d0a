"""``compact``, ``flush``, ``expire``, ``orphans`` and ``rollback``, checked against the table's
health, snapshots, files and rows."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest

from lakeops.format.schema_change import SetOption
from tests.cli.conftest import Cli, rows, sorted_rows


def test_compact_full_leaves_one_sorted_run_per_bucket(cli: Cli, loaded: str) -> None:
    table = cli.table()
    before = sorted_rows(table.read())
    assert table.health().max_sorted_runs == 3
    out = cli.json("compact", loaded, "--full")
    table = cli.table()
    latest = table.latest_snapshot()
    assert latest is not None and latest.commit_kind == "COMPACT"
    assert out["snapshot_id"] == latest.id == 4
    health = table.health()
    assert [b.sorted_runs for b in health.buckets] == [1, 1, 1, 1]
    assert all(b.level0_files == 0 for b in health.buckets)
    stats = table.commit_stats(latest.id)
    assert out["stats"]["files_deleted"] == stats.files_deleted == 12  # 3 writes x 4 buckets
    assert out["stats"]["bytes_added"] == stats.bytes_added
    assert sorted_rows(table.read()) == before

    again = cli.ok("compact", loaded, "--full")
    assert "nothing to compact" in again.stdout
    assert cli.table().latest_snapshot().id == 4  # type: ignore[union-attr]


def test_compact_text_and_partition(cli: Cli, loaded: str) -> None:
    result = cli.ok("compact", loaded, "--full", "--partition", "dt=2024-01-02")
    assert result.stdout.startswith("snapshot 4 (COMPACT): rewrote 6 file(s)")
    runs = {(b.partition["dt"], b.bucket): b.sorted_runs for b in cli.table().health().buckets}
    assert runs == {
        ("2024-01-01", 0): 3,
        ("2024-01-01", 1): 3,
        ("2024-01-02", 0): 1,
        ("2024-01-02", 1): 1,
    }
    bad = cli("compact", loaded, "-p", "day=1")
    assert bad.exit_code == 1 and "not partition columns of db.orders" in bad.stderr
    assert cli.table().latest_snapshot().id == 4  # type: ignore[union-attr]


def test_compact_by_strategy(cli: Cli, loaded: str) -> None:
    # three runs stay below the default trigger (5), so universal compaction has nothing to do
    assert cli.json("compact", loaded) == {"table": loaded, "snapshot_id": None, "stats": None}
    assert cli.table().health().max_sorted_runs == 3


def test_flush_lifts_level0(cli: Cli, loaded: str) -> None:
    assert sum(b.level0_files for b in cli.table().health().buckets) == 12
    out = cli.json("flush", loaded, "-p", "dt=2024-01-01")
    health = cli.table().health()
    assert out["snapshot_id"] == health.snapshot_id
    level0 = {b.partition["dt"]: 0 for b in health.buckets}
    for b in health.buckets:
        level0[b.partition["dt"]] += b.level0_files
    assert level0 == {"2024-01-01": 0, "2024-01-02": 6}
    cli.ok("flush", loaded)
    assert all(b.level0_files == 0 for b in cli.table().health().buckets)
    assert "nothing to flush" in cli.ok("flush", loaded).stdout


def test_expire(cli: Cli, loaded: str) -> None:
    before = sorted_rows(cli.table().read())
    out = cli.json("expire", loaded, "--retain-max", "1", "--retain-min", "1")
    assert out["expired_snapshots"] == [1, 2]
    table = cli.table()
    assert [s.id for s in table.snapshots()] == [3]
    assert sorted_rows(table.read()) == before
    assert "nothing to expire" in cli.ok("expire", loaded, "--time-retained", "1 h").stdout
    bad = cli("expire", loaded, "--time-retained", "soon")
    assert bad.exit_code == 1 and "soon" in bad.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ["--retain-max", "2"],
            "--retain-max 2 is below snapshot.num-retained.min, which is 10 (Paimon's default); "
            "pass --retain-min too",
        ),
        (["--retain-min", "3", "--retain-max", "2"], "--retain-max 2 is below --retain-min 3"),
        (["--time-retained", "1x"], "option '--time-retained' has invalid duration '1x'"),
        (["--parallelism", "0"], "Invalid value for '--parallelism'"),
    ],
)
def test_expire_messages_name_cli_options(
    cli: Cli, loaded: str, args: list[str], says: str
) -> None:
    bad = cli("expire", loaded, *args)
    assert bad.exit_code == 1, bad.output
    lines = bad.stderr.splitlines()
    assert len(lines) == 1 and says in lines[0], bad.stderr
    assert "time_retained" not in bad.stderr and "retain_max" not in bad.stderr
    assert [s.id for s in cli.table().snapshots()] == [1, 2, 3]


def test_expire_retain_max_below_the_tables_min(cli: Cli, loaded: str) -> None:
    cli.ok("alter", loaded, "--set", "snapshot.num-retained.min=3")
    bad = cli("expire", loaded, "--retain-max", "2")
    assert bad.exit_code == 1 and "which is 3 (the table's option)" in bad.stderr
    # with --retain-min named as the message says, it works
    out = cli.json("expire", loaded, "--retain-min", "2", "--retain-max", "2")
    assert out["expired_snapshots"] == [1]


@pytest.mark.parametrize("command", ["compact", "flush"])
def test_missing_partition_lists_existing_ones(cli: Cli, loaded: str, command: str) -> None:
    bad = cli(command, loaded, "-p", "dt=2099-01-01")
    assert bad.exit_code == 1, bad.output
    lines = bad.stderr.splitlines()
    assert lines == [
        "error: partition dt=2099-01-01 does not exist in db.orders; existing partitions: "
        "dt=2024-01-01, dt=2024-01-02"
    ]
    assert [s.id for s in cli.table().snapshots()] == [1, 2, 3]
    # one existing and one missing partition: refused as well, nothing written
    bad = cli(command, loaded, "-p", "dt=2024-01-01", "-p", "dt=2024-01-03")
    assert bad.exit_code == 1 and "dt=2024-01-03 does not exist" in bad.stderr
    assert [s.id for s in cli.table().snapshots()] == [1, 2, 3]


def test_missing_partition_of_an_empty_table(cli: Cli, orders: str) -> None:
    bad = cli("compact", orders, "-p", "dt=2024-01-01")
    assert bad.exit_code == 1
    assert "partition dt=2024-01-01 does not exist: db.orders holds no data" in bad.stderr


def test_orphans(cli: Cli, loaded: str) -> None:
    bucket = cli.warehouse / "db.db" / "orders" / "dt=2024-01-01" / "bucket-0"
    stray = bucket / "data-stray.parquet"
    stray.write_bytes(b"x" * 100)
    fresh = bucket / "data-fresh.parquet"
    fresh.write_bytes(b"y" * 10)
    two_days_ago = time.time() - 2 * 86400
    os.utime(stray, (two_days_ago, two_days_ago))
    before = sorted_rows(cli.table().read())

    dry = cli.json("orphans", loaded, "--dry-run")
    assert dry["deleted"] == ["dt=2024-01-01/bucket-0/data-stray.parquet"]
    assert dry["bytes"] == 100 and stray.exists()

    text = cli.ok("orphans", loaded).stdout
    assert "deleted 1 orphan file(s), 100 B" in text
    assert not stray.exists() and fresh.exists()
    assert sorted_rows(cli.table().read()) == before

    for hours in ("0", "0.5", "-1"):
        refused = cli("orphans", loaded, "--older-than-hours", hours)
        assert refused.exit_code == 1 and "--force" in refused.stderr
        assert fresh.exists()
    assert cli.json("orphans", loaded, "--older-than-hours", "0", "--dry-run")["deleted"] == [
        "dt=2024-01-01/bucket-0/data-fresh.parquet"
    ]
    assert fresh.exists()
    cli.ok("orphans", loaded, "--older-than-hours", "0", "--force")
    assert not fresh.exists()
    assert sorted_rows(cli.table().read()) == before


def test_rollback(cli: Cli, loaded: str) -> None:
    first = sorted_rows(cli.table().read(snapshot_id=1))
    second = sorted_rows(cli.table().read(snapshot_id=2))
    declined = cli("rollback", loaded, "1", input="n\n")
    assert declined.exit_code == 1
    assert (
        "Roll back db.orders to snapshot 1, undoing snapshot(s) 2..3 with a new snapshot?"
        in declined.stderr
    )
    assert "rollback cancelled" in declined.stderr
    assert [s.id for s in cli.table().snapshots()] == [1, 2, 3]

    accepted = cli("rollback", loaded, "2", input="y\n")
    assert accepted.exit_code == 0, accepted.stderr
    assert "rolled back db.orders to snapshot 2 as snapshot 4" in accepted.stdout
    assert [s.id for s in cli.table().snapshots()] == [1, 2, 3, 4]  # nothing removed
    assert sorted_rows(cli.table().read()) == second

    out = cli.json("rollback", loaded, "1", "--yes")
    assert out == {"table": loaded, "snapshot_id": 1, "new_snapshot_id": 5}
    table = cli.table()
    assert [s.id for s in table.snapshots()] == [1, 2, 3, 4, 5]
    assert sorted_rows(table.read()) == first
    assert sorted_rows(table.read(snapshot_id=3)) != first  # history stays readable
    assert "already holds snapshot 1's data" in cli.ok("rollback", loaded, "1").stdout

    missing = cli("rollback", loaded, "7", "--yes")
    assert missing.exit_code == 1
    assert missing.stderr.splitlines() == [
        "error: cannot roll back to snapshot 7: it does not exist (snapshots 1..5)"
    ]


def test_maintenance_json_is_one_document(cli: Cli, loaded: str) -> None:
    for args in (
        ["compact", loaded],
        ["flush", loaded],
        ["expire", loaded],
        ["orphans", loaded, "--dry-run"],
        ["rollback", loaded, "3", "--yes"],
    ):
        result = cli.ok("--json", *args)
        assert isinstance(json.loads(result.stdout), dict), args
        assert result.stderr == "", args


def test_compact_a_date_partition_named_as_users_write_it(cli: Cli) -> None:
    """A DATE partition lives in Paimon's ``pd=<epoch day>`` directory (legacy names) yet is
    named ``pd=2024-01-02`` on the command line; a value that is no date is refused first."""
    import datetime as dt

    import pyarrow as pa

    from lakeops import Catalog

    catalog = Catalog(str(cli.warehouse))
    catalog.create_database("db")
    schema = pa.schema([("pd", pa.date32()), ("id", pa.int64()), ("v", pa.int64())])
    table = catalog.create_table(
        "db.days",
        schema=schema,
        primary_keys=["pd", "id"],
        partition_keys=["pd"],
        options={"bucket": "1", "write-only": "true"},
    )
    for i in range(2):
        days = [dt.date(2024, 1, 1)] * 3 + [dt.date(2024, 1, 2)] * 3
        table.write(pa.table({"pd": days, "id": [1, 2, 3] * 2, "v": [i] * 6}, schema=schema))
    assert sorted(p.name for p in (cli.warehouse / "db.db" / "days").glob("pd=*")) == [
        "pd=19723",
        "pd=19724",
    ]
    bad = cli("compact", "db.days", "--full", "-p", "pd=tomorrow")
    assert bad.exit_code == 1 and "'pd'" in bad.stderr and "2024-01-01" in bad.stderr
    assert cli.table("db.days").latest_snapshot().id == 2  # type: ignore[union-attr]
    cli.ok("compact", "db.days", "--full", "-p", "pd=2024-01-02")
    runs = {b.partition["pd"]: b.sorted_runs for b in cli.table("db.days").health().buckets}
    assert runs == {dt.date(2024, 1, 1): 2, dt.date(2024, 1, 2): 1}


def test_parallelism_zero_refused_before_anything_is_written(
    cli: Cli, loaded: str, parquet: Callable[[str, pa.Table], Path]
) -> None:
    data = parquet("more.parquet", rows("2024-01-01", range(100, 110)))
    for args in (
        ("write", loaded, str(data)),
        ("compact", loaded, "--full"),
        ("flush", loaded),
    ):
        bad = cli(*args, "--parallelism", "0")
        assert bad.exit_code == 1, args
        lines = bad.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: Invalid value for '--parallelism'")
        assert cli.table().latest_snapshot().id == 3  # type: ignore[union-attr]


def test_compact_and_flush_take_parallelism(cli: Cli, loaded: str) -> None:
    before = sorted_rows(cli.table().read())
    out = cli.json("compact", loaded, "--full", "--parallelism", "1")
    assert out["stats"]["files_deleted"] == 12
    assert [b.sorted_runs for b in cli.table().health().buckets] == [1, 1, 1, 1]
    assert sorted_rows(cli.table().read()) == before
    out = cli.json("flush", loaded, "--parallelism", "2")
    assert out["snapshot_id"] is None  # nothing left on level 0


@pytest.mark.parametrize("parallelism", ["1", "4"])
def test_compact_and_flush_show_bucket_progress(cli: Cli, loaded: str, parallelism: str) -> None:
    seen: list[tuple[int, int, int, int]] = []
    before = cli.table()
    files = [f for s in before.splits() for f in s.files]
    size = sum(f.file_size for f in files)
    # the library seam the CLI's bar is driven by: a callback per bucket, totals up front
    before.compact(
        full=True,
        parallelism=int(parallelism),
        progress=lambda p: seen.append((p.buckets_done, p.buckets, p.files_done, p.files)),
    )
    assert seen[0] == (0, 4, 0, len(files)) and seen[-1] == (4, 4, len(files), len(files))
    assert [b for b, *_ in seen] == [0, 1, 2, 3, 4]
    cli.ok("rollback", loaded, "3", "--yes")
    result = cli.ok("compact", loaded, "--full", "--parallelism", parallelism)
    human = " ".join(result.stderr.split())
    assert "fully compacting db.orders" in human
    assert f"4/4 buckets, {len(files)}/{len(files)} files" in human
    assert "KiB/" in human or " B/" in human
    assert size > 0
    assert "buckets" not in cli.ok("--json", "compact", loaded, "--full").stderr


def test_expire_and_orphans_show_file_progress(cli: Cli, loaded: str) -> None:
    calls: list[tuple[int, int]] = []
    table = cli.table()
    result = table.expire_snapshots(
        retain_min=2, retain_max=2, progress=lambda done, total: calls.append((done, total))
    )
    deleted = result.data_files_deleted + result.changelog_files_deleted + result.manifests_deleted
    assert list(result.expired_snapshots) == [1]
    assert calls and calls[-1] == (deleted, deleted) and calls[0][0] == 0
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)

    out = cli.ok("expire", loaded, "--retain-min", "1", "--retain-max", "1")
    assert "expiring db.orders" in out.stderr and "files deleted" in out.stderr

    bucket = cli.warehouse / "db.db" / "orders" / "dt=2024-01-01" / "bucket-0"
    for i in range(3):
        stray = bucket / f"data-stray-{i}.parquet"
        stray.write_bytes(b"x")
        os.utime(stray, (time.time() - 2 * 86400,) * 2)
    out = cli.ok("orphans", loaded)
    assert "deleted 3 orphan file(s)" in out.stdout
    assert "3/3 files deleted" in " ".join(out.stderr.split())


def test_check_reports_a_reused_id_and_repair_fixes_it(cli: Cli, loaded: str) -> None:
    snapshot_dir = cli.warehouse / "db.db" / "orders" / "snapshot"
    first = (snapshot_dir / "snapshot-1").read_bytes()
    cli.ok("expire", loaded, "--retain-min", "1", "--retain-max", "1", "--time-retained", "0 ms")
    (snapshot_dir / "snapshot-1").write_bytes(first)  # id 1 created again below 3
    (snapshot_dir / "LATEST").write_text("1")
    before = sorted_rows(cli.table().read())

    checked = cli("check", loaded)
    assert checked.exit_code == 1
    assert "snapshot/snapshot-1 (snapshot 1): snapshot 1 re-uses an expired id" in checked.stdout
    assert "LATEST names snapshot 1, but the newest is 3" in checked.stdout

    dry = cli.json("repair", loaded, "--dry-run")
    assert [s["snapshot_id"] for s in dry["strays"]] == [1] and dry["latest_hint"] == 3
    assert (snapshot_dir / "snapshot-1").exists()
    text = cli.ok("repair", loaded).stdout
    assert "moved stray snapshot 1 to _lakeops_repair/snapshot-1-" in text
    assert "set LATEST to 3" in text
    assert not (snapshot_dir / "snapshot-1").exists()
    assert "nothing to repair" in cli.ok("repair", loaded).stdout
    cli.ok("check", loaded)
    assert sorted_rows(cli.table().read()) == before


def test_expire_partitions(cli: Cli, loaded: str) -> None:
    cli.table().alter(SetOption("partition.expiration-time", "7 d"))
    before = cli.table().latest_snapshot()
    dry = cli.json("expire-partitions", loaded, "--dry-run")
    assert dry["dry_run"] is True and dry["snapshot_id"] is None
    assert sorted(p["dt"] for p in dry["partitions"]) == ["2024-01-01", "2024-01-02"]
    assert cli.table().latest_snapshot() == before

    text = cli.ok("expire-partitions", loaded).stdout
    assert "dt=2024-01-01" in text and "dropped 2 partition(s) in snapshot" in text
    assert cli.table().read().num_rows == 0
    assert "nothing to expire" in cli.ok("expire-partitions", loaded).stdout


def test_drop_partitions(cli: Cli, loaded: str) -> None:
    """Partitions 2024-01-01 and 2024-01-02 hold the rows; one is dropped by name."""
    want = [r for r in sorted_rows(cli.table().read()) if r["dt"] != "2024-01-01"]
    before = cli.table().latest_snapshot()
    dry = cli.json("drop-partitions", loaded, "-p", "dt=2024-01-02", "--dry-run")
    assert dry["partitions"] == [{"dt": "2024-01-02"}] and dry["snapshot_id"] is None
    assert cli.table().latest_snapshot() == before
    text = cli.ok("drop-partitions", loaded, "--partition", "dt=2024-01-01").stdout
    assert "dt=2024-01-01" in text and "dropped 1 partition(s) in snapshot" in text
    assert sorted_rows(cli.table().read()) == want
    missing = cli("drop-partitions", loaded, "-p", "dt=2024-01-01")
    assert missing.exit_code != 0 and "no partition matches" in missing.stdout + missing.stderr
    skipped = cli.ok("drop-partitions", loaded, "-p", "dt=2024-01-01", "--if-exists").stdout
    assert "nothing to drop" in skipped
    assert cli("drop-partitions", loaded).exit_code != 0  # --partition is required


def test_rewrite_file_index(cli: Cli, loaded: str) -> None:
    assert "no data file to index" not in cli.ok("rewrite-file-index", loaded).stdout
    cli.table().alter(SetOption("file-index.bloom-filter.columns", "id"))
    before = sorted_rows(cli.table().read())
    files = {
        e.file.file_name
        for e in cli.table().store.live_entries(cli.table().store.latest_snapshot())
        if b"2024-01-02" in e.partition
    }
    out = cli.json("rewrite-file-index", loaded, "--partition", "dt=2024-01-02")
    assert out["files"] == len(files) and out["snapshot_id"] is not None
    live = cli.table().store.live_entries(cli.table().store.latest_snapshot())
    indexed = {e.file.file_name for e in live if e.file.extra_files}
    assert indexed == files
    assert sorted_rows(cli.table().read()) == before
    failed = cli("rewrite-file-index", loaded, "--partition", "nope=1")
    assert failed.exit_code != 0 and "not partition columns" in failed.stdout + failed.stderr


def test_expire_partitions_in_batches(cli: Cli, loaded: str) -> None:
    cli.table().alter(
        [
            SetOption("partition.expiration-time", "7 d"),
            SetOption("partition.expiration-batch-size", "1"),
        ]
    )
    before = cli.table().latest_snapshot().id  # type: ignore[union-attr]
    out = cli.json("expire-partitions", loaded)
    assert [p["dt"] for p in out["partitions"]] == ["2024-01-01", "2024-01-02"]
    assert out["snapshot_ids"] == [before + 1, before + 2] and out["snapshot_id"] == before + 2


def test_rescale(cli: Cli, loaded: str, parquet: Callable[[str, pa.Table], Path]) -> None:
    """``rescale --bucket`` changes the count and rewrites one partition as one OVERWRITE; the
    other is refused writes until ``rescale`` without --bucket rewrites it; rows never
    change (the model: the rows read before)."""
    before = sorted_rows(cli.table().read())
    out = cli.json("rescale", loaded, "--bucket", "3", "--partition", "dt=2024-01-02")
    assert out["bucket"] == 3 and out["partitions"] == ["dt=2024-01-02"]
    assert out["previous_buckets"] == {"dt=2024-01-02": 2} and out["rows"] == 30
    table = cli.table()
    assert table.latest_snapshot().id == out["snapshot_id"] == 4  # type: ignore[union-attr]
    assert sorted_rows(table.read()) == before
    refused = cli("write", loaded, str(parquet("late.parquet", rows("2024-01-01", range(3)))))
    assert refused.exit_code == 1 and "partition dt=2024-01-01" in refused.stderr
    assert "rescale" in refused.stderr
    text = cli.ok("rescale", loaded).stdout
    assert "dt=2024-01-01: 2 -> 3 buckets" in text and "rescaled 1 partition(s)" in text
    assert "nothing to rescale" in cli.ok("rescale", loaded).stdout
    assert sorted_rows(cli.table().read()) == before
    bad = cli("rescale", loaded, "--bucket", "0")
    assert bad.exit_code != 0


def test_compact_order_by_strategy_and_where(cli: Cli, loaded: str) -> None:
    """``--where`` picks partitions by a condition on partition columns (either table kind);
    ``--order-by`` / ``--strategy`` sort-compact an append table's partitions as ONE
    OVERWRITE snapshot; rows never change (the model: the rows read before)."""
    cli.ok("compact", loaded, "--full", "--where", "dt >= '2024-01-02'")
    runs = {(b.partition["dt"], b.bucket): b.sorted_runs for b in cli.table().health().buckets}
    assert runs == {
        ("2024-01-01", 0): 3,
        ("2024-01-01", 1): 3,
        ("2024-01-02", 0): 1,
        ("2024-01-02", 1): 1,
    }
    bad = cli("compact", loaded, "--where", "id > 3")
    assert bad.exit_code == 1 and "only partition columns" in bad.stderr
    refused = cli("compact", loaded, "--order-by", "v")
    assert refused.exit_code == 1 and "primary key" in refused.stderr

    from lakeops import Catalog  # an append table beside the primary-key one

    schema = pa.schema([("dt", pa.string()), ("x", pa.int64()), ("y", pa.int64())])
    events = Catalog(str(cli.warehouse)).create_table(
        "db.events", schema=schema, partition_keys=["dt"]
    )
    for i in range(4):
        events.write(
            pa.table(
                {"dt": ["2024-01-01", "2024-01-02"] * 5, "x": [i * 7 % 5] * 10, "y": range(10)},
                schema=schema,
            )
        )
    before = sorted(events.read().to_pylist(), key=lambda r: (r["dt"], r["x"], r["y"]))
    old = {p.name for p in Path(events.root).rglob("data-*")}
    args = ("--order-by", "x,y", "--strategy", "zorder", "--where", "dt >= '2024-01-02'")
    text = cli.ok("compact", "db.events", *args).stdout
    assert text.startswith("snapshot 5 (OVERWRITE): rewrote 4 file(s)"), text
    table = Catalog(str(cli.warehouse)).get_table("db.events")
    after = table.read()
    assert sorted(after.to_pylist(), key=lambda r: (r["dt"], r["x"], r["y"])) == before
    files = {s.partition[0]: s.files for s in table.splits()}
    assert len(files["2024-01-01"]) == 4 and len(files["2024-01-02"]) == 1
    assert files["2024-01-02"][0].file_name not in old

    def z(x: int, y: int) -> int:  # the bits of (x, y), sign-flipped, interleaved: x first
        a, b = x ^ 1 << 63, y ^ 1 << 63
        return sum(((a >> i & 1) << (2 * i + 1)) | ((b >> i & 1) << (2 * i)) for i in range(64))

    day2 = [(r["x"], r["y"]) for r in after.to_pylist() if r["dt"] == "2024-01-02"]
    assert [z(*p) for p in day2] == sorted(z(*p) for p in day2) and len(set(day2)) == 20
    no_columns = cli("compact", "db.events", "--strategy", "zorder")
    assert no_columns.exit_code != 0 and "--order-by" in no_columns.stdout + no_columns.stderr
