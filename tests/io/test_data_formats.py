"""Reading Avro data files: files encoded by fastavro's own writer from plain Python values (the
model), in Paimon 0.9's Avro schema, read back by lakeops' AvroFormat into the Arrow values
lakeops uses for those Paimon types — by each of its decoders (``decoder``: the compiled decoder
of flat rows, Arrow's Avro decoder through datafusion, which must then read the whole file
itself, or fastavro alone)."""

from __future__ import annotations

import datetime as dt
import io
import os
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.fs as pafs
import pytest

import lakeops.io.avro_data as avro_data
import lakeops.io.avro_jit as avro_jit
from lakeops.errors import CorruptTableError, UnsupportedFeatureError
from lakeops.io.avro_data import decimal_from_bytes
from lakeops.io.data_formats import AvroFormat, reader_for

UTC = dt.UTC
NS = "org.apache.paimon.avro.generated"


def _opt(t: Any) -> list[Any]:
    return ["null", t]


def _field(name: str, t: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "type": t}
    if isinstance(t, list):
        out["default"] = None
    return out


# Paimon 0.9's Avro schema of a key-value file with (nearly) every type (a union: Paimon's row
# type is nullable)
RECORD: dict[str, Any] = {
    "type": "record",
    "name": "record",
    "namespace": NS,
    "fields": [
        _field("_KEY_id", "long"),
        _field("_SEQUENCE_NUMBER", "long"),
        _field("_VALUE_KIND", "int"),
        _field("id", "long"),
        _field("ti", _opt("int")),
        _field("b", _opt("boolean")),
        _field("f", _opt("float")),
        _field("d", _opt("double")),
        _field("s", _opt("string")),
        _field("by", _opt("bytes")),
        _field("dt", _opt({"type": "int", "logicalType": "date"})),
        _field("ts3", _opt({"type": "long", "logicalType": "timestamp-millis"})),
        _field("ts6", _opt({"type": "long", "logicalType": "timestamp-micros"})),
        _field("ltz3", _opt({"type": "long", "logicalType": "local-timestamp-millis"})),
        _field("ltz6", _opt({"type": "long", "logicalType": "local-timestamp-micros"})),
        _field("d5", _opt({"type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 2})),
        _field(
            "d38", _opt({"type": "bytes", "logicalType": "decimal", "precision": 38, "scale": 10})
        ),
        _field("arr", _opt({"type": "array", "items": _opt("int")})),
        _field("m", _opt({"type": "map", "values": _opt("string")})),
        _field(
            "im",
            _opt(
                {
                    "type": "array",
                    "logicalType": "map",
                    "items": {
                        "type": "record",
                        "name": "record_im",
                        "fields": [
                            _field("key", "int"),
                            _field(
                                "value",
                                _opt(
                                    {
                                        "type": "bytes",
                                        "logicalType": "decimal",
                                        "precision": 10,
                                        "scale": 2,
                                    }
                                ),
                            ),
                        ],
                    },
                }
            ),
        ),
        _field(
            "r",
            _opt(
                {
                    "type": "record",
                    "name": "record_r",
                    "fields": [
                        _field("x", "int"),
                        _field(
                            "t",
                            _opt(
                                {
                                    "type": "array",
                                    "items": {"type": "long", "logicalType": "timestamp-micros"},
                                }
                            ),
                        ),
                    ],
                }
            ),
        ),
    ],
}

SCHEMA = ["null", RECORD]

ARROW = pa.schema(
    [
        pa.field("_KEY_id", pa.int64(), False),
        pa.field("_SEQUENCE_NUMBER", pa.int64(), False),
        pa.field("_VALUE_KIND", pa.int32(), False),
        pa.field("id", pa.int64(), False),
        ("ti", pa.int32()),
        ("b", pa.bool_()),
        ("f", pa.float32()),
        ("d", pa.float64()),
        ("s", pa.string()),
        ("by", pa.binary()),
        ("dt", pa.date32()),
        ("ts3", pa.timestamp("ms")),
        ("ts6", pa.timestamp("us")),
        ("ltz3", pa.timestamp("ms", tz="UTC")),
        ("ltz6", pa.timestamp("us", tz="UTC")),
        ("d5", pa.decimal128(5, 2)),
        ("d38", pa.decimal128(38, 10)),
        ("arr", pa.list_(pa.field("element", pa.int32()))),
        ("m", pa.map_(pa.string(), pa.string())),
        ("im", pa.map_(pa.field("key", pa.int32(), False), pa.decimal128(10, 2))),
        (
            "r",
            pa.struct(
                [
                    pa.field("x", pa.int32(), False),
                    ("t", pa.list_(pa.field("element", pa.timestamp("us"), False))),
                ]
            ),
        ),
    ]
)


def _row(i: int) -> dict[str, Any]:
    """Row ``i``: low values, high values or NULLs (as Python values, the model)."""
    base: dict[str, Any] = {
        "_KEY_id": i,
        "_SEQUENCE_NUMBER": 100 + i,
        "_VALUE_KIND": i % 4,
        "id": i,
    }
    if i % 3 == 0:
        return base | {
            "ti": -128,
            "b": False,
            "f": -0.0,
            "d": -2.25e300,
            "s": "",
            "by": b"",
            "dt": dt.date(1969, 12, 31),
            "ts3": dt.datetime(1900, 1, 1, 0, 0, 0, 1000),
            "ts6": dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
            "ltz3": dt.datetime(1970, 1, 1, 0, 0, 0, 1000, tzinfo=UTC),
            "ltz6": dt.datetime(1955, 5, 5, 5, 5, 5, 50505, tzinfo=UTC),
            "d5": Decimal("-999.99"),
            "d38": Decimal("-9999999999999999999999999999.9999999999"),
            "arr": [1, None, -3],
            "m": {"a": "x", "b": None},
            "im": [(-1, Decimal("0.00")), (2, None)],
            "r": {"x": -1, "t": []},
        }
    if i % 3 == 1:
        return base | {
            "ti": 127,
            "b": True,
            "f": 3.4028234663852886e38,
            "d": float("nan"),
            "s": "héllo 𝄞 " + str(i),
            "by": bytes(range(256)),
            "dt": dt.date(9999, 12, 31),
            "ts3": dt.datetime(2024, 2, 29, 23, 59, 59, 999000),
            "ts6": dt.datetime(2038, 1, 19, 3, 14, 8, 123456),
            "ltz3": dt.datetime(2024, 6, 30, 12, 0, 0, 123000, tzinfo=UTC),
            "ltz6": dt.datetime(2100, 1, 1, 0, 0, 0, 1, tzinfo=UTC),
            "d5": Decimal("0.01"),
            "d38": Decimal("9999999999999999999999999999.9999999999"),
            "arr": [],
            "m": {},
            "im": [],
            "r": {"x": 2**31 - 1, "t": None},
        }
    return base | {"r": None}


def _avro_values(row: dict[str, Any]) -> dict[str, Any]:
    """A model row as fastavro's writer takes it (key-value arrays as records)."""
    out = {k: row.get(k) for k in ARROW.names}
    # (fastavro's writer takes a naive datetime as local time: hand it UTC ones)
    for k in ("ts3", "ts6"):
        if out[k] is not None:
            out[k] = out[k].replace(tzinfo=UTC)
    if out["im"] is not None:
        out["im"] = [{"key": k, "value": v} for k, v in out["im"]]
    if out["r"] is not None and out["r"]["t"] is None:
        out["r"] = {"x": out["r"]["x"], "t": None}
    return out


def _expected(rows: list[dict[str, Any]]) -> pa.Table:
    model = []
    for row in rows:
        values = {k: row.get(k) for k in ARROW.names}
        if values["m"] is not None:
            values["m"] = list(values["m"].items())
        model.append(values)
    return pa.Table.from_pylist(model, schema=ARROW)


def _write(path: Path, rows: list[dict[str, Any]], codec: str = "null", **kwargs: Any) -> None:
    with path.open("wb") as f:
        fastavro.writer(f, SCHEMA, [_avro_values(r) for r in rows], codec=codec, **kwargs)


def _equal(got: pa.Table, want: pa.Table) -> None:
    assert got.schema == want.schema

    # NaN != NaN: compare the Python values with NaN made comparable
    def plain(t: pa.Table) -> list[Any]:
        return [
            {k: ("nan" if isinstance(v, float) and v != v else v) for k, v in r.items()}
            for r in t.to_pylist()
        ]

    assert plain(got) == plain(want)


@pytest.fixture
def fs() -> pafs.FileSystem:
    return pafs.LocalFileSystem()


_FASTAVRO_CHUNKS = avro_data.AvroColumns._fastavro_chunks


def _no_fastavro(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the fast path fell back to fastavro")


@pytest.fixture(params=["numba", "arrow", "fastavro"])
def decoder(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """'numba': files of flat rows are decoded by the compiled decoder (lakeops.io.avro_jit),
    others by the fast path; 'arrow': every file is decoded by the fast path, start to end
    (falling back to fastavro fails the test); 'fastavro': numba and datafusion are taken away,
    fastavro decodes every file."""
    if request.param == "numba":
        assert avro_jit.decode_kernel() is not None, "install lakeops[avro] (numba)"
        monkeypatch.setattr(avro_data.AvroColumns, "_fastavro_chunks", _no_fastavro)
        return "numba"
    monkeypatch.setattr(avro_jit, "decode_kernel", lambda: None)
    if request.param == "arrow":
        assert avro_data.fast_reader() is not None, "install lakeops[avro] (datafusion)"
        monkeypatch.setattr(avro_data.AvroColumns, "_fastavro_chunks", _no_fastavro)
    else:
        monkeypatch.setattr(avro_data, "fast_reader", lambda: None)
    return str(request.param)


@pytest.mark.parametrize("codec", ["null", "deflate", "snappy", "zstandard", "bzip2", "xz"])
def test_every_type_reads_as_its_arrow_type(
    tmp_path: Path, fs: pafs.FileSystem, codec: str, decoder: str
) -> None:
    rows = [_row(i) for i in range(9)]
    path = tmp_path / "data-1-0.avro"
    _write(path, rows, codec)
    fmt = reader_for(path.name, fs)
    assert isinstance(fmt, AvroFormat)
    assert fmt.names(str(path)) == ARROW.names
    _equal(fmt.read(str(path), ARROW.names), _expected(rows))
    assert fmt.unit_count(str(path)) == 1
    assert fmt.unit_ranges(str(path), "_KEY_id") == [None]
    _equal(fmt.read_unit(str(path), 0, ARROW.names), _expected(rows))


def test_projection_and_filter(tmp_path: Path, fs: pafs.FileSystem, decoder: str) -> None:
    rows = [_row(i) for i in range(30)]
    path = tmp_path / "data-2-0.avro"
    _write(path, rows, "deflate", sync_interval=500)  # many blocks
    fmt = AvroFormat(fs)
    cols = ["r", "_KEY_id", "d38"]
    got = fmt.read(str(path), cols)
    want = _expected(rows)
    # the file's column order, whatever order was asked for
    _equal(got.select(cols), want.select(cols))
    wanted = [3, 4, 29, 77]
    got = fmt.read(str(path), ["_KEY_id", "s"], ("_KEY_id", wanted))
    _equal(got, want.select(["_KEY_id", "s"]).take([3, 4, 29]))
    empty = fmt.read(str(path), ["d5", "im"], ("_KEY_id", [1000]))
    assert empty.num_rows == 0 and empty.schema == want.select(["d5", "im"]).schema


def test_batches_cover_every_block_in_order(
    tmp_path: Path, fs: pafs.FileSystem, monkeypatch: pytest.MonkeyPatch, decoder: str
) -> None:
    monkeypatch.setattr(avro_data.AvroColumns.chunks, "__defaults__", (7,))
    rows = [_row(i) for i in range(50)]
    path = tmp_path / "data-3-0.avro"
    _write(path, rows, "snappy", sync_interval=300)
    batches = list(AvroFormat(fs).iter_batches(str(path), ARROW.names, 5))
    assert all(0 < b.num_rows <= 5 for b in batches)
    _equal(pa.concat_tables(batches), _expected(rows))


def test_arrow_types_hint_gives_the_table_types(
    tmp_path: Path, fs: pafs.FileSystem, decoder: str
) -> None:
    rows = [_row(i) for i in range(6)]
    path = tmp_path / "data-4-0.avro"
    _write(path, rows)
    fmt = AvroFormat(fs, {"ti": pa.int8(), "_VALUE_KIND": pa.int8(), "absent": pa.int16()})
    got = fmt.read(str(path), ["_VALUE_KIND", "ti"])
    assert got.schema.field("ti").type == pa.int8()
    assert got.column("_VALUE_KIND").to_pylist() == [i % 4 for i in range(6)]
    assert got.column("ti").to_pylist() == [r.get("ti") for r in rows]


def test_decimals_of_any_length_and_fixed(
    tmp_path: Path, fs: pafs.FileSystem, decoder: str
) -> None:
    values = [Decimal("0"), Decimal("-1"), Decimal("1.28"), Decimal("-1.29"), None]
    for i in range(38):
        values.append(Decimal(10**i - 1) / 100)
        values.append(-Decimal(10**i) / 100)
    schema = {
        "type": "record",
        "name": "r",
        "fields": [
            {
                "name": "p",
                "type": [
                    "null",
                    {"type": "bytes", "logicalType": "decimal", "precision": 38, "scale": 2},
                ],
            },
            {
                "name": "q",
                "type": [
                    "null",
                    {
                        "type": "fixed",
                        "name": "q16",
                        "size": 16,
                        "logicalType": "decimal",
                        "precision": 38,
                        "scale": 2,
                    },
                ],
            },
        ],
    }
    path = tmp_path / "data-5-0.avro"
    with path.open("wb") as f:
        fastavro.writer(f, schema, [{"p": v, "q": v} for v in values])
    got = AvroFormat(fs).read(str(path), ["p", "q"])
    want = pa.array(values, pa.decimal128(38, 2))
    assert got.column("p").combine_chunks().equals(want)
    assert got.column("q").combine_chunks().equals(want)


def test_padded_decimal_bytes_and_slices() -> None:
    # Avro readers must take any two's-complement length, not only the minimal one
    raw = pa.array([b"\xff\xff\x85", b"\x00\x00\x7b", None, b"", b"\x80" + b"\x00" * 15])
    got = decimal_from_bytes(raw, pa.decimal128(38, 0))
    assert got.to_pylist() == [Decimal(-123), Decimal(123), None, Decimal(0), Decimal(-(2**127))]
    assert decimal_from_bytes(raw.slice(1, 2), pa.decimal128(5, 0)).to_pylist() == [123, None]


def test_unions_paimon_does_not_write_are_refused(tmp_path: Path, fs: pafs.FileSystem) -> None:
    schema = {"type": "record", "name": "r", "fields": [{"name": "u", "type": ["int", "string"]}]}
    path = tmp_path / "data-6-0.avro"
    with path.open("wb") as f:
        fastavro.writer(f, schema, [{"u": 1}])
    with pytest.raises(UnsupportedFeatureError, match="union"):
        AvroFormat(fs).read(str(path), ["u"])


def test_other_formats_are_refused(fs: pafs.FileSystem) -> None:
    with pytest.raises(UnsupportedFeatureError, match="in csv format"):
        reader_for("data-1-0.csv", fs)


def test_a_file_of_no_records(tmp_path: Path, fs: pafs.FileSystem) -> None:
    path = tmp_path / "data-7-0.avro"
    buf = io.BytesIO()
    fastavro.writer(buf, SCHEMA, [])
    path.write_bytes(buf.getvalue())
    got = AvroFormat(fs).read(str(path), ["id", "im"])
    assert got.num_rows == 0
    assert got.schema == pa.schema([ARROW.field("id"), ARROW.field("im")])
    assert list(AvroFormat(fs).iter_batches(str(path), ["id"], 10)) == []


def test_an_avro_table_on_s3(s3_warehouse: tuple[str, dict]) -> None:
    from lakeops import Catalog

    uri, options = s3_warehouse
    catalog = Catalog(uri, storage_options=options)
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])
    table = catalog.create_table(
        "db.a", schema=schema, primary_keys=["id"], options={"bucket": "2", "file.format": "avro"}
    )
    table.write(pa.table({"id": list(range(50)), "v": [f"a{i}" for i in range(50)]}, schema=schema))
    table.write(pa.table({"id": [3, 70], "v": [None, "z"]}, schema=schema))
    model = {i: f"a{i}" for i in range(50)} | {3: None, 70: "z"}
    want = [{"id": k, "v": model[k]} for k in sorted(model)]
    assert table.read().sort_by("id").to_pylist() == want
    table.compact(full=True)
    names = [
        f.path
        for f in table.file_io.arrow_fs.get_file_info(
            pafs.FileSelector(table.root.split("://", 1)[-1], recursive=True)
        )
        if "/bucket-" in f.path and f.type == pafs.FileType.File
    ]
    assert names and all(n.endswith(".avro") for n in names)
    assert table.read().sort_by("id").to_pylist() == want


def test_avro_files_read_through_schema_evolution(tmp_path: Path) -> None:
    """Files written before a rename, an added column and a widening read as the model says,
    before and after a compaction rewrites them (TINYINT is an Avro int in the file)."""
    from lakeops import Catalog
    from lakeops.format.schema_change import AddColumn, RenameColumn, UpdateColumnType
    from lakeops.format.types import DataType

    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), False), ("t", pa.int8()), ("s", pa.string())])
    table = catalog.create_table(
        "db.e", schema=schema, primary_keys=["id"], options={"bucket": "1", "file.format": "avro"}
    )
    table.write(pa.table({"id": [1, 2, 3], "t": [-128, None, 127], "s": ["a", "b", None]}, schema))
    table.alter(
        [
            RenameColumn("s", "label"),
            UpdateColumnType("t", DataType.parse("BIGINT")),
            AddColumn("x", DataType.parse("DOUBLE")),
        ]
    )
    table = catalog.get_table("db.e")
    new = pa.schema(
        [
            pa.field("id", pa.int64(), False),
            ("t", pa.int64()),
            ("label", pa.string()),
            ("x", pa.float64()),
        ]
    )
    table.write(
        pa.table({"id": [3, 4], "t": [2**40, 5], "label": ["c", "d"], "x": [0.5, None]}, new)
    )
    want = [
        {"id": 1, "t": -128, "label": "a", "x": None},
        {"id": 2, "t": None, "label": "b", "x": None},
        {"id": 3, "t": 2**40, "label": "c", "x": 0.5},
        {"id": 4, "t": 5, "label": "d", "x": None},
    ]
    got = table.read()
    assert got.schema == new
    assert got.sort_by("id").to_pylist() == want
    table.compact(full=True)
    assert table.read().sort_by("id").to_pylist() == want


