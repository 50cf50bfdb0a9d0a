"""Row-id groups of data-evolution files and the statistics a filter may prune a group by
(Paimon's ``DataEvolutionSplitRead.mergeRangesAndSort`` and its per-column supplier rule)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakeops.errors import CorruptTableError
from lakeops.format import binary_row
from lakeops.format.data_file import EMPTY_ROW, DataFileMeta, SimpleStats
from lakeops.format.schema import TableSchema
from lakeops.format.types import DataType
from lakeops.kv.evolution import SchemaEvolution
from lakeops.read.predicate import row_filter
from lakeops.read.row_tracking import GroupReader, row_id_groups

SCHEMA = TableSchema.from_arrow(
    pa.schema([("id", pa.int64()), ("s", pa.string())]),
    [],
    options={"row-tracking.enabled": "true", "data-evolution.enabled": "true"},
)
TYPES = [DataType.parse("BIGINT"), DataType.parse("STRING")]


def _file(
    name: str,
    first: int | None,
    rows: int,
    seq: int,
    write_cols: tuple[str, ...] | None = None,
    lo: list[Any] | None = None,
    hi: list[Any] | None = None,
) -> DataFileMeta:
    """A file's metadata; ``lo``/``hi``: min/max of its write columns (all when None)."""
    cols = list(write_cols) if write_cols is not None else ["id", "s"]
    types = [TYPES[["id", "s"].index(c)] for c in cols]
    stats = SimpleStats()
    if lo is not None and hi is not None:
        stats = SimpleStats(
            binary_row.serialize(lo, types), binary_row.serialize(hi, types), (0,) * len(cols)
        )
    return DataFileMeta(
        file_name=name,
        file_size=1,
        row_count=rows,
        min_key=EMPTY_ROW,
        max_key=EMPTY_ROW,
        key_stats=SimpleStats(),
        value_stats=stats,
        min_sequence_number=seq,
        max_sequence_number=seq,
        schema_id=0,
        level=0,
        value_stats_cols=None if lo is not None else (),
        first_row_id=first,
        write_cols=write_cols,
    )


def test_groups_by_overlapping_row_ids_newest_first() -> None:
    base = _file("a", 0, 3, 1)
    later = _file("b", 3, 2, 2)
    update = _file("c", 0, 3, 5, ("s",))
    tie = _file("d", 0, 3, 5, ("id",))
    loose = _file("e", None, 4, 9)
    groups = row_id_groups([later, base, update, loose, tie])
    assert [[f.file_name for f in g] for g in groups] == [["e"], ["c", "d", "a"], ["b"]]
    with pytest.raises(CorruptTableError, match="overlap in row ids"):
        row_id_groups([base, _file("x", 1, 3, 7, ("s",))])


def test_a_group_is_pruned_by_the_statistics_of_each_columns_supplier() -> None:
    evolution = SchemaEvolution(SCHEMA, lambda _: SCHEMA)
    groups = GroupReader(SimpleNamespace(schema=SCHEMA, evolution=evolution))  # type: ignore[arg-type]
    base = _file("a", 0, 3, 1, lo=[0, "a"], hi=[2, "b"])
    partial = _file("u", 0, 3, 2, ("s",))  # supplies s, no statistics
    full = _file("f", 0, 3, 3, lo=[0, "z"], hi=[2, "z"])  # supplies every column

    def may_hold(group: list[DataFileMeta], expr: pc.Expression) -> bool:
        rf = row_filter(expr, SCHEMA.arrow_schema())
        assert rf is not None
        return groups.may_hold(row_id_groups(group)[0], rf)

    assert not may_hold([base], pc.field("s") == "z")
    # the newest file supplies s: the base file's stale statistics must not prune the group
    assert may_hold([base, partial], pc.field("s") == "z")
    # id still comes from the base file, whose statistics rule id = 7 out
    assert not may_hold([base, partial], pc.field("id") == 7)
    # a newer full file supplies both: its statistics count, the base file's do not
    assert not may_hold([base, full], pc.field("s") == "a")
    assert may_hold([base, full], pc.field("s") == "z")


def test_system_columns_take_physical_values_and_fall_back_per_row() -> None:
    """A file may hold ``_ROW_ID`` / ``_SEQUENCE_NUMBER`` itself (Paimon's compaction writes
    them); a null there (or no such column) falls back to first row id + position and the
    file's max sequence number, as ``ColumnarRowIterator.assignRowTracking`` does."""
    physical = {
        "_ROW_ID": pa.chunked_array([pa.array([40, None, 42], pa.int64())]),
    }
    stub = SimpleNamespace(
        schema=SCHEMA,
        evolution=SchemaEvolution(SCHEMA, lambda _: SCHEMA),
        read_physical=lambda directory, f, names: {n: physical[n] for n in names if n in physical},
    )
    groups = GroupReader(stub)  # type: ignore[arg-type]
    f = _file("a", 10, 3, 7)
    got = groups.read("dir", [f], ["_ROW_ID", "_SEQUENCE_NUMBER"])
    assert got.to_pydict() == {"_ROW_ID": [40, 11, 42], "_SEQUENCE_NUMBER": [7, 7, 7]}
    assert got.schema.field("_ROW_ID").nullable is False
