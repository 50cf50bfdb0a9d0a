"""Bad input is rejected with a clear error before anything is written."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from lakeops import Catalog, DataValidationError, Table
from lakeops.format.schema_change import SetOption

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int32()), ("s", pa.string()), ("op", pa.string())])


@pytest.fixture
def table(catalog: Catalog) -> Table:
    t = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "2", "rowkind.field": "op"}
    )
    t.write(pa.table({"id": [1], "v": [1], "s": ["a"], "op": ["+I"]}))
    return t


def _files(root: str) -> set[str]:
    return {str(p) for p in Path(root).rglob("*") if p.is_file()}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"id": [2, None], "v": [1, 2], "s": ["x", "y"], "op": ["+I", "+I"]},
            "primary-key column 'id' has 1 null",
        ),
        ({"id": [2], "v": [1], "op": ["+I"]}, "missing column\\(s\\) \\['s'\\]"),
        ({"id": [2], "v": [1], "s": ["x"], "op": ["+I"], "zz": [1]}, "'zz'"),
        ({"id": [2], "v": ["abc"], "s": ["x"], "op": ["+I"]}, "column 'v' has type string"),
        ({"id": [2], "v": [1.5], "s": ["x"], "op": ["+I"]}, "column 'v' has type double"),
        ({"id": [2], "v": [2**40], "s": ["x"], "op": ["+I"]}, "column 'v'"),
        (
            {"id": [2, 3], "v": [1, 2], "s": ["x", "y"], "op": ["+I", "DELETE"]},
            "unknown row kind\\(s\\) \\['DELETE'\\]",
        ),
        ({"id": [2], "v": [1], "s": ["x"], "op": [None]}, "unknown row kind"),
    ],
)
def test_rejected_before_anything_is_written(table: Table, data: dict, message: str) -> None:
    before = _files(table.root)
    with pytest.raises(DataValidationError, match=message):
        table.write(pa.table(data))
    assert _files(table.root) == before
    assert table.latest_snapshot().id == 1


def test_bad_batch_late_in_a_stream_leaves_table_unchanged(table: Table) -> None:
    # a tiny buffer forces flushes (files on disk) before the bad batch arrives
    table.alter(SetOption("write-buffer-size", "1000 b"))
    before = _files(table.root)
    good = pa.table(
        {"id": list(range(10, 1000)), "v": [1] * 990, "s": ["x"] * 990, "op": ["+I"] * 990}
    )
    bad = pa.table(
        {"id": [None], "v": [1], "s": ["x"], "op": ["+I"]},
        schema=pa.schema(
            [("id", pa.int64()), ("v", pa.int32()), ("s", pa.string()), ("op", pa.string())]
        ),
    )
    writer_input = iter([good, good, bad])
    with pytest.raises(DataValidationError):
        table.write(writer_input)
    assert _files(table.root) == before
    assert table.read().num_rows == 1


def test_safe_casts_are_accepted(table: Table) -> None:
    table.write(
        pa.table(
            {
                "id": pa.array([5], pa.int32()),
                "v": pa.array([7], pa.int64()),
                "s": pa.array(["z"], pa.large_string()),
                "op": ["+I"],
            }
        )
    )
    assert table.read(filter=[("id", "=", 5)]).to_pylist() == [
        {"id": 5, "v": 7, "s": "z", "op": "+I"}
    ]


def test_non_table_input_is_rejected(table: Table) -> None:
    with pytest.raises(DataValidationError, match="pyarrow Table"):
        table.write([{"id": 1}])
