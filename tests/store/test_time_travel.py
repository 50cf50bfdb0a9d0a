"""Time travel by time (Paimon's ``scan.timestamp-millis``): the newest snapshot committed at
or before the time, among retained and tagged snapshots; a time whose snapshot expired untagged
is refused, never guessed. Snapshot times are set to known values; a plain model of the
table after each commit is the oracle."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest

from lakeops import Catalog, ConfigurationError, SnapshotNotFoundError, Table
from lakeops.format.snapshot import Snapshot
from lakeops.store.time_travel import as_of_millis

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
BASE = 1_700_000_000_000  # epoch ms of snapshot 0 (there is none); snapshot N at BASE + N s
BATCHES = [
    pa.table({"id": list(ids), "v": [f"{n}-{i}" for i in ids]}, schema=SCHEMA)
    for n, ids in enumerate([range(0, 20), range(10, 30), range(0, 5), range(50, 60)])
]


def _model(upto: int) -> dict[int, str]:
    """The table after snapshot ``upto`` (0: empty)."""
    out: dict[int, str] = {}
    for batch in BATCHES[:upto]:
        out.update(zip(batch.column("id").to_pylist(), batch.column("v").to_pylist(), strict=True))
    return out


def _rows(table: pa.Table) -> dict[int, str]:
    return dict(zip(table.column("id").to_pylist(), table.column("v").to_pylist(), strict=True))


@pytest.fixture
def table(catalog: Catalog, warehouse: Path) -> Table:
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "2"}
    )
    for batch in BATCHES:
        table.write(batch)
    for snapshot in table.snapshots():  # known commit times: BASE + id seconds
        path = warehouse / "db.db" / "t" / "snapshot" / f"snapshot-{snapshot.id}"
        timed = dataclasses.replace(snapshot, time_millis=BASE + snapshot.id * 1000)
        path.write_text(timed.to_json())
    return table


@pytest.mark.parametrize(
    ("offset_ms", "expected"),
    [(500, 0), (1000, 1), (1999, 1), (2000, 2), (2500, 2), (4000, 4), (99_000, 4)],
)
def test_as_of_reads_the_newest_snapshot_at_or_before(
    table: Table, offset_ms: int, expected: int
) -> None:
    assert _rows(table.read(as_of=BASE + offset_ms)) == _model(expected)
    when = dt.datetime.fromtimestamp((BASE + offset_ms) / 1000, dt.UTC)
    assert _rows(table.read(as_of=when)) == _model(expected)
    assert len(table.splits(as_of=BASE + offset_ms)) == (0 if expected == 0 else 2)


def test_a_naive_datetime_is_local_time() -> None:
    naive = dt.datetime(2024, 5, 1, 12, 30, 15, 250000)
    assert as_of_millis(naive) == int(naive.astimezone().timestamp() * 1000)


@pytest.mark.parametrize("bad", [1.5, True, "2024-01-01", dt.date(2024, 1, 1)])
def test_as_of_takes_a_datetime_or_epoch_millis(table: Table, bad: object) -> None:
    with pytest.raises(ConfigurationError, match="as_of"):
        table.read(as_of=bad)  # type: ignore[arg-type]


def test_times_before_the_earliest_kept_snapshot_use_tags_or_are_refused(table: Table) -> None:
    table.create_tag("one", 1)
    table.create_tag("two", 2)
    table.expire_snapshots(retain_min=1, retain_max=1, time_retained="0 ms")
    assert [s.id for s in table.snapshots()] == [4]
    assert _rows(table.read(as_of=BASE + 500)) == _model(0)  # before snapshot 1: empty
    assert _rows(table.read(as_of=BASE + 1500)) == _model(1)  # tag one; snapshot 2 is tagged
    assert _rows(table.read(as_of=BASE + 4000)) == _model(4)
    # snapshot 3 expired untagged: whether it was committed by 2.5 s cannot be told
    with pytest.raises(SnapshotNotFoundError, match="cannot be told"):
        table.read(as_of=BASE + 2500)
    table.delete_tag("one")
    table.delete_tag("two")
    with pytest.raises(SnapshotNotFoundError, match="earliest snapshot kept is 4"):
        table.read(as_of=BASE + 1500)


def test_rollback_by_time(table: Table) -> None:
    snapshot = table.rollback_to(as_of=BASE + 2500)
    assert isinstance(snapshot, Snapshot) and snapshot.id == 5
    assert _rows(table.read()) == _model(2)
    with pytest.raises(SnapshotNotFoundError, match="nothing to roll back"):
        table.rollback_to(as_of=BASE)
    with pytest.raises(ConfigurationError, match="needs a snapshot_id"):
        table.rollback_to()


def test_every_read_entry_point_travels_by_tag_and_time(table: Table) -> None:
    table.create_tag("two", 2)
    streamed = pa.Table.from_batches(list(table.to_batches(tag="two")))
    assert _rows(streamed) == _model(2)
    assert _rows(table.to_arrow_batch_reader(as_of=BASE + 3000).read_all()) == _model(3)
    frame = table.to_pandas(tag="two")
    assert dict(zip(frame["id"], frame["v"], strict=True)) == _model(2)
    assert len(table.splits(as_of=BASE + 1000)) == len(table.splits(snapshot_id=1))