def _record_file(path: Path, fields: list[dict[str, Any]], rows: list[dict[str, Any]]) -> None:
    with path.open("wb") as f:
        fastavro.writer(f, {"type": "record", "name": "r", "fields": fields}, rows)


def test_times_fixed_decimals_and_either_union_order(
    tmp_path: Path, fs: pafs.FileSystem, decoder: str
) -> None:
    """Types beyond the matrix above: TIME as time-millis/-micros, decimals on fixed of any
    size, unions with NULL second, and a file whose schema is a plain record."""
    fields = [
        {"name": "tm", "type": ["null", {"type": "int", "logicalType": "time-millis"}]},
        {"name": "tu", "type": [{"type": "long", "logicalType": "time-micros"}, "null"]},
        {
            "name": "f5",
            "type": [
                "null",
                {
                    "type": "fixed",
                    "name": "f5",
                    "size": 5,
                    "logicalType": "decimal",
                    "precision": 10,
                    "scale": 3,
                },
            ],
        },
        {"name": "ts", "type": [{"type": "long", "logicalType": "timestamp-millis"}, "null"]},
        {"name": "Mixed.Case", "type": "string"},
    ]
    model = [
        {
            "tm": dt.time(23, 59, 59, 999000),
            "tu": dt.time(0, 0, 0, 1),
            "f5": Decimal("-9999999.999"),
            "ts": dt.datetime(1677, 9, 22, 0, 12, 43, 146000),
            "Mixed.Case": "ä",
        },
        {"tm": None, "tu": None, "f5": None, "ts": None, "Mixed.Case": ""},
        {
            "tm": dt.time(0, 0),
            "tu": dt.time(12, 30, 0, 999999),
            "f5": Decimal("0.001"),
            "ts": dt.datetime(2262, 4, 11, 23, 47, 16, 854000),
            "Mixed.Case": "x",
        },
    ]
    path = tmp_path / "data-8-0.avro"
    rows = [r | {"ts": r["ts"] and r["ts"].replace(tzinfo=UTC)} for r in model]
    _record_file(path, fields, rows)
    want = pa.Table.from_pylist(
        model,
        schema=pa.schema(
            [
                ("tm", pa.time32("ms")),
                ("tu", pa.time64("us")),
                ("f5", pa.decimal128(10, 3)),
                ("ts", pa.timestamp("ms")),
                pa.field("Mixed.Case", pa.string(), False),
            ]
        ),
    )
    fmt = AvroFormat(fs)
    _equal(fmt.read(str(path), want.schema.names), want)
    _equal(fmt.read(str(path), ["Mixed.Case", "f5"]), want.select(["Mixed.Case", "f5"]))


