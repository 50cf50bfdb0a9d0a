"""Rescaling a fixed-bucket table (``alter`` of ``bucket`` + one ``OVERWRITE`` of the
partitions), judged against a plain model of the rows: a dict of the last row per key for a
primary-key table, the multiset of rows for an append table. Paimon's behaviour modelled: the
alter is allowed with data, reads stay exact while partitions hold different counts, and a
plain write into a partition still holding the old count is refused
(``AbstractFileStoreWrite.checkNumBuckets``)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pyarrow as pa
import pytest

from lakeops import Catalog, Table
from lakeops.bucket.counts import BucketCountMismatchError
from lakeops.errors import CommitConflictError, UnsupportedFeatureError
from lakeops.format.schema_change import SetOption

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.int64())])


def _rows(ids: range, dt: str, v: int) -> pa.Table:
    return pa.Table.from_pylist([{"id": i, "dt": dt, "v": v + i} for i in ids], schema=SCHEMA)


def _counts(table: Table) -> dict[str, set[int]]:
    """Per partition value, the bucket counts of its live files."""
    out: dict[str, set[int]] = {}
    names = table.context.locations.partitions
    assert names is not None
    for e in table.store.live_entries(table.store.latest_snapshot()):
        out.setdefault(names.dir_of(e.partition), set()).add(e.total_buckets)
    return out


def _model_read(table: Table) -> dict[tuple[int, str], int]:
    out = table.read().to_pylist()
    model = {(r["id"], r["dt"]): r["v"] for r in out}
    assert len(model) == len(out)  # one row per key
    return model


def test_primary_key_table_rescales_partition_by_partition(catalog: Catalog) -> None:
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        partition_keys=["dt"],
        primary_keys=["id", "dt"],
        options={"bucket": "2"},
    )
    model: dict[tuple[int, str], int] = {}

    def write(data: pa.Table) -> None:
        table.write(data)
        for r in data.to_pylist():
            model[(r["id"], r["dt"])] = r["v"]

    write(_rows(range(0, 40), "a", 0))
    write(_rows(range(0, 40), "b", 100))
    write(_rows(range(20, 60), "a", 1000))  # updates and new keys
    before = table.store.latest_snapshot_id()

    result = table.rescale_buckets(bucket=5, partitions=[{"dt": "a"}])
    assert result.partitions == ("dt=a",) and result.previous_buckets == {"dt=a": 2}
    assert result.bucket == 5 and result.rows == 60
    assert result.snapshot is not None and result.snapshot.commit_kind.upper() == "OVERWRITE"
    assert result.snapshot.id == before + 1
    assert table.options.bucket == 5
    assert _counts(table) == {"dt=a": {5}, "dt=b": {2}}
    # reads are exact while the partitions hold different counts
    assert _model_read(table) == model
    # key lookups by bucket (pruning) hash by each file's own count
    assert table.read(filter=[("id", "=", 30)]).num_rows == 2

    with pytest.raises(BucketCountMismatchError, match=r"partition dt=b .*new bucket count 5"):
        table.write(_rows(range(0, 3), "b", 7))
    assert _model_read(table) == model  # nothing written
    write(_rows(range(50, 70), "a", 5000))  # the rescaled partition takes writes
    write(_rows(range(0, 5), "c", 9))  # so does a new one

    # default: every partition still holding another count
    rest = table.rescale_buckets()
    assert rest.partitions == ("dt=b",) and rest.rows == 40
    assert _counts(table) == {"dt=a": {5}, "dt=b": {5}, "dt=c": {5}}
    write(_rows(range(30, 45), "b", 3000))
    assert _model_read(table) == model
    # nothing left to rescale: no commit
    latest = table.store.latest_snapshot_id()
    assert table.rescale_buckets().snapshot is None
    assert table.store.latest_snapshot_id() == latest
    for e in table.store.live_entries(table.store.latest_snapshot()):
        assert 0 <= e.bucket < e.total_buckets == 5


def test_merged_rows_keep_their_sequence_field(catalog: Catalog) -> None:
    """With ``sequence.field``, the row kept per key is the one with the largest sequence
    value; after the rescale a write with a smaller one still loses (the merged row is
    written, with its sequence value)."""
    schema = pa.schema([("id", pa.int64()), ("ts", pa.int64()), ("v", pa.string())])
    table = catalog.create_table(
        "db.s",
        schema=schema,
        primary_keys=["id"],
        options={"bucket": "1", "sequence.field": "ts"},
    )
    table.write(pa.Table.from_pylist([{"id": 1, "ts": 10, "v": "new"}], schema=schema))
    table.write(pa.Table.from_pylist([{"id": 1, "ts": 5, "v": "old"}], schema=schema))
    table.rescale_buckets(bucket=3)
    table.write(pa.Table.from_pylist([{"id": 1, "ts": 7, "v": "late"}], schema=schema))
    assert table.read().to_pylist() == [{"id": 1, "ts": 10, "v": "new"}]


def test_a_deletion_vector_table_reads_its_rescaled_rows(catalog: Catalog) -> None:
    """Batch reads of a deletion-vector table skip level 0 (Paimon's and lakeops'): the
    rescale's new files are lifted out of it, as every commit of such a table is, so the
    rewritten partitions read whole at once."""
    table = catalog.create_table(
        "db.dv",
        schema=SCHEMA,
        primary_keys=["id", "dt"],
        partition_keys=["dt"],
        options={"bucket": "2", "deletion-vectors.enabled": "true"},
    )
    table.write(_rows(range(30), "a", 0))
    table.write(_rows(range(20, 40), "b", 100))
    model = _model_read(table)
    assert len(model) == 50
    done = table.rescale_buckets(bucket=3)
    assert done.snapshot is not None and done.snapshot.commit_kind == "OVERWRITE"
    table = catalog.get_table("db.dv")
    assert _counts(table) == {"dt=a": {3}, "dt=b": {3}}
    assert _model_read(table) == model
    levels = {e.file.level for e in table.store.live_entries(table.store.latest_snapshot())}
    assert 0 not in levels


def test_append_table_rescale_after_alter(catalog: Catalog) -> None:
    table = catalog.create_table(
        "db.a",
        schema=SCHEMA,
        partition_keys=["dt"],
        options={"bucket": "3", "bucket-key": "id"},
    )
    table.write(_rows(range(0, 30), "a", 0))
    table.write(_rows(range(0, 30), "a", 0))  # duplicates are rows of an append table
    table.write(_rows(range(0, 10), "b", 0))
    expected = Counter(tuple(r.values()) for r in table.read().to_pylist())
    table.alter(SetOption("bucket", "2"))
    assert Counter(tuple(r.values()) for r in table.read().to_pylist()) == expected
    with pytest.raises(BucketCountMismatchError, match="dt=a"):
        table.write(_rows(range(0, 3), "a", 0))
    result = table.rescale_buckets()
    assert sorted(result.partitions) == ["dt=a", "dt=b"] and result.rows == 70
    assert _counts(table) == {"dt=a": {2}, "dt=b": {2}}
    assert Counter(tuple(r.values()) for r in table.read().to_pylist()) == expected
    table.write(_rows(range(0, 3), "a", 0))
    assert table.read().num_rows == 73


def test_unpartitioned_table_and_refusals(catalog: Catalog) -> None:
    table = catalog.create_table(
        "db.u", schema=SCHEMA, primary_keys=["id"], options={"bucket": "4"}
    )
    table.write(_rows(range(0, 50), "x", 0))
    table.alter(SetOption("bucket", "3"))
    with pytest.raises(BucketCountMismatchError, match="the table with the new bucket count 3"):
        table.write(_rows(range(0, 2), "x", 0))
    result = table.rescale_buckets()
    assert result.partitions == ("",) and result.previous_buckets == {"": 4}
    assert sorted(r["id"] for r in table.read().to_pylist()) == list(range(50))

    dynamic = catalog.create_table("db.d", schema=SCHEMA, primary_keys=["id"])
    dynamic.write(_rows(range(0, 5), "x", 0))
    with pytest.raises(UnsupportedFeatureError, match="only a fixed bucket count"):
        dynamic.rescale_buckets(bucket=4)
    with pytest.raises(UnsupportedFeatureError, match="when it is -1"):
        dynamic.alter(SetOption("bucket", "4"))
    with pytest.raises(UnsupportedFeatureError, match="to -1"):
        table.alter(SetOption("bucket", "-1"))


def test_kill_before_publish_leaves_the_table_unchanged(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lakeops.io.file_io import FileIO

    table = catalog.create_table(
        "db.k",
        schema=SCHEMA,
        partition_keys=["dt"],
        primary_keys=["id", "dt"],
        options={"bucket": "2"},
    )
    table.write(_rows(range(0, 20), "a", 0))
    table.write(_rows(range(0, 20), "b", 0))
    table.alter(SetOption("bucket", "3"))
    before_id = table.store.latest_snapshot_id()
    before_rows = _model_read(table)
    publish = FileIO.publish_exclusive

    def crash(self: FileIO, path: str, data: bytes) -> bool:
        if "/snapshot/snapshot-" in path:
            raise KeyboardInterrupt("killed before publish")
        return publish(self, path, data)

    monkeypatch.setattr(FileIO, "publish_exclusive", crash)
    with pytest.raises(KeyboardInterrupt):
        table.rescale_buckets()
    monkeypatch.undo()
    reopened = catalog.get_table("db.k")
    assert reopened.store.latest_snapshot_id() == before_id
    assert _counts(reopened) == {"dt=a": {2}, "dt=b": {2}}
    assert _model_read(reopened) == before_rows
    # the next run rescales both partitions
    assert sorted(reopened.rescale_buckets().partitions) == ["dt=a", "dt=b"]
    assert _model_read(reopened) == before_rows


def test_a_concurrent_write_to_the_partitions_refuses_the_rescale(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows another job commits into a partition after the rescale read it would be lost by
    the overwrite: the commit is refused (Paimon's strict mode), and nothing is lost."""
    table = catalog.create_table(
        "db.c",
        schema=SCHEMA,
        partition_keys=["dt"],
        primary_keys=["id", "dt"],
        options={"bucket": "2"},
    )
    table.write(_rows(range(0, 10), "a", 0))
    other = catalog.get_table("db.c")
    real = Table.new_write

    def racing(self: Table, **kwargs: Any) -> Any:
        writer = real(self, **kwargs)
        if kwargs.get("overwrite"):
            inner = writer.prepare_commit

            def prepare() -> Any:
                other.write(_rows(range(100, 105), "a", 0))  # lands before the overwrite
                return inner()

            writer.prepare_commit = prepare  # type: ignore[method-assign]
        return writer

    monkeypatch.setattr(Table, "new_write", racing)
    with pytest.raises(CommitConflictError, match="another job changed the partitions"):
        table.rescale_buckets(partitions=[{"dt": "a"}])
    monkeypatch.undo()
    assert sorted(r["id"] for r in table.read().to_pylist()) == [*range(10), *range(100, 105)]


def test_a_concurrent_compaction_is_no_conflict(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A compaction only rewrites rows: the rescale publishes over it (replacing its files
    too), and the rows are the model's."""
    table = catalog.create_table(
        "db.cc",
        schema=SCHEMA,
        partition_keys=["dt"],
        primary_keys=["id", "dt"],
        options={"bucket": "2"},
    )
    for v in range(3):
        table.write(_rows(range(0, 10), "a", v * 100))
    model = _model_read(table)
    real = Table.new_write

    def racing(self: Table, **kwargs: Any) -> Any:
        writer = real(self, **kwargs)
        inner = writer.prepare_commit

        def prepare() -> Any:
            # another job (opened after the alter) lands before the overwrite
            assert catalog.get_table("db.cc").compact(full=True) is not None
            return inner()

        writer.prepare_commit = prepare  # type: ignore[method-assign]
        return writer

    monkeypatch.setattr(Table, "new_write", racing)
    result = table.rescale_buckets(bucket=3)
    monkeypatch.undo()
    assert result.snapshot is not None
    assert _counts(table) == {"dt=a": {3}}
    assert _model_read(table) == model
