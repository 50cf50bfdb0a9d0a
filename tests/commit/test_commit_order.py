"""Commit order is sequence order within a bucket, and every bucket mode is safe with
concurrent writers. Writers are opened on the same snapshot and committed in a fixed order
(deterministic interleavings, no sleeps); results are judged by a plain model and by pypaimon,
before and after full compaction."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from lakeops import Catalog, StaleWriteError
from tests.interop.oracle import oracle_read, oracle_script

KV = pa.schema([("id", pa.int64()), ("v", pa.string())])
N = 300


def _rows(table: pa.Table, *cols: str) -> dict[int, tuple]:
    ids = table.column("id").to_pylist()
    values = [table.column(c).to_pylist() for c in cols]
    return {i: tuple(v[n] for v in values) for n, i in enumerate(ids)}


def _kv(ids: list[int], tag: str) -> pa.Table:
    return pa.table({"id": ids, "v": [f"{tag}{i}" for i in ids]}, schema=KV)


@pytest.mark.interop
def test_the_later_commit_wins_before_and_after_compaction(
    catalog: Catalog, warehouse: Path
) -> None:
    table = catalog.create_table("db.t", schema=KV, primary_keys=["id"], options={"bucket": "2"})
    table.write(_kv(list(range(N)), "base"))
    first, second = table.new_write(), table.new_write()  # both see snapshot 1
    first.write(_kv(list(range(N)), "first"))
    second.write(_kv(list(reversed(range(N))), "second"))
    table.commit(first.prepare_commit())
    snapshot = table.commit(second.prepare_commit())
    assert snapshot is not None

    # structure: every file the second commit added sorts above every file the first added
    by_bucket: dict[int, list[tuple[int, int]]] = {}
    for sid in (2, 3):
        for e in table.store.delta_entries(table.store.snapshot(sid)):
            by_bucket.setdefault(e.bucket, []).append(
                (e.file.min_sequence_number, e.file.max_sequence_number)
            )
    for ranges in by_bucket.values():
        (_lo1, hi1), (lo2, _hi2) = ranges
        assert lo2 > hi1

    expected = {i: (f"second{i}",) for i in range(N)}
    assert _rows(catalog.get_table("db.t").read(), "v") == expected
    assert _rows(oracle_read(warehouse, "db.t"), "v") == expected
    catalog.get_table("db.t").compact(full=True)
    assert _rows(catalog.get_table("db.t").read(), "v") == expected
    assert _rows(oracle_read(warehouse, "db.t"), "v") == expected
    # the first writer's originals were replaced by nothing: the second's were re-sequenced
    # copies, and the originals it wrote are gone from the bucket directories
    live = {e.file.file_name for e in table.store.live_entries(table.store.latest_snapshot())}
    on_disk = {p.name for p in (warehouse / "db.db/t").glob("bucket-*/data-*")}
    assert live <= on_disk


WIDE = pa.schema([("id", pa.int64()), ("a", pa.int64()), ("b", pa.int64())])


def _wide(ids: list[int], column: str, value: int) -> pa.Table:
    other = "b" if column == "a" else "a"
    return pa.table(
        {"id": ids, column: [value] * len(ids), other: pa.nulls(len(ids), pa.int64())},
        schema=WIDE,
    )


@pytest.mark.interop
@pytest.mark.parametrize(
    "options",
    [
        {"merge-engine": "partial-update"},
        {
            "merge-engine": "aggregation",
            "fields.a.aggregate-function": "last_non_null_value",
            "fields.b.aggregate-function": "last_non_null_value",
        },
    ],
    ids=["partial-update", "aggregation"],
)
def test_two_streams_of_disjoint_columns_keep_every_latest_value(
    catalog: Catalog, warehouse: Path, options: dict[str, str]
) -> None:
    """The wide table of the design documents: stream A writes column a, stream B column b,
    each from a writer opened before the other's commit and a compaction in between."""
    table = catalog.create_table(
        "db.w", schema=WIDE, primary_keys=["id"], options={"bucket": "2", **options}
    )
    ids = list(range(N))
    table.write(_wide(ids, "a", 0))
    table.write(_wide(ids, "b", 0))
    for round_ in range(1, 4):
        stream_a, stream_b = table.new_write(), table.new_write()  # same snapshot
        stream_b.write(_wide(ids, "b", round_))
        table.commit(stream_b.prepare_commit())
        catalog.get_table("db.w").compact(full=True)  # merges b's rows with older a values
        stream_a.write(_wide(list(reversed(ids)), "a", round_))
        table.commit(stream_a.prepare_commit())
        expected = {i: (round_, round_) for i in ids}
        assert _rows(catalog.get_table("db.w").read(), "a", "b") == expected
        catalog.get_table("db.w").compact(full=True)
        assert _rows(catalog.get_table("db.w").read(), "a", "b") == expected
    assert _rows(oracle_read(warehouse, "db.w"), "a", "b") == expected