def test_many_blocks_keep_their_order(tmp_path: Path, fs: pafs.FileSystem, decoder: str) -> None:
    n = 20_000  # several of the fast decoder's batches, each over many blocks
    rows = [{"k": (i * 7919) % n, "s": f"s{i}" if i % 5 else None} for i in range(n)]
    schema = [
        "null",
        {
            "type": "record",
            "name": "r",
            "fields": [{"name": "k", "type": "long"}, {"name": "s", "type": ["null", "string"]}],
        },
    ]
    path = tmp_path / "data-9-0.avro"
    with path.open("wb") as f:
        fastavro.writer(f, schema, rows, codec="zstandard", sync_interval=2_000)
    got = AvroFormat(fs).read(str(path), ["k", "s"])
    assert got.to_pylist() == rows
    batches = list(AvroFormat(fs).iter_batches(str(path), ["s"], 3_000))
    assert [b.num_rows for b in batches][:1] == [3_000]
    assert pa.concat_tables(batches).column("s").to_pylist() == [r["s"] for r in rows]


def test_a_null_row_is_corrupt(
    tmp_path: Path, fs: pafs.FileSystem, monkeypatch: pytest.MonkeyPatch, decoder: str
) -> None:
    # datafusion's path may leave such a file to fastavro, which refuses it
    monkeypatch.setattr(avro_data.AvroColumns, "_fastavro_chunks", _FASTAVRO_CHUNKS)
    schema = ["null", {"type": "record", "name": "r", "fields": [{"name": "k", "type": "long"}]}]
    for where, rows in enumerate([[{"k": 1}, None, {"k": 3}], [{"k": 1}, {"k": 2}, None]]):
        path = tmp_path / f"data-10-{where}.avro"
        with path.open("wb") as f:
            fastavro.writer(f, schema, rows)
        with pytest.raises(CorruptTableError, match=r"NULL row|cannot read"):
            AvroFormat(fs).read(str(path), ["k"])


