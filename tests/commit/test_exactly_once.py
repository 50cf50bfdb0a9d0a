"""Exactly-once commits through the Python API: a commit whose (commit user, identifier) is
already in the table's history publishes nothing, deletes the files its retried attempt wrote
and returns the snapshot of the earlier commit. Sums on an aggregation table (a doubled commit
changes every key) are judged by pypaimon and a plain model."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

from lakeops import Catalog, Table
from lakeops.commit.committer import BATCH_COMMIT_IDENTIFIER
from lakeops.commit.exactly_once import already_committed, latest_snapshot_of_user
from lakeops.errors import CorruptMetadataError
from lakeops.format import paths
from lakeops.format.commit_message import CommitMessage
from tests.interop.oracle import oracle_read

SUM = {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum", "bucket": "2"}
KV = pa.schema([("id", pa.int64()), ("v", pa.int64())])


def _rows(v: int) -> pa.Table:
    return pa.table({"id": list(range(20)), "v": [v] * 20}, schema=KV)


def _prepare(table: Table, data: pa.Table) -> list[CommitMessage]:
    writer = table.new_write()
    writer.write(data)
    return writer.prepare_commit()


def _files(table: Table, messages: list[CommitMessage]) -> list[Path]:
    locations = table.context.locations
    return [
        Path(locations.entry_path(m.partition, m.bucket, f.file_name, f.external_path))
        for m in messages
        for f in m.new_files
    ]


def _sums(table: Table, warehouse: Path) -> tuple[dict[int, int], dict[int, int]]:
    ours = {r["id"]: r["v"] for r in table.read().to_pylist()}
    theirs = {r["id"]: r["v"] for r in oracle_read(warehouse, table.identifier).to_pylist()}
    return ours, theirs


def _sum_table(catalog: Catalog) -> Table:
    return catalog.create_table("db.s", schema=KV, primary_keys=["id"], options=SUM)  # type: ignore[return-value]


def test_a_retried_commit_lands_once(catalog: Catalog, warehouse: Path) -> None:
    """Attempt 1 commits v=10 under (job-1, 7) after a base of v=1; attempt 2 writes the same
    rows again and commits under the same pair: nothing is published, attempt 2's files are
    deleted, the earlier snapshot is returned and every key sums to 11, not 21."""
    table = _sum_table(catalog)
    table.write(_rows(1))
    first = table.commit(_prepare(table, _rows(10)), commit_user="job-1", commit_identifier=7)
    assert first is not None and first.commit_user == "job-1"
    retry = _prepare(table, _rows(10))
    written = _files(table, retry)
    assert written and all(p.exists() for p in written)

    again = table.commit(retry, commit_user="job-1", commit_identifier=7)
    assert again is not None and again.id == first.id
    assert table.latest_snapshot().id == first.id  # nothing published
    assert not any(p.exists() for p in written)  # the retry's files are gone
    model = dict(Counter({i: 1 for i in range(20)}) + Counter({i: 10 for i in range(20)}))
    assert _sums(table, warehouse) == (model, model)
    assert table.check().ok


def test_the_same_messages_committed_twice_keep_their_files(
    catalog: Catalog, warehouse: Path
) -> None:
    """A caller retrying the very messages that were committed (e.g. after a commit whose state
    was unknown) gets the earlier snapshot; the files it names stay."""
    table = _sum_table(catalog)
    messages = _prepare(table, _rows(3))
    first = table.commit(messages, commit_user="job-2", commit_identifier=1)
    again = table.commit(messages, commit_user="job-2", commit_identifier=1)
    assert first is not None and again is not None and again.id == first.id
    assert all(p.exists() for p in _files(table, messages))
    expected = {i: 3 for i in range(20)}
    assert _sums(table, warehouse) == (expected, expected)


def test_identifiers_at_or_below_the_newest_are_skipped(catalog: Catalog) -> None:
    """As Paimon's filterCommitted: only the user's newest snapshot counts; identifiers at or
    below its identifier are committed already, higher ones commit; other users are apart."""
    table = _sum_table(catalog)
    table.commit(_prepare(table, _rows(1)), commit_user="q", commit_identifier=5)
    assert table.commit(_prepare(table, _rows(100)), commit_user="q", commit_identifier=3).id == 1
    table.commit(_prepare(table, _rows(1)), commit_user="other", commit_identifier=5)
    assert table.commit(_prepare(table, _rows(1)), commit_user="q", commit_identifier=6).id == 3
    assert [(s.commit_user, s.commit_identifier) for s in table.snapshots()] == [
        ("q", 5),
        ("other", 5),
        ("q", 6),
    ]
    assert table.read().column("v").to_pylist() == [3] * 20
    newest = latest_snapshot_of_user(table.store, "q")
    assert newest is not None and newest.id == 3
    assert already_committed(table.store, "q", 7) is None


def test_without_a_commit_user_every_commit_lands(catalog: Catalog) -> None:
    """A committer without a given user gets a fresh one: nothing can be skipped."""
    table = _sum_table(catalog)
    table.commit(_prepare(table, _rows(1)))
    table.commit(_prepare(table, _rows(1)))
    assert table.read().column("v").to_pylist() == [2] * 20


def test_a_user_without_an_identifier_commits_every_time(catalog: Catalog) -> None:
    """A commit user reused for several batch commits without a commit identifier (how the
    parameter was used before commits were exactly-once) loses none of them."""
    table = _sum_table(catalog)
    table.commit(_prepare(table, _rows(1)), commit_user="nightly")
    table.commit(_prepare(table, _rows(1)), commit_user="nightly")
    assert table.read().column("v").to_pylist() == [2] * 20
    assert len(table.snapshots()) == 2


def test_append_table_retry_lands_once(catalog: Catalog, warehouse: Path) -> None:
    table = catalog.create_table("db.a", schema=KV, options={"bucket": "-1"})
    rows = _rows(4)

    def attempt() -> None:
        writer = table.new_write()
        writer.write(rows)
        table.commit(
            writer.prepare_commit(), commit_user="load-1", commit_identifier=BATCH_COMMIT_IDENTIFIER
        )

    attempt()
    attempt()  # the retry: batch identifier, same user
    assert table.read().num_rows == 20
    assert oracle_read(warehouse, "db.a").num_rows == 20
    assert len(table.snapshots()) == 1
    data = [p for p in Path(table.root).rglob("data-*") if p.is_file()]
    assert len(data) == 1  # the retry's file was deleted


def test_a_snapshot_that_cannot_be_read_fails_the_scan(catalog: Catalog) -> None:
    """A retained snapshot that cannot be read may be the user's: the commit refuses rather
    than guess (an expired one ends the scan instead)."""
    table = _sum_table(catalog)
    table.commit(_prepare(table, _rows(1)), commit_user="job-3", commit_identifier=1)
    table.write(_rows(1))
    table.write(_rows(1))
    Path(table.root, paths.snapshot_path(2)).write_text("{not json")
    retry = _prepare(table, _rows(1))
    with pytest.raises(CorruptMetadataError):
        table.commit(retry, commit_user="job-3", commit_identifier=1)
    assert len(table.store.snapshot_ids()) == 3  # nothing published


def test_an_expired_commit_is_not_found(catalog: Catalog) -> None:
    """The documented limit (as Paimon's): once expiry removed every snapshot of the user, a
    retry commits again."""
    table = _sum_table(catalog)
    table.commit(_prepare(table, _rows(1)), commit_user="job-4", commit_identifier=1)
    table.write(_rows(1))
    table.expire_snapshots(retain_min=1, retain_max=1)
    assert latest_snapshot_of_user(table.store, "job-4") is None
    table.commit(_prepare(table, _rows(1)), commit_user="job-4", commit_identifier=1)
    assert table.read().column("v").to_pylist() == [3] * 20
