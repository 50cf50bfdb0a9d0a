"""Times lakeops' ORC files cannot carry to Java Paimon 0.9 (before 1970 with a sub-millisecond
part), found wherever they sit, nested ones included."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lakeops.errors import UnsupportedFeatureError
from lakeops.kv.orc_layout import check_values


def _table(values: list, type_: pa.DataType) -> pa.Table:
    return pa.table({"c": pa.array(values, type_)})


@pytest.mark.parametrize(
    ("values", "type_"),
    [
        ([0, -1], pa.timestamp("us")),
        ([None, -2_000_001], pa.timestamp("ns", tz="UTC")),
        ([[0], None, [5, -1]], pa.list_(pa.timestamp("us"))),
        ([[(-1, 1)]], pa.map_(pa.timestamp("us"), pa.int32())),
        ([[(1, {"t": -1})]], pa.map_(pa.int32(), pa.struct([("t", pa.timestamp("ns"))]))),
    ],
)
def test_sub_millisecond_times_before_1970_are_refused(values: list, type_: pa.DataType) -> None:
    with pytest.raises(UnsupportedFeatureError, match="before 1970"):
        check_values(_table(values, type_))


@pytest.mark.parametrize(
    ("values", "type_"),
    [
        ([-1_000, 1, None], pa.timestamp("us")),  # whole milliseconds, or after 1970
        ([-1], pa.timestamp("ms")),
        ([-5], pa.timestamp("s")),
        ([[-2_000_000, 7]], pa.list_(pa.timestamp("ns"))),
        ([-1], pa.int64()),
    ],
)
def test_other_times_pass(values: list, type_: pa.DataType) -> None:
    check_values(_table(values, type_))


def test_a_sliced_map_only_checks_its_own_entries() -> None:
    maps = pa.array([[(1, -1)], [(2, 1_000)]], pa.map_(pa.int32(), pa.timestamp("us")))
    check_values(pa.table({"c": maps.slice(1)}))


def test_a_flush_of_many_rows_keeps_nullable_row_values(tmp_path) -> None:
    """The writer hands ORC 65,536-row slices; pyarrow's ORC writer ignores a sliced STRUCT's
    offset, which wrote other rows' values into a nullable ROW column (orc_layout.unsliced)."""
    from lakeops import Catalog

    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("row", pa.struct([("x", pa.int64())]))])
    n = 70_000
    rows = [None if i % 7 == 0 else {"x": i} for i in range(n)]
    data = pa.table({"id": list(range(n)), "row": rows}, schema=schema)
    table = catalog.create_table(
        "db.t", schema=schema, primary_keys=["id"], options={"bucket": "1", "file.format": "orc"}
    )
    table.write(data)
    assert table.read().sort_by("id").column("row").to_pylist() == rows


def test_time_is_written_as_orc_int_milliseconds(tmp_path) -> None:
    """``OrcTypeUtil``: TIME is ORC ``int`` (the millisecond of the day)."""
    import datetime as dt

    import pyarrow.orc as orc

    from lakeops.kv.orc_layout import open_writer

    path = tmp_path / "f.orc"
    table = pa.table({"t": pa.array([dt.time(1, 2, 3, 4000), None], pa.time32("ms"))})
    with open(path, "wb") as sink:
        writer = open_writer(sink, "zstd", 1 << 20)
        writer.write(table)
        writer.close()
    back = orc.ORCFile(str(path)).read()
    assert back.schema.field("t").type == pa.int32()
    assert back.column("t").to_pylist() == [3_723_004, None]


@pytest.mark.parametrize(
    "type_",
    [{"type": "MULTISET", "element": "INT"}, "VARIANT"],
)
def test_multiset_and_variant_are_refused_as_orc(type_) -> None:
    """Paimon's ORC format has no MULTISET or VARIANT (``OrcTypeUtil`` throws)."""
    from lakeops.format.schema import DataField, TableSchema
    from lakeops.format.types import DataType
    from lakeops.kv.orc_layout import check_writable

    fields = (
        DataField(0, "id", DataType.parse("BIGINT NOT NULL")),
        DataField(1, "c", DataType.parse(type_)),
    )
    with pytest.raises(UnsupportedFeatureError, match=r"\['c'\].*file.format = 'parquet'"):
        check_writable(TableSchema(0, fields, (), ("id",), {}))