def test_a_user_sequence_field_keeps_the_users_order(catalog: Catalog) -> None:
    schema = pa.schema([("id", pa.int64()), ("ts", pa.int64()), ("v", pa.string())])
    table = catalog.create_table(
        "db.s", schema=schema, primary_keys=["id"], options={"bucket": "1", "sequence.field": "ts"}
    )
    late, early = table.new_write(), table.new_write()
    late.write(pa.table({"id": [1, 2], "ts": [10, 10], "v": ["new", "new"]}, schema=schema))
    early.write(pa.table({"id": [1, 2], "ts": [5, 5], "v": ["old", "old"]}, schema=schema))
    table.commit(late.prepare_commit())
    table.commit(early.prepare_commit())  # committed later, but older by the user's field
    for _ in range(2):
        got = catalog.get_table("db.s").read()
        assert sorted(got.column("v").to_pylist()) == ["new", "new"]
        catalog.get_table("db.s").compact(full=True)


def _count_keys(table: pa.Table) -> tuple[int, int]:
    ids = table.column("id").to_pylist()
    return len(ids), len(set(ids))


@pytest.mark.interop
def test_dynamic_bucket_writers_on_one_snapshot_never_duplicate_keys(
    catalog: Catalog, warehouse: Path
) -> None:
    table = catalog.create_table(
        "db.d",
        schema=KV,
        primary_keys=["id"],
        options={"bucket": "-1", "dynamic-bucket.target-row-num": "100"},
    )
    table.write(_kv(list(range(50)), "base"))
    first, second = table.new_write(), table.new_write()
    first.write(_kv(list(range(40, 200)), "first"))  # new keys 50..199
    second.write(_kv(list(range(100, 260)), "second"))  # new keys, some the same
    table.commit(first.prepare_commit())
    before = sorted(p.name for p in warehouse.rglob("*") if p.is_file())
    messages = second.prepare_commit()
    with pytest.raises(StaleWriteError, match="dynamic-bucket"):
        table.commit(messages)
    second.abort()
    assert sorted(p.name for p in warehouse.rglob("*") if p.is_file()) == before
    # the same rows through Table.write are re-planned on the new snapshot
    catalog.get_table("db.d").write(_kv(list(range(100, 260)), "again"))
    expected = {
        i: ("base" if i < 40 else "first" if i < 100 else "again") + str(i) for i in range(260)
    }
    for got in (catalog.get_table("db.d").read(), oracle_read(warehouse, "db.d")):
        assert _count_keys(got) == (260, 260)
        assert {k: v[0] for k, v in _rows(got, "v").items()} == expected


def test_dynamic_bucket_writers_without_new_keys_both_commit(catalog: Catalog) -> None:
    table = catalog.create_table("db.d2", schema=KV, primary_keys=["id"], options={"bucket": "-1"})
    table.write(_kv(list(range(100)), "base"))
    first, second = table.new_write(), table.new_write()
    first.write(_kv(list(range(0, 60)), "first"))
    second.write(_kv(list(range(40, 100)), "second"))
    table.commit(first.prepare_commit())
    table.commit(second.prepare_commit())  # only known keys: their buckets still hold
    got = {k: v[0] for k, v in _rows(catalog.get_table("db.d2").read(), "v").items()}
    assert got == {i: ("first" if i < 40 else "second") + str(i) for i in range(100)}


