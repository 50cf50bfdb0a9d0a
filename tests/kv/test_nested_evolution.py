"""Nested schema evolution on read (:func:`lakeops.kv.evolution.read_cast` on ROW, ARRAY and MAP
columns): values written under an older ROW shape read as the current one, field by field id,
checked against plain Python models of the same rows; and a whole append table altered and
compacted."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.format.schema_change import AddColumn, DropColumn, RenameColumn, UpdateColumnType
from lakeops.format.types import DataType
from lakeops.kv.evolution import can_read_as, needs_cast, read_cast


def _row(*fields: tuple[int, str, str]) -> dict[str, Any]:
    return {"type": "ROW", "fields": [{"id": i, "name": n, "type": t} for i, n, t in fields]}


OLD = DataType.parse(_row((1, "a", "INT"), (2, "b", "STRING"), (3, "gone", "INT")))
#: ``a`` widened and renamed ``alpha``, ``gone`` dropped, ``c`` added, ``b`` moved last
NEW = DataType.parse(_row((1, "alpha", "BIGINT"), (4, "c", "STRING"), (2, "b", "STRING")))


def _as_new(v: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if v is None else {"alpha": v["a"], "c": None, "b": v["b"]}


ROWS = [
    {"a": 1, "b": "x", "gone": 7},
    None,
    {"a": None, "b": None, "gone": None},
    {"a": -5, "b": "y", "gone": 1},
    None,
    {"a": 2**31 - 1, "b": "", "gone": 0},
]


@pytest.mark.parametrize(("offset", "length"), [(0, 6), (1, 4), (3, 3), (2, 0)])
def test_a_row_reads_by_field_id_also_sliced(offset: int, length: int) -> None:
    values = pa.array(ROWS, OLD.to_arrow()).slice(offset, length)
    got = read_cast(values, OLD, NEW)
    assert got.type == NEW.to_arrow()
    assert got.to_pylist() == [_as_new(v) for v in ROWS[offset : offset + length]]


def test_rows_inside_lists_and_map_values_and_chunks() -> None:
    old_list = DataType.parse(
        {"type": "ARRAY", "element": _row((1, "a", "INT"), (2, "b", "STRING"), (3, "gone", "INT"))}
    )
    new_list = DataType.parse({"type": "ARRAY", "element": NEW.to_json()})
    lists = [[ROWS[0], None, ROWS[3]], None, [], [ROWS[2]], [ROWS[5], ROWS[0]]]
    chunks = pa.chunked_array(
        [pa.array(lists[:2], old_list.to_arrow()), pa.array(lists, old_list.to_arrow()).slice(2)]
    )
    got = read_cast(chunks, old_list, new_list)
    assert got.to_pylist() == [None if v is None else [_as_new(r) for r in v] for v in lists]

    old_map = DataType.parse({"type": "MAP", "key": "STRING NOT NULL", "value": OLD.to_json()})
    new_map = DataType.parse({"type": "MAP", "key": "STRING NOT NULL", "value": NEW.to_json()})
    maps = [[("k1", ROWS[0]), ("k2", None)], None, [], [("k3", ROWS[3])]]
    values = pa.array(maps, old_map.to_arrow()).slice(1)
    got = read_cast(values, old_map, new_map)
    expected = [None if m is None else [(k, _as_new(v)) for k, v in m] for m in maps[1:]]
    assert got.to_pylist() == expected


def test_what_reads_and_what_does_not() -> None:
    assert can_read_as(OLD, NEW)
    assert needs_cast(OLD, NEW)
    # the same shape under other ids (a field dropped and re-added) still needs mapping
    re_added = DataType.parse(_row((1, "a", "INT"), (9, "b", "STRING"), (3, "gone", "INT")))
    assert needs_cast(OLD, re_added) and OLD.to_arrow() == re_added.to_arrow()
    assert read_cast(pa.array(ROWS[:1], OLD.to_arrow()), OLD, re_added).to_pylist() == [
        {"a": 1, "b": None, "gone": 7}
    ]
    narrowed = DataType.parse(_row((1, "a", "SMALLINT")))
    assert not can_read_as(OLD, narrowed)
    old_set = DataType.parse({"type": "MULTISET", "element": OLD.to_json()})
    new_set = DataType.parse({"type": "MULTISET", "element": NEW.to_json()})
    assert not can_read_as(old_set, new_set)


def test_an_append_table_altered_nested_reads_and_compacts_like_the_model(
    catalog: Catalog,
) -> None:
    schema = pa.schema([("id", pa.int64()), ("r", OLD.to_arrow())])
    table = catalog.create_table("db.a", schema=schema, options={"bucket": "-1"})
    model: list[dict[str, Any]] = []
    for batch in range(3):
        ids = [batch * 10 + i for i in range(len(ROWS))]
        table.write(pa.table({"id": ids, "r": ROWS}, schema=schema))
        model += [{"id": i, "r": _as_new(r)} for i, r in zip(ids, ROWS, strict=True)]
    table.alter(
        [
            RenameColumn(("r", "a"), "alpha"),
            UpdateColumnType(("r", "alpha"), DataType.parse("BIGINT")),
            DropColumn(("r", "gone")),
            AddColumn(("r", "c"), DataType.parse("STRING")),
        ]
    )
    # ``b`` is not moved by these changes: the model's order is the table's
    model = [
        {
            "id": m["id"],
            "r": None if m["r"] is None else {k: m["r"][k] for k in ("alpha", "b", "c")},
        }
        for m in model
    ]
    new_rows = [{"id": 100, "r": {"alpha": 2**40, "b": "new", "c": "c"}}]
    table.write(pa.Table.from_pylist(new_rows, schema=table.arrow_schema))
    model += new_rows
    assert sorted(table.read().to_pylist(), key=lambda r: r["id"]) == model
    table.compact(full=True)
    assert sorted(table.read().to_pylist(), key=lambda r: r["id"]) == model
    assert set(table.metadata_table("files").column("schema_id").to_pylist()) == {1}
