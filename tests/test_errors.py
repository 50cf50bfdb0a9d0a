"""The error tree: a missing snapshot is a :class:`SnapshotNotFoundError` wherever one is asked
for, and every refusal is a :class:`LakeopsError` a caller can catch as one type."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest

import lakeops
from lakeops import Catalog, LakeopsError, SnapshotNotFoundError, Table

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


@pytest.fixture
def table(catalog: Catalog) -> Table:
    """Three snapshots, the first two expired (changelog produced but not kept longer)."""
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["id"],
        options={"bucket": "1", "changelog-producer": "input"},
    )
    for i in range(3):
        table.write(pa.table({"id": [i], "v": [str(i)]}, schema=SCHEMA))
    expired = table.expire_snapshots(retain_min=1, retain_max=1, time_retained="0 s")
    assert expired.expired_snapshots == (1, 2)
    return table


ASKS: dict[str, Callable[[Table], Any]] = {
    "snapshot": lambda t: t.snapshot(1),
    "time travel": lambda t: t.read(snapshot_id=2),
    "splits": lambda t: t.splits(snapshot_id=1),
    "commit_stats": lambda t: t.commit_stats(2),
    "rollback_to": lambda t: t.rollback_to(1),
    "never written": lambda t: t.snapshot(99),
    "changelog of an expired snapshot": lambda t: t.read_changes(0, 3, mode="changelog"),
}


@pytest.mark.parametrize("ask", ASKS.values(), ids=ASKS.keys())
def test_a_missing_snapshot_is_snapshot_not_found(
    table: Table, ask: Callable[[Table], Any]
) -> None:
    latest = table.latest_snapshot()
    with pytest.raises(SnapshotNotFoundError) as missing:
        ask(table)
    assert missing.value.snapshot_id in (1, 2, 99)
    assert str(missing.value.snapshot_id) in str(missing.value)
    assert table.latest_snapshot() == latest  # nothing was committed


def test_every_exported_error_is_in_the_one_tree() -> None:
    errors = [getattr(lakeops, n) for n in lakeops.__all__ if n.endswith("Error")]
    assert errors and all(issubclass(e, LakeopsError) for e in errors)
    assert issubclass(SnapshotNotFoundError, LookupError)
