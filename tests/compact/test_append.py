"""Which files Paimon's append compaction picks, on hand-worked cases from Paimon 0.9's
``BucketedAppendCompactManager`` and ``UnawareAppendTableCompactionCoordinator``."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.compact.append import pick_bucket_windows, pick_group_bins, pick_unaware_bins
from lakeops.format.data_file import DataFileMeta, SimpleStats
from lakeops.options.append import AppendOptions

OPTS = AppendOptions(
    target_file_size=100, min_file_num=3, bucket_max_file_num=5, unaware_max_file_num=4
)


def _files(*sizes: int) -> list[DataFileMeta]:
    """Files of these sizes, in sequence order (10 rows each)."""
    return [
        DataFileMeta(
            f"f{i}", size, 10, b"", b"", SimpleStats(), SimpleStats(), 10 * i, 10 * i + 9, 0, 0
        )
        for i, size in enumerate(sizes)
    ]


def _names(picked: list[list[DataFileMeta]]) -> list[list[str]]:
    return [[f.file_name for f in window] for window in picked]


@pytest.mark.parametrize(
    ("sizes", "full", "expected"),
    [
        # max-file-num reached before the target size: one window of five
        ((1, 1, 1, 1, 1, 1), False, [["f0", "f1", "f2", "f3", "f4"]]),
        # target reached with three files
        ((40, 40, 40, 1), False, [["f0", "f1", "f2"]]),
        # target reached with too few files: the oldest leaves the window, then 3 files
        ((90, 20, 10, 80, 1), False, [["f1", "f2", "f3"]]),
        # nothing reaches either bound
        ((10, 10), False, []),
        # windows repeat on the files after each window
        ((1,) * 10, False, [["f0", "f1", "f2", "f3", "f4"], ["f5", "f6", "f7", "f8", "f9"]]),
        # full: leading large files stay, the rest (mostly small) are rewritten
        ((200, 150, 10, 300, 10, 10), True, [["f2", "f3", "f4", "f5"]]),
        # full: as many large files as small ones: nothing
        ((10, 200, 10, 300), True, []),
        # full: fewer than three files: nothing
        ((10, 10), True, []),
    ],
)
def test_fixed_bucket_windows(
    sizes: tuple[int, ...], full: bool, expected: list[list[str]]
) -> None:
    files = _files(*sizes)
    assert _names(pick_bucket_windows(list(reversed(files)), OPTS, full)) == expected


@pytest.mark.parametrize(
    ("sizes", "full", "expected"),
    [
        # files at 70 % of the target or more never join; the rest by size, bins of 4 files
        ((5, 70, 3, 1, 2, 4, 69), False, [["f3", "f4", "f2", "f5"]]),
        # the target size with at least min-file-num files closes a bin
        ((50, 60, 30, 20), False, [["f3", "f2", "f0"]]),
        # an unfilled last bin waits, unless the compaction is full
        ((1, 2), False, []),
        ((1, 2), True, [["f0", "f1"]]),
        ((1,), True, []),
    ],
)
def test_unaware_bins(sizes: tuple[int, ...], full: bool, expected: list[list[str]]) -> None:
    assert _names(pick_unaware_bins(_files(*sizes), OPTS, full)) == expected


def test_with_deletion_vectors_files_with_vectors_are_always_compacted() -> None:
    """Paimon 0.9 with a deletion-vector maintainer: an unaware partition compacts every file
    with a vector whatever its size, grouped by the index file holding it, and bins the rest;
    a fixed bucket's full compaction keeps only leading large files without a vector and
    rewrites the rest, even one file."""
    files = _files(500, 5, 300, 7, 9, 400)
    index = {"f0": "i1", "f2": "i2", "f3": "i1"}

    def vector_of(f: DataFileMeta) -> str | None:
        return index.get(f.file_name)

    assert _names(pick_unaware_bins(files, OPTS, False, vector_of)) == [["f0", "f3"], ["f2"]]
    assert _names(pick_unaware_bins(files, OPTS, True, vector_of)) == [
        ["f0", "f3"],
        ["f2"],
        ["f1", "f4"],
    ]
    assert _names(pick_bucket_windows(files, OPTS, True, vector_of)) == [
        ["f0", "f1", "f2", "f3", "f4", "f5"]
    ]
    assert _names(pick_bucket_windows(_files(500, 5), OPTS, True, lambda f: None)) == [["f1"]]
    assert _names(pick_bucket_windows(_files(500, 5), OPTS, True)) == []
    assert pick_bucket_windows(_files(500, 600), OPTS, True, lambda f: None) == []


def test_compaction_rewrites_in_order_and_continues_the_sequence(catalog: Catalog) -> None:
    schema = pa.schema([("k", pa.int64())])
    table = catalog.create_table("db.t", schema=schema, options={"bucket": "1", "bucket-key": "k"})
    for i in range(3):
        table.write(pa.table({"k": list(range(10 * i, 10 * i + 10))}, schema=schema))
    before = table.splits()[0].files
    snapshot = table.compact(full=True)
    assert snapshot is not None and snapshot.commit_kind == "COMPACT"
    (after,) = table.splits()[0].files
    assert after.file_source == 1 and after.level == 0
    assert (after.min_sequence_number, after.max_sequence_number) == (
        before[0].min_sequence_number,
        before[-1].max_sequence_number,
    )
    assert table.read().column("k").to_pylist() == list(range(30))
    assert table.compact(full=True) is None  # one file: nothing to do


def test_the_optimize_dag_plans_the_partitions_with_small_files(catalog: Catalog) -> None:
    from lakeops.airflow.conditions import optimize_units

    schema = pa.schema([("dt", pa.date32()), ("k", pa.int64())])
    table = catalog.create_table("db.t", schema=schema, partition_keys=["dt"])
    day1, day2 = dt.date(2024, 1, 1), dt.date(2024, 1, 2)
    table.write(pa.table({"dt": [day1, day2], "k": [1, 2]}, schema=schema))
    table.write(pa.table({"dt": [day1], "k": [3]}, schema=schema))
    # only day 1 holds two small files
    assert optimize_units(catalog, ["db.t"]) == [
        {"table": "db.t", "partitions": [{"dt": "2024-01-01"}]}
    ]
    table.compact(full=True, partitions=[{"dt": "2024-01-01"}])
    assert optimize_units(catalog, ["db.t"]) == []
    assert sorted(table.read().column("k").to_pylist()) == [1, 2, 3]


def test_a_compaction_whose_inputs_were_replaced_commits_nothing(
    catalog: Catalog, warehouse
) -> None:
    from lakeops import CommitConflictError
    from lakeops.compact.append import plan

    schema = pa.schema([("k", pa.int64())])
    table = catalog.create_table("db.t", schema=schema)
    for i in range(3):
        table.write(pa.table({"k": [i]}, schema=schema))
    stale = plan(table.context, full=True, partitions=None, parallelism=1)
    assert table.compact(full=True) is not None  # another job compacts first
    with pytest.raises(CommitConflictError):
        table.commit_compaction(stale.messages, written=stale.written)
    live = {f.file_name for s in table.splits() for f in s.files}
    assert {p.name for p in (warehouse / "db.db" / "t" / "bucket-0").iterdir()} >= live
    assert not any(
        (warehouse / "db.db" / "t" / "bucket-0" / p.rsplit("/", 1)[-1]).exists()
        for p in stale.written
    )
    assert sorted(table.read().column("k").to_pylist()) == [0, 1, 2]


def _ranged(name: str, first: int, rows: int, size: int, seq: int) -> DataFileMeta:
    return DataFileMeta(
        name, size, rows, b"", b"", SimpleStats(), SimpleStats(), seq, seq, 0, 0,
        first_row_id=first,
    )  # fmt: skip


def test_data_evolution_bins_are_runs_of_row_id_groups() -> None:
    """Groups (a file and its column updates) of ids [0,10) (two files), [10,20), [20,30)
    (large, alone: nothing to merge), [30,40) (two files), [50,60) (does not follow), and a
    large group of two files: Paimon's coordinator compacts a group of several files even
    alone, never a run across a gap or a lone large file."""
    files = [
        _ranged("a", 0, 10, 10, 1),
        _ranged("a-upd", 0, 10, 5, 4),
        _ranged("b", 10, 10, 10, 2),
        _ranged("big", 20, 10, 90, 3),
        _ranged("c", 30, 10, 10, 5),
        _ranged("c-upd", 30, 10, 5, 6),
        _ranged("d", 50, 10, 10, 7),
        _ranged("e", 60, 10, 150, 8),
        _ranged("e-upd", 60, 10, 20, 9),
    ]
    full = _names(pick_group_bins(files, OPTS, full=True))
    assert full == [["a-upd", "a", "b"], ["c-upd", "c"], ["e-upd", "e"]]
    # not full: the unfilled bins wait, the group above the target size does not
    assert _names(pick_group_bins(files, OPTS, full=False)) == [["e-upd", "e"]]
