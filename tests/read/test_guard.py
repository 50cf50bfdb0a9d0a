"""A read whose snapshot expiry removed is told apart from a corrupt table: it raises
:class:`SnapshotExpiredError` ("read again"), never advice to restore or roll back; a file
missing under a snapshot that still lives stays a corruption error."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from lakeops import (
    Catalog,
    CorruptTableError,
    MissingDataFileError,
    SnapshotExpiredError,
    SnapshotNotFoundError,
    Table,
)
from lakeops.table.append import AppendTable

SCHEMA = pa.schema(
    [
        pa.field("p", pa.string(), nullable=False),
        pa.field("id", pa.int64(), nullable=False),
        ("v", pa.int64()),
    ]
)
PARTITIONS = [f"p{i:02}" for i in range(12)]


def _rows(version: int) -> pa.Table:
    return pa.table(
        {
            "p": [p for p in PARTITIONS for _ in range(3)],
            "id": [i for _ in PARTITIONS for i in range(3)],
            "v": [version] * (3 * len(PARTITIONS)),
        },
        schema=SCHEMA,
    )


def _pk_table(catalog: Catalog) -> Table:
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["p", "id"],
        partition_keys=["p"],
        options={"bucket": "1"},
    )
    assert isinstance(table, Table)
    return table


def _expire_under(table: Table | AppendTable) -> None:
    """Rewrite every partition (an overwrite, or a full compaction of a primary-key table),
    then expire all but the newest snapshot: the files of the snapshots before it are
    deleted."""
    if isinstance(table, AppendTable):
        table.write(_rows(9), overwrite=True)
    else:
        table.write(_rows(9))
        table.compact(full=True)
    result = table.expire_snapshots(retain_min=1, retain_max=1, time_retained="0 ms")
    assert result.data_files_deleted > 0
    assert table.check().ok  # the table is healthy


def _assert_expired(error: pytest.ExceptionInfo[SnapshotExpiredError]) -> None:
    message = str(error.value)
    assert "read again" in message.lower()
    assert "roll back to" not in message and "from a backup" not in message
    assert not isinstance(error.value, CorruptTableError)


@pytest.mark.parametrize("kind", ["primary-key", "append"])
def test_a_streaming_read_whose_snapshot_expires_under_it_says_read_again(
    catalog: Catalog, kind: str
) -> None:
    if kind == "primary-key":
        table: Table | AppendTable = _pk_table(catalog)
    else:
        appended = catalog.create_table(
            "db.t", schema=SCHEMA, partition_keys=["p"], options={"bucket": "-1"}
        )
        assert isinstance(appended, AppendTable)
        table = appended
    for version in range(2):
        table.write(_rows(version))
    planned = table.latest_snapshot()
    assert planned is not None
    batches = table.to_batches(batch_rows=1, parallelism=1)
    first = next(batches)
    assert first.num_rows == 1
    _expire_under(table)
    with pytest.raises(SnapshotExpiredError) as expired:
        for _ in batches:
            pass
    _assert_expired(expired)
    assert expired.value.snapshot_id == planned.id
    # read again: the new latest snapshot, whole
    assert table.read().num_rows == 3 * len(PARTITIONS)


def test_time_travel_and_changes_of_an_expired_snapshot_say_expired(catalog: Catalog) -> None:
    table = _pk_table(catalog)
    for version in range(3):
        table.write(_rows(version))
    _expire_under(table)  # only the newest snapshot is kept
    for ask in (
        lambda: table.read(snapshot_id=2),
        lambda: table.to_batches(snapshot_id=1),
        lambda: table.read_changes(1, mode="delta"),
    ):
        with pytest.raises(SnapshotExpiredError) as expired:
            ask()
        _assert_expired(expired)
        assert isinstance(expired.value, SnapshotNotFoundError)  # as before, a LookupError


def test_read_changes_names_the_first_readable_snapshot(catalog: Catalog) -> None:
    table = _pk_table(catalog)
    for version in range(6):
        table.write(_rows(version))
    table.expire_snapshots(retain_min=2, retain_max=2, time_retained="0 ms")
    first = table.snapshots()[0].id
    assert first > 2
    with pytest.raises(SnapshotExpiredError) as e:
        table.read_changes(0, mode="delta")
    assert f"first readable change is snapshot {first}'s" in str(e.value)
    assert f"from_snapshot={first - 1} or later" in str(e.value)
    # and what it names reads
    table.read_changes(first - 1, mode="delta")


def test_a_file_missing_under_a_live_snapshot_is_still_corruption(catalog: Catalog) -> None:
    table = _pk_table(catalog)
    table.write(_rows(0))
    batches = table.to_batches(batch_rows=1, parallelism=1)
    next(batches)
    victim = sorted(Path(table.root).glob("p=p11/bucket-0/data-*"))[0]
    victim.unlink()
    with pytest.raises(MissingDataFileError, match="restore it from a backup"):
        for _ in batches:
            pass
