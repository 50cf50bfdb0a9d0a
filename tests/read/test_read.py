"""The read path: projection, pruning, time travel, deletes, first-row level-0 rule."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakeops import Catalog, ConfigurationError

SCHEMA = pa.schema(
    [("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64()), ("op", pa.string())]
)


@pytest.fixture
def table(catalog: Catalog):
    t = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "2", "rowkind.field": "op"},
    )
    ids = list(range(100))
    t.write(pa.table({"dt": ["a"] * 100, "id": ids, "v": ids, "op": ["+I"] * 100}))
    t.write(pa.table({"dt": ["b"] * 100, "id": ids, "v": ids, "op": ["+I"] * 100}))
    t.write(
        pa.table(
            {"dt": ["a", "a", "b"], "id": [1, 2, 3], "v": [-1, -2, -3], "op": ["+U", "-D", "-D"]}
        )
    )
    return t


def test_merged_state(table) -> None:
    rows = {(r["dt"], r["id"]): r["v"] for r in table.read().to_pylist()}
    assert len(rows) == 198
    assert rows[("a", 1)] == -1 and ("a", 2) not in rows and ("b", 3) not in rows


def test_time_travel(table) -> None:
    assert table.read(snapshot_id=1).num_rows == 100
    assert table.read(snapshot_id=2).num_rows == 200
    assert [s.id for s in table.snapshots()] == [1, 2, 3]


def test_partition_pruning(table) -> None:
    assert {s.partition for s in table.splits(filter=[("dt", "=", "b")])} == {("b",)}
    result = table.read(filter=[("dt", "=", "b"), ("id", "<", 5)])
    assert sorted(result.column("id").to_pylist()) == [0, 1, 2, 4]


def test_key_range_pruning_skips_files(table) -> None:
    all_files = sum(len(s.files) for s in table.splits())
    pruned = sum(len(s.files) for s in table.splits(filter=[("id", "=", 1)]))
    assert pruned < all_files
    assert table.read(filter=[("id", "=", 1)]).sort_by("dt").column("v").to_pylist() == [-1, 1]


def test_or_filters(table) -> None:
    result = table.read(filter=[[("dt", "=", "a"), ("id", "=", 5)], [("id", "in", [7, 8])]])
    assert sorted((r["dt"], r["id"]) for r in result.to_pylist()) == [
        ("a", 5),
        ("a", 7),
        ("a", 8),
        ("b", 7),
        ("b", 8),
    ]


def test_projection_reads_only_needed_columns(table, monkeypatch) -> None:
    seen: list[list[str]] = []
    original = pq.ParquetFile.iter_batches

    def spy(self, *args, columns=None, **kw):
        seen.append(list(columns))
        return original(self, *args, columns=columns, **kw)

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", spy)
    result = table.read(columns=["id"])
    assert result.column_names == ["id"] and result.num_rows == 198
    assert seen and all("v" not in cols and "op" not in cols for cols in seen)


def test_bad_read_arguments(table) -> None:
    with pytest.raises(ConfigurationError, match="unknown column"):
        table.read(columns=["nope"])
    with pytest.raises(ConfigurationError, match="operator"):
        table.read(filter=[("id", "~", 1)])


def test_first_row_level0_is_invisible_until_flushed(catalog: Catalog) -> None:
    schema = pa.schema([("id", pa.int64()), ("v", pa.int64())])
    t = catalog.create_table(
        "db.fr",
        schema=schema,
        primary_keys=["id"],
        options={"bucket": "1", "merge-engine": "first-row", "write-only": "true"},
    )
    t.write(pa.table({"id": [1, 1, 2], "v": [1, 2, 3]}))
    assert t.read().num_rows == 0  # level 0 only: invisible to batch reads
    assert t.lookup(pa.table({"id": [1, 2]})).num_rows == 0  # and to lookups
    (entry,) = t.store.live_entries(t.latest_snapshot())
    data = pq.read_table(f"{t.root}/bucket-0/{entry.file.file_name}")
    assert data.column("v").to_pylist() == [1, 3]  # the write buffer kept the first row
    snapshot = t.flush_level0()
    assert snapshot is not None and snapshot.commit_kind == "COMPACT"
    assert sorted(t.read().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "v": 1},
        {"id": 2, "v": 3},
    ]
    assert t.lookup(pa.table({"id": [2]})).to_pylist() == [{"id": 2, "v": 3}]
    assert t.flush_level0() is None  # nothing left at level 0