def test_types_the_fast_path_does_not_take_go_to_fastavro(
    tmp_path: Path, fs: pafs.FileSystem, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(avro_jit, "decode_kernel", lambda: None)
    assert avro_data.fast_reader() is not None, "install lakeops[avro] (datafusion)"
    nanos = {"type": "long", "logicalType": "timestamp-nanos"}
    fixed = {"type": "fixed", "name": "f3", "size": 3}
    cases: list[tuple[Any, Any, pa.DataType]] = [
        (nanos, 1_577_836_800_000_000_001, pa.timestamp("ns")),
        (fixed, b"abc", pa.binary()),
    ]
    for i, (avro_type, value, arrow_type) in enumerate(cases):
        path = tmp_path / f"data-11-{i}.avro"
        _record_file(
            path, [{"name": "v", "type": ["null", avro_type]}], [{"v": value}, {"v": None}]
        )
        with path.open("rb") as f:
            assert not avro_data.open_columns(f, str(path)).fast
        got = AvroFormat(fs).read(str(path), ["v"])
        assert got.schema.field("v").type == arrow_type
        assert got.column("v").to_pylist()[1] is None
        first = got.column("v")[0]
        assert (first.value if pa.types.is_timestamp(arrow_type) else first.as_py()) == value


def test_a_fast_path_failure_mid_file_goes_on_with_fastavro(
    tmp_path: Path, fs: pafs.FileSystem, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [_row(i) for i in range(40)]
    path = tmp_path / "data-12-0.avro"
    _write(path, rows, "snappy", sync_interval=300)
    fast = avro_data.AvroColumns._fast_chunks

    def first_chunk_then_fail(self: Any, fields: Any, chunk_rows: int) -> Any:
        for table in fast(self, fields, chunk_rows):
            yield table.slice(0, 11)
            raise RuntimeError("decoder failed")

    monkeypatch.setattr(avro_data.AvroColumns, "_fast_chunks", first_chunk_then_fail)
    _equal(AvroFormat(fs).read(str(path), ARROW.names), _expected(rows))


def test_reads_open_at_once_never_share_a_scratch_file(
    tmp_path: Path, fs: pafs.FileSystem, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fast path copies each file into a scratch file it reuses from read to read: a read
    still open in the same thread keeps its own, and a smaller file read into a reused one
    ends where that file ends."""
    assert avro_data.fast_reader() is not None, "install lakeops[avro] (datafusion)"
    monkeypatch.setattr(avro_jit, "decode_kernel", lambda: None)
    monkeypatch.setattr(avro_data.AvroColumns, "_fastavro_chunks", _no_fastavro)
    monkeypatch.setattr(avro_data, "_SCRATCH", avro_data._ScratchFiles())
    with avro_data._SCRATCH.open() as (one, _), avro_data._SCRATCH.open() as (two, _):
        assert one != two  # a held file is never handed out again
    with avro_data._SCRATCH.open() as (again, _):
        assert again in (one, two)  # and is reused once given back
    schema = [
        "null",
        {
            "type": "record",
            "name": "r",
            "fields": [{"name": "k", "type": "long"}, {"name": "s", "type": ["null", "string"]}],
        },
    ]
    files = {}
    for name, n in (("big", 20_000), ("small", 70)):
        rows = [{"k": i * 3 + len(name), "s": f"{name}{i}" if i % 7 else None} for i in range(n)]
        path = tmp_path / f"data-13-{name}.avro"
        with path.open("wb") as f:
            fastavro.writer(f, schema, rows, codec="zstandard", sync_interval=1_000)
        files[name] = (str(path), rows)
    big, small = files["big"], files["small"]
    with open(big[0], "rb") as f:
        chunks = avro_data.open_columns(f, big[0]).chunks(["k", "s"], chunk_rows=3_000)
        got = [next(chunks)]
        assert got[0].num_rows < len(big[1])  # the big file's read is still open
        assert AvroFormat(fs).read(small[0], ["k", "s"]).to_pylist() == small[1]
        got += list(chunks)
    assert pa.concat_tables(got).to_pylist() == big[1]
    for path, rows in (big, small, big, small):  # scratch files reused, shorter and longer
        assert AvroFormat(fs).read(path, ["k", "s"]).to_pylist() == rows
    assert len(avro_data._SCRATCH._free) <= avro_data._SCRATCH.keep


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork only")
def test_a_forked_process_never_writes_its_parents_scratch_files(
    tmp_path: Path, fs: pafs.FileSystem, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert avro_data.fast_reader() is not None, "install lakeops[avro] (datafusion)"
    monkeypatch.setattr(avro_data, "_SCRATCH", avro_data._ScratchFiles())
    with avro_data._SCRATCH.open() as (parents, _):
        pass
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report the scratch file it would use, then leave at once
        os.close(read)
        with avro_data._SCRATCH.open() as (childs, _):
            os.write(write, childs.encode())
        os.remove(childs)
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        childs = f.read().decode()
    os.waitpid(pid, 0)
    assert childs and childs != parents
    with avro_data._SCRATCH.open() as (again, _):
        assert again == parents  # the parent's pool is its own still


def test_iter_batches_reads_only_the_units_asked_for(tmp_path: Path) -> None:
    import pyarrow.orc as orc
    import pyarrow.parquet as pq

    fs = pafs.LocalFileSystem()
    table = pa.table({"id": pa.array(range(6), pa.int64())})
    parquet = tmp_path / "data-x.parquet"
    pq.write_table(table, parquet, row_group_size=2)  # units [0, 1], [2, 3], [4, 5]
    fmt = reader_for(str(parquet), fs)
    picked = fmt.iter_batches(str(parquet), ["id"], 10, [0, 2])
    assert [v for b in picked for v in b.column("id").to_pylist()] == [0, 1, 4, 5]
    assert list(fmt.iter_batches(str(parquet), ["id"], 10, [])) == []
    whole = fmt.iter_batches(str(parquet), ["id"], 10)
    assert [v for b in whole for v in b.column("id").to_pylist()] == list(range(6))
    orc_path = tmp_path / "data-x.orc"
    orc.write_table(table, str(orc_path))
    fmt = reader_for(str(orc_path), fs)
    assert list(fmt.iter_batches(str(orc_path), ["id"], 10, [])) == []
    got = [b.column("id").to_pylist() for b in fmt.iter_batches(str(orc_path), ["id"], 10, [0])]
    assert got == [list(range(6))]
