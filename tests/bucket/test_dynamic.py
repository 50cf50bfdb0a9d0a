"""Dynamic bucket mode (bucket = -1): assignment rules, the HASH index files and index
manifest, and what compaction, overwrite, expiry and orphan cleanup do with them."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa
import pytest

from lakeops import Catalog, Table
from lakeops.bucket.dynamic import PartitionIndex, assigner_of, fill_buckets
from lakeops.format.bucket_hash import hash_rows
from lakeops.format.index_manifest import HASH_INDEX
from lakeops.format.types import DataType

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64())])


def _table(catalog: Catalog, name: str = "db.t", **options: str) -> Table:
    return catalog.create_table(
        name,
        schema=SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "-1", "dynamic-bucket.target-row-num": "100", **options},
    )


def _rows(ids, v: int, dt: str = "a") -> pa.Table:
    ids = list(ids)
    return pa.table({"dt": [dt] * len(ids), "id": ids, "v": [v] * len(ids)}, schema=SCHEMA)


def _keys_by_bucket(table: Table) -> dict[tuple[str, int], set[int]]:
    """Keys stored per (partition, bucket), read back from the data files of each split."""
    reader = table.split_reader()
    out: dict[tuple[str, int], set[int]] = {}
    for split in table.splits():
        ids = reader.read(split, ["id"]).column("id").to_pylist()
        out[(split.partition[0], split.bucket)] = set(ids)
    return out


def _id_hash(ids) -> np.ndarray:
    return hash_rows([pa.array(list(ids), pa.int64())], [DataType.parse("BIGINT NOT NULL")])


def test_fill_lowest_non_full_bucket_then_open_the_lowest_free_id() -> None:
    counts = {0: 3, 1: 1}
    got = fill_buckets(counts, 6, 3, lambda b: True, -1, np.zeros(6, np.int32))
    assert got.tolist() == [1, 1, 2, 2, 2, 3]
    assert counts == {0: 3, 1: 3, 2: 3, 3: 1}


def test_assigners_own_disjoint_bucket_ids_and_max_buckets_spreads() -> None:
    even, odd = {}, {}
    a = fill_buckets(even, 5, 2, lambda b: b % 2 == 0, -1, np.zeros(5, np.int32))
    b = fill_buckets(odd, 5, 2, lambda b: b % 2 == 1, -1, np.zeros(5, np.int32))
    assert set(a.tolist()) == {0, 2, 4} and set(b.tolist()) == {1, 3, 5}
    capped: dict[int, int] = {}
    hashes = np.arange(10, dtype=np.int32)
    got = fill_buckets(capped, 10, 2, lambda b: True, 3, hashes)
    assert got[:6].tolist() == [0, 0, 1, 1, 2, 2]
    assert set(got[6:].tolist()) <= {0, 1, 2} and sum(capped.values()) == 10


def test_assigner_routing_is_pauls_formula() -> None:
    hashes = np.array([7, -7, 12, -13], dtype=np.int32)
    # (|partHash % channels| + |keyHash % assigners|) % channels with Java's remainder
    assert assigner_of(-5, hashes, 3, 2).tolist() == [(2 + 1) % 3, (2 + 1) % 3, 2, (2 + 1) % 3]


def test_partition_index_keeps_known_keys_in_their_bucket() -> None:
    index = PartitionIndex(
        np.array([10, 20], np.int32),
        np.array([4, 7], np.int32),
        {4: 1, 7: 1},
        lambda b: True,
        2,
        -1,
    )
    got = index.assign(np.array([20, 30, 10, 30, 40, 50], np.int32))
    assert got.tolist() == [7, 4, 4, 4, 7, 0]  # 30 fills 4, 40 fills 7, 50 opens 0


def test_buckets_grow_to_the_target_and_existing_keys_stay(catalog: Catalog) -> None:
    table = _table(catalog)
    table.write(_rows(range(250), 1))
    first = _keys_by_bucket(table)
    assert sorted(first) == [("a", 0), ("a", 1), ("a", 2)]
    assert [len(first[("a", b)]) for b in range(3)] == [100, 100, 50]

    table.write(pa.concat_tables([_rows(range(200, 330), 2), _rows(range(5), 2, "b")]))
    second = _keys_by_bucket(table)
    for bucket_keys in first.values():  # every old key stayed where it was
        assert any(bucket_keys <= keys for keys in second.values())
    assert len(second[("a", 2)]) == 100 and len(second[("a", 3)]) == 30
    assert second[("b", 0)] == set(range(5))
    assert all(len(k) <= 100 for k in second.values())
    state = table.read().sort_by([("dt", "ascending"), ("id", "ascending")])
    assert state.num_rows == 330 + 5  # no key twice
    expected = {(r["dt"], r["id"]): r["v"] for r in state.to_pylist()}
    assert expected[("a", 199)] == 1 and expected[("a", 200)] == 2


def test_hash_index_files_hold_the_key_hashes_of_each_bucket(catalog: Catalog) -> None:
    table = _table(catalog)
    table.write(_rows(range(150), 1))
    snap1 = table.latest_snapshot()
    table.write(_rows(range(140, 160), 2))
    snap2 = table.latest_snapshot()
    entries = table.store.index_entries(snap2)
    assert all(e.file.index_type == HASH_INDEX and e.kind == 0 for e in entries)
    assert sorted(e.bucket for e in entries) == [0, 1]  # exactly one file per bucket
    for (_dt, bucket), keys in _keys_by_bucket(table).items():
        (entry,) = [e for e in entries if e.bucket == bucket]
        hashes = table.store.hash_index(entry)
        assert entry.file.row_count == len(hashes) == len(keys)
        assert sorted(hashes.tolist()) == sorted(_id_hash(sorted(keys)).tolist())
    # bucket 0 gained nothing in the second write: its file is inherited unchanged
    old = {e.bucket: e.file.file_name for e in table.store.index_entries(snap1)}
    new = {e.bucket: e.file.file_name for e in entries}
    assert new[0] == old[0] and new[1] != old[1]


def test_compaction_keeps_and_overwrite_replaces_the_index(catalog: Catalog) -> None:
    table = _table(catalog)
    table.write(pa.concat_tables([_rows(range(150), 1), _rows(range(30), 1, "b")]))
    table.write(_rows(range(100, 150), 2))
    before = table.latest_snapshot().index_manifest
    snapshot = table.compact(full=True)
    assert snapshot is not None and snapshot.commit_kind == "COMPACT"
    assert snapshot.index_manifest == before

    writer = table.new_write(overwrite=True)
    writer.write(_rows(range(10), 3))
    table.commit(writer.prepare_commit(), overwrite=[{"dt": "a"}])
    entries = table.store.index_entries(table.latest_snapshot())
    by_part = Counter(e.partition for e in entries)
    assert len(by_part) == 2 and sorted(by_part.values()) == [1, 1]
    (a_entry,) = [e for e in entries if e.file.row_count == 10]
    assert a_entry.bucket == 0
    assert table.read(filter=[("dt", "=", "a")]).num_rows == 10


def test_expiry_and_orphan_cleanup_respect_index_files(catalog: Catalog) -> None:
    import datetime as dt
    import os

    table = _table(catalog, **{"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    for v in range(3):
        table.write(_rows(range(v * 60, v * 60 + 80), v))
    index_dir = os.path.join(table.root, "index")
    live = {e.file.file_name for e in table.store.index_entries(table.latest_snapshot())}
    assert set(os.listdir(index_dir)) > live  # superseded files of older snapshots
    table.expire_snapshots()
    assert set(os.listdir(index_dir)) == live
    removed = table.remove_orphan_files(older_than=dt.timedelta(0), force=True)
    assert not [p for p in removed.deleted if "/index/" in p or "index-manifest" in p]
    assert set(os.listdir(index_dir)) == live
    assert table.read().num_rows == 200


def test_bucket_key_is_refused_in_dynamic_mode(catalog: Catalog) -> None:
    from lakeops.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="bucket-key"):
        _table(catalog, **{"bucket-key": "id"})


def test_lookup_finds_keys_in_any_dynamic_bucket(catalog: Catalog) -> None:
    table = _table(catalog, **{"merge-engine": "first-row"})
    table.write(_rows(range(250), 1))
    table.flush_level0()
    keys = pa.table({"dt": ["a", "a", "a", "b"], "id": [3, 120, 249, 3]})
    got = table.lookup(keys).sort_by("id")
    assert got.column("id").to_pylist() == [3, 120, 249]