@pytest.mark.interop
def test_a_dynamic_bucket_writer_of_known_keys_is_stale_after_a_rollback(
    catalog: Catalog, warehouse: Path
) -> None:
    """A writer that found every key in the index at its base adds no index file. A rollback
    committed meanwhile can take those keys out of the index, and a writer after it places them
    in other buckets: the first writer's rows would then duplicate its keys. It is refused as
    stale and re-planned; the table keeps one row per key (the model, and pypaimon)."""
    table = catalog.create_table(
        "db.r",
        schema=KV,
        primary_keys=["id"],
        options={"bucket": "-1", "dynamic-bucket.target-row-num": "10"},
    )
    table.write(_kv(list(range(10)), "base"))  # snapshot 1: bucket 0 full
    table.write(_kv(list(range(10, 30)), "more"))  # snapshot 2: keys 10..29 in buckets 1, 2
    stale = table.new_write()
    stale.write(_kv(list(range(20, 30)), "stale"))  # every key known at snapshot 2
    messages = stale.prepare_commit()
    assert not any(m.new_index_files for m in messages)
    table.rollback_to(1)  # keys 10..29 are gone again
    table.write(_kv(list(range(20, 30)), "after"))  # placed anew, in the lowest free bucket
    with pytest.raises(StaleWriteError, match="dynamic-bucket"):
        table.commit(messages)
    stale.abort()
    catalog.get_table("db.r").write(_kv(list(range(20, 30)), "again"))
    expected = {i: ("base" if i < 10 else "again") + str(i) for i in [*range(10), *range(20, 30)]}
    for got in (catalog.get_table("db.r").read(), oracle_read(warehouse, "db.r")):
        assert _count_keys(got) == (20, 20)
        assert {k: v[0] for k, v in _rows(got, "v").items()} == expected


@pytest.mark.interop
def test_a_dynamic_bucket_writer_is_stale_after_paimons_own_rollback(
    catalog: Catalog, warehouse: Path
) -> None:
    """Paimon's own rollback (here pypaimon's) deletes the newer snapshots: the latest snapshot
    is then older than a writer's base, and what happened since is unknown. A writer of known
    keys is refused as stale there, not committed into buckets the rolled-back index no longer
    names (a later write would place those keys again elsewhere)."""
    table = catalog.create_table(
        "db.p",
        schema=KV,
        primary_keys=["id"],
        options={"bucket": "-1", "dynamic-bucket.target-row-num": "10"},
    )
    table.write(_kv(list(range(10)), "base"))
    table.write(_kv(list(range(10, 30)), "more"))
    stale = table.new_write()
    stale.write(_kv(list(range(20, 30)), "stale"))
    messages = stale.prepare_commit()
    oracle_script(warehouse, [{"op": "rollback", "table": "db.p", "to": 1}])
    assert table.store.snapshot_ids() == [1]
    with pytest.raises(StaleWriteError, match="dynamic-bucket"):
        table.commit(messages)
    stale.abort()
    catalog.get_table("db.p").write(_kv(list(range(20, 30)), "again"))
    catalog.get_table("db.p").write(_kv(list(range(25, 30)), "last"))
    expected = {i: f"base{i}" for i in range(10)}
    expected |= {i: ("again" if i < 25 else "last") + str(i) for i in range(20, 30)}
    for got in (catalog.get_table("db.p").read(), oracle_read(warehouse, "db.p")):
        assert _count_keys(got) == (20, 20)
        assert {k: v[0] for k, v in _rows(got, "v").items()} == expected


PARTED = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.string())])


@pytest.mark.interop
def test_cross_partition_writers_on_one_snapshot_never_duplicate_keys(
    catalog: Catalog, warehouse: Path
) -> None:
    table = catalog.create_table(
        "db.x", schema=PARTED, primary_keys=["id"], partition_keys=["p"], options={"bucket": "-1"}
    )

    def rows(ids: list[int], p: str, tag: str) -> pa.Table:
        return pa.table(
            {"id": ids, "p": [p] * len(ids), "v": [f"{tag}{i}" for i in ids]}, schema=PARTED
        )

    table.write(rows(list(range(100)), "x", "base"))
    first, second = table.new_write(), table.new_write()
    first.write(rows(list(range(50)), "y", "first"))  # moves keys 0..49 to y
    second.write(rows(list(range(25, 75)), "z", "second"))  # moves 25..74 to z
    table.commit(first.prepare_commit())
    with pytest.raises(StaleWriteError, match="cross-partition"):
        table.commit(second.prepare_commit())
    second.abort()
    catalog.get_table("db.x").write(rows(list(range(25, 75)), "z", "again"))
    expected = {
        i: ("y", f"first{i}") if i < 25 else ("z", f"again{i}") if i < 75 else ("x", f"base{i}")
        for i in range(100)
    }
    for got in (catalog.get_table("db.x").read(), oracle_read(warehouse, "db.x")):
        assert _count_keys(got) == (100, 100)
        assert _rows(got, "p", "v") == expected
