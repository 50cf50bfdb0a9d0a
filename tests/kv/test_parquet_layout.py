"""The Parquet leaf layout of lakeops' data files against Paimon 0.9's ParquetSchemaConverter
(written out here as a table of facts; tests/interop/test_java_interop.py compares with files
Java itself wrote)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakeops import Catalog
from lakeops.errors import UnsupportedFeatureError
from lakeops.format.schema import TableSchema
from lakeops.kv.parquet_layout import check_writable, dictionary_columns, writer_options

# column -> (Arrow type, Parquet physical type, logical type as pyarrow prints it)
PAIMON_LAYOUT: dict[str, tuple[pa.DataType, str, str]] = {
    "ti": (pa.int8(), "INT32", "Int(bitWidth=8, isSigned=true)"),
    "si": (pa.int16(), "INT32", "Int(bitWidth=16, isSigned=true)"),
    "i": (pa.int32(), "INT32", "None"),
    "bi": (pa.int64(), "INT64", "None"),
    "f": (pa.float32(), "FLOAT", "None"),
    "d": (pa.float64(), "DOUBLE", "None"),
    "b": (pa.bool_(), "BOOLEAN", "None"),
    "d1": (pa.decimal128(1, 0), "INT32", "Decimal(precision=1, scale=0)"),
    "d9": (pa.decimal128(9, 3), "INT32", "Decimal(precision=9, scale=3)"),
    "d10": (pa.decimal128(10, 2), "INT64", "Decimal(precision=10, scale=2)"),
    "d18": (pa.decimal128(18, 18), "INT64", "Decimal(precision=18, scale=18)"),
    "d19": (pa.decimal128(19, 0), "FIXED_LEN_BYTE_ARRAY", "Decimal(precision=19, scale=0)"),
    "d38": (pa.decimal128(38, 10), "FIXED_LEN_BYTE_ARRAY", "Decimal(precision=38, scale=10)"),
    "s": (pa.string(), "BYTE_ARRAY", "String"),
    "by": (pa.binary(), "BYTE_ARRAY", "None"),
    "dt": (pa.date32(), "INT32", "Date"),
    "ts0": (
        pa.timestamp("s"),
        "INT64",
        "Timestamp(isAdjustedToUTC=false, timeUnit=milliseconds, is_from_converted_type=false, "
        "force_set_converted_type=false)",
    ),
    "ts3": (
        pa.timestamp("ms"),
        "INT64",
        "Timestamp(isAdjustedToUTC=false, timeUnit=milliseconds, is_from_converted_type=false, "
        "force_set_converted_type=false)",
    ),
    "ltz6": (
        pa.timestamp("us", tz="UTC"),
        "INT64",
        "Timestamp(isAdjustedToUTC=true, timeUnit=microseconds, is_from_converted_type=false, "
        "force_set_converted_type=false)",
    ),
}


def _leaves(path: Path) -> dict[str, tuple[str, str]]:
    schema = pq.ParquetFile(path).schema
    return {
        schema.column(i).path: (schema.column(i).physical_type, str(schema.column(i).logical_type))
        for i in range(len(schema))
    }


def _files(warehouse: Path, name: str) -> list[Path]:
    return sorted((warehouse / "db.db" / name).glob("bucket-*/data-*.parquet"))


def test_every_primitive_has_paimons_physical_type(catalog: Catalog, warehouse: Path) -> None:
    schema = pa.schema([("id", pa.int64())] + [(n, t) for n, (t, _, _) in PAIMON_LAYOUT.items()])
    table = catalog.create_table("db.t", schema=schema, primary_keys=["id"])
    table.write(pa.Table.from_pylist([{"id": 1}, {"id": 2}], schema=schema))
    [path] = _files(warehouse, "t")
    leaves = _leaves(path)
    for name, (_, physical, logical) in PAIMON_LAYOUT.items():
        assert leaves[name] == (physical, logical), name


def test_precision_above_six_is_int96_in_keys_values_and_nested(
    catalog: Catalog, warehouse: Path
) -> None:
    schema = pa.schema(
        [
            ("k", pa.timestamp("ns")),
            ("v", pa.timestamp("ns", tz="UTC")),
            ("r", pa.struct([("t", pa.timestamp("ns"))])),
        ]
    )
    table = catalog.create_table("db.ns", schema=schema, primary_keys=["k"])
    data = pa.table(
        {
            "k": pa.array([1, -1_500_000_001], pa.int64()).cast(pa.timestamp("ns")),
            "v": pa.array([None, 7], pa.int64()).cast(pa.timestamp("ns", tz="UTC")),
            "r": [{"t": None}, None],
        },
        schema=table.arrow_schema,
    )
    table.write(data)
    [path] = _files(warehouse, "ns")
    leaves = _leaves(path)
    assert {leaves[c][0] for c in ("_KEY_k", "k", "v", "r.t")} == {"INT96"}
    assert table.read().sort_by("k").equals(data.sort_by("k"))


@pytest.mark.parametrize(
    "fields",
    [
        [("a", pa.timestamp("ns")), ("b", pa.timestamp("us"))],
        [("a", pa.timestamp("ms", tz="UTC")), ("b", pa.list_(pa.timestamp("ns")))],
        [("a", pa.struct([("x", pa.timestamp("ns")), ("y", pa.timestamp("s"))]))],
    ],
)
def test_files_mixing_int96_and_int64_timestamps_are_refused(
    catalog: Catalog, fields: list[tuple[str, pa.DataType]]
) -> None:
    schema = pa.schema([("id", pa.int64()), *fields])
    with pytest.raises(UnsupportedFeatureError, match="INT96"):
        check_writable(TableSchema.from_arrow(schema, ["id"]))
    with pytest.raises(UnsupportedFeatureError, match="create this table"):
        catalog.create_table("db.mixed", schema=schema, primary_keys=["id"])
    assert not catalog.table_exists("db.mixed")


def test_writer_options_follow_the_timestamps() -> None:
    only_ns = TableSchema.from_arrow(pa.schema([("id", pa.timestamp("ns"))]), ["id"])
    no_ns = TableSchema.from_arrow(pa.schema([("id", pa.int64()), ("t", pa.date32())]), ["id"])
    assert writer_options(only_ns)["use_deprecated_int96_timestamps"] is True
    assert writer_options(no_ns)["use_deprecated_int96_timestamps"] is False
    assert writer_options(no_ns)["store_decimal_as_integer"] is True


def test_time_and_variant_leaves_are_paimons(catalog: Catalog, warehouse: Path) -> None:
    """``ParquetSchemaConverter``: TIME is INT32 of milliseconds (pyarrow leaves the annotation's
    isAdjustedToUTC flag false where Paimon sets it; no reader looks at it), VARIANT a group of
    two required binaries ``value`` then ``metadata``."""
    variant = pa.struct(
        [pa.field("value", pa.binary(), False), pa.field("metadata", pa.binary(), False)]
    )
    schema = pa.schema([("id", pa.int64()), ("tm", pa.time32("ms")), ("v", variant)])
    table = catalog.create_table("db.tv", schema=schema, primary_keys=["id"])
    table.write(pa.Table.from_pylist([{"id": 1}], schema=schema))
    [path] = _files(warehouse, "tv")
    leaves = _leaves(path)
    assert leaves["tm"][0] == "INT32" and "timeUnit=milliseconds" in leaves["tm"][1]
    assert leaves["v.value"] == ("BYTE_ARRAY", "None")
    assert leaves["v.metadata"] == ("BYTE_ARRAY", "None")
    arrow = pq.ParquetFile(path).schema_arrow
    assert arrow.field("v").type == variant
    file_schema = pq.ParquetFile(path).schema
    names = [file_schema.column(i).path for i in range(len(file_schema))]
    assert names.index("v.value") < names.index("v.metadata")
    assert file_schema.column(names.index("v.value")).max_definition_level == 1  # only v nullable


def _dictionary_encoded(path: Path) -> dict[str, bool]:
    """Whether each leaf of the file's first row group starts with a dictionary page."""
    group = pq.ParquetFile(path).metadata.row_group(0)
    return {
        group.column(i).path_in_schema: group.column(i).has_dictionary_page
        for i in range(group.num_columns)
    }


def test_dictionary_only_where_it_pays(catalog: Catalog, warehouse: Path) -> None:
    # parquet-mr keeps a column's dictionary only if it compresses the first page: repeated
    # values get one, unique keys, sequence numbers, random numbers and random strings do not
    n = 20_000
    rng = np.random.default_rng(7)
    data = pa.table(
        {
            "id": pa.array(rng.permutation(n), pa.int64()),
            "category": pa.array(rng.choice(["red", "green", "blue"], n)),
            "small": pa.array(rng.integers(0, 50, n), pa.int32()),
            "price": pa.array(rng.random(n)),
            "big": pa.array(rng.integers(0, 2**60, n), pa.int64()),
            "token": pa.array([f"{x:032x}" for x in rng.integers(0, 2**62, n)]),
            "flag": pa.array(rng.integers(0, 2, n).astype(bool)),
            "tags": pa.array([["a"]] * n, pa.list_(pa.string())),
            "empty": pa.array([None] * n, pa.string()),
        }
    )
    catalog.create_table("db.enc", schema=data.schema, primary_keys=["id"]).write(data)
    [path] = _files(warehouse, "enc")
    assert _dictionary_encoded(path) == {
        "_KEY_id": False,
        "_SEQUENCE_NUMBER": False,
        "_VALUE_KIND": True,
        "id": False,
        "category": True,
        "small": True,
        "price": False,
        "big": False,
        "token": False,
        "flag": False,
        "tags.list.element": False,
        "empty": False,
    }
    back = catalog.get_table("db.enc").read().sort_by("id")
    assert back.cast(data.schema).equals(data.sort_by("id"))


def test_append_files_choose_dictionaries_the_same_way(catalog: Catalog, warehouse: Path) -> None:
    n = 10_000
    rng = np.random.default_rng(8)
    data = pa.table({"c": pa.array(rng.choice(["x", "y"], n)), "r": pa.array(rng.random(n))})
    catalog.create_table("db.app", schema=data.schema).write(data)
    [path] = sorted((warehouse / "db.db" / "app").glob("bucket-*/data-*.parquet"))
    assert _dictionary_encoded(path) == {"c": True, "r": False}


def test_dictionary_choice_reads_a_sample_of_the_first_batch() -> None:
    # a column unique in its first values but repeating later is decided by the sample
    # spread over the whole batch, not by its first rows
    n = 65_536
    values = np.concatenate([np.arange(n // 2), np.zeros(n // 2, np.int64)])
    first = pa.table({"a": values, "b": np.arange(n), "seq": np.zeros(n, np.int64)})
    assert dictionary_columns(first, plain={"seq"}) == ["a"]
    assert dictionary_columns(first.slice(0, 0)) == []
    assert dictionary_columns(pa.table({"a": [1, 1, 1]})) == ["a"]
