"""The compiled decoder of flat Avro data files (lakeops.io.avro_jit): every flat type Paimon
writes, in every codec, read exactly as the model (the Python values fastavro's writer was
given); anything else left to the other decoders; corrupt files refused, never read."""

from __future__ import annotations

import datetime as dt
import io
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pytest

import lakeops.io.avro_data as avro_data
import lakeops.io.avro_jit as avro_jit
from lakeops.errors import CorruptTableError
from lakeops.io.data_formats import AvroFormat

UTC = dt.UTC


def _dec(precision: int, scale: int, fixed: int = 0) -> dict[str, Any]:
    base: dict[str, Any] = {"type": "bytes"}
    if fixed:
        base = {"type": "fixed", "name": f"d{precision}_{fixed}", "size": fixed}
    return base | {"logicalType": "decimal", "precision": precision, "scale": scale}


#: name -> (Avro type, Arrow type)
COLUMNS: dict[str, tuple[Any, pa.DataType]] = {
    "b": ("boolean", pa.bool_()),
    "i": ("int", pa.int32()),
    "l": ("long", pa.int64()),
    "f": ("float", pa.float32()),
    "d": ("double", pa.float64()),
    "s": ("string", pa.string()),
    "y": ("bytes", pa.binary()),
    "x": ({"type": "fixed", "name": "x3", "size": 3}, pa.binary()),
    "d38": (_dec(38, 10), pa.decimal128(38, 10)),
    "d9f": (_dec(9, 2, fixed=4), pa.decimal128(9, 2)),
    "day": ({"type": "int", "logicalType": "date"}, pa.date32()),
    "tm": ({"type": "int", "logicalType": "time-millis"}, pa.time32("ms")),
    "tu": ({"type": "long", "logicalType": "time-micros"}, pa.time64("us")),
    "ts3": ({"type": "long", "logicalType": "timestamp-millis"}, pa.timestamp("ms")),
    "ts6": ({"type": "long", "logicalType": "timestamp-micros"}, pa.timestamp("us")),
    "lt3": (
        {"type": "long", "logicalType": "local-timestamp-millis"},
        pa.timestamp("ms", tz="UTC"),
    ),
    "lt6": (
        {"type": "long", "logicalType": "local-timestamp-micros"},
        pa.timestamp("us", tz="UTC"),
    ),
}


def _value(name: str, i: int) -> Any:
    """Row ``i``'s value of column ``name`` (awkward values included), as the model."""
    rng = np.random.default_rng(i)
    n = int(rng.integers(-(2**62), 2**62))
    edge = i % 9
    return {
        "b": bool(i % 3),
        "i": [-(2**31), 2**31 - 1, 0][edge % 3] if edge < 3 else int(n % 2**31),
        "l": [-(2**63), 2**63 - 1, -1][edge % 3] if edge < 3 else n,
        "f": [float("nan"), -0.0, float("inf")][edge % 3] if edge < 3 else float(np.float32(n)),
        "d": [float("nan"), -0.0, -float("inf")][edge % 3] if edge < 3 else n / 7,
        "s": ["", "ä€😀", "\x00"][edge % 3] if edge < 3 else f"s{n}" * (i % 4),
        "y": [b"", b"\x00\xff", b"\x80"][edge % 3]
        if edge < 3
        else n.to_bytes(8, "big", signed=True),
        "x": (i % 256).to_bytes(1, "big") * 3,
        "d38": [Decimal("9" * 28 + "." + "9" * 10), Decimal("-" + "9" * 28 + "." + "9" * 10)][i % 2]
        if edge < 2
        else Decimal(n).scaleb(-10),
        "d9f": Decimal(n % 10**9 - 5 * 10**8).scaleb(-2),
        "day": [-719162, 2932896, 0][edge % 3] if edge < 3 else int(n % 20000),
        "tm": dt.time(23, 59, 59, 999000) if edge == 0 else dt.time(i % 24, i % 60),
        "tu": dt.time(0, 0, 0, 1) if edge == 0 else dt.time(12, i % 60, 0, i % 999999),
        "ts3": dt.datetime(1677, 9, 22, 0, 12, 43, 146000) + dt.timedelta(seconds=i),
        "ts6": dt.datetime(2262, 4, 11, 23, 47, 16, 854775) - dt.timedelta(microseconds=i),
        "lt3": dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=n % 10**12),
        "lt6": dt.datetime(1969, 12, 31, 23, 59, 59, 999999) - dt.timedelta(microseconds=i),
    }[name]


def _model(rows: int, nullable: bool) -> list[dict[str, Any]]:
    return [
        {
            name: None if nullable and (i + j) % 5 == 0 else _value(name, i)
            for j, name in enumerate(COLUMNS)
        }
        for i in range(rows)
    ]


def _avro_value(name: str, value: Any) -> Any:
    if value is None:
        return None
    if name in ("ts3", "ts6"):
        return value.replace(tzinfo=UTC)
    if name in ("lt3", "lt6"):  # fastavro takes local timestamps as naive datetimes
        return value
    return value


def _schema(nullable: bool, null_first: bool = True) -> dict[str, Any]:
    def column(t: Any) -> Any:
        if not nullable:
            return t
        return ["null", t] if null_first else [t, "null"]

    return {
        "type": "record",
        "name": "KeyValue",
        "fields": [{"name": n, "type": column(t)} for n, (t, _) in COLUMNS.items()],
    }


def _expected(model: list[dict[str, Any]], columns: list[str], nullable: bool) -> pa.Table:
    fields = [pa.field(n, COLUMNS[n][1], nullable) for n in columns]
    arrays = []
    for f in fields:
        values = [r[f.name] for r in model]
        if f.name in ("lt3", "lt6"):
            values = [v and v.replace(tzinfo=UTC) for v in values]
        arrays.append(pa.array(values, f.type))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _write(path: Path, schema: Any, model: list[dict[str, Any]], codec: str, **kw: Any) -> None:
    rows = [{k: _avro_value(k, v) for k, v in r.items()} for r in model]
    with path.open("wb") as f:
        fastavro.writer(f, schema, rows, codec=codec, **kw)


@pytest.fixture
def fs() -> pafs.FileSystem:
    return pafs.LocalFileSystem()


@pytest.fixture
def only_jit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file of these tests must be read by the compiled decoder alone."""
    assert avro_jit.decode_kernel() is not None, "install lakeops[avro] (numba)"

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a file went past the compiled decoder")

    monkeypatch.setattr(avro_data.AvroColumns, "_fastavro_chunks", refuse)
    monkeypatch.setattr(avro_data.AvroColumns, "_fast_chunks", refuse)


def _same(got: pa.Table, want: pa.Table) -> None:
    assert got.schema == want.schema
    for name in want.column_names:
        a, b = got.column(name).combine_chunks(), want.column(name).combine_chunks()
        if pa.types.is_floating(a.type):  # NaN == NaN and -0.0 apart from 0.0, bit for bit
            width = 4 if a.type == pa.float32() else 8
            view = np.uint32 if width == 4 else np.uint64
            assert a.is_null().equals(b.is_null()), name
            av = np.frombuffer(a.fill_null(0).buffers()[1], view)[: len(a)]
            bv = np.frombuffer(b.fill_null(0).buffers()[1], view)[: len(b)]
            assert (av == bv).all(), name
        else:
            assert a.equals(b), name


@pytest.mark.parametrize(
    ("codec", "nullable", "root_union"),
    [
        *((c, True, True) for c in ("null", "deflate", "snappy", "zstandard", "bzip2", "xz")),
        ("null", False, False),  # every column required, the file's schema a plain record
        ("zstandard", False, False),
    ],
)
def test_every_flat_type_in_every_codec(
    tmp_path: Path,
    fs: pafs.FileSystem,
    only_jit: None,
    codec: str,
    nullable: bool,
    root_union: bool,
) -> None:
    model = _model(120, nullable)
    schema: Any = _schema(nullable, null_first=codec != "snappy")  # both union orders
    path = tmp_path / "data-0.avro"
    _write(path, ["null", schema] if root_union else schema, model, codec, sync_interval=2000)
    fmt = AvroFormat(fs)
    _same(fmt.read(str(path), list(COLUMNS)), _expected(model, list(COLUMNS), nullable))
    some = ["tu", "s", "d38"]  # a projection: in the file's order whatever order is asked
    _same(fmt.read(str(path), ["d38", "s", "tu"]).select(some), _expected(model, some, nullable))


def test_groups_and_batches_keep_the_rows_in_order(
    tmp_path: Path, fs: pafs.FileSystem, only_jit: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(avro_data.AvroColumns.chunks, "__defaults__", (1_000,))
    model = [{"k": i, "s": None if i % 7 == 0 else f"v{i}"} for i in range(12_345)]
    schema = {
        "type": "record",
        "name": "r",
        "fields": [{"name": "k", "type": "long"}, {"name": "s", "type": ["null", "string"]}],
    }
    path = tmp_path / "data-1.avro"
    with path.open("wb") as f:
        fastavro.writer(f, ["null", schema], model, codec="zstandard", sync_interval=700)
    batches = list(AvroFormat(fs).iter_batches(str(path), ["k", "s"], 999))
    assert all(0 < b.num_rows <= 999 for b in batches)
    assert pa.concat_tables(batches).to_pylist() == model


def test_nested_types_are_left_to_the_other_decoders(tmp_path: Path, fs: pafs.FileSystem) -> None:
    for i, t in enumerate(
        [
            {"type": "array", "items": "long"},
            {"type": "map", "values": "long"},
            {"type": "record", "name": "in", "fields": [{"name": "a", "type": "long"}]},
            {"type": "long", "logicalType": "timestamp-nanos"},
            ["null", "long", "string"],
        ]
    ):
        schema = {"type": "record", "name": "r", "fields": [{"name": "v", "type": t}]}
        assert avro_jit.flat_plan(fastavro.parse_schema(schema), {}, ["v"]) is None, i
    schema = {"type": "record", "name": "r", "fields": [{"name": "v", "type": ["null", "long"]}]}
    assert avro_jit.flat_plan(schema, {}, ["v"]) is not None


def test_no_cache_location_compiles_in_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where numba finds no writable cache (a read-only install), the loop is compiled for the
    process alone; where numba cannot compile it, no kernel (the next decoder reads)."""
    import numba

    asked: list[bool] = []

    def no_cache(**options: Any) -> Any:
        asked.append(bool(options.get("cache")))
        if options.get("cache"):
            raise RuntimeError("cannot cache function '_decode': no locator available")
        return lambda f: f  # the plain function stands in for its compiled self

    monkeypatch.setattr(numba, "njit", no_cache)
    avro_jit.decode_kernel.cache_clear()
    try:
        assert avro_jit.decode_kernel() is avro_jit._decode
        assert asked == [True, False]

        def cannot_compile(f: Any) -> Any:
            def fail(*args: Any) -> Any:
                raise RuntimeError("numba: cannot compile")

            return fail

        monkeypatch.setattr(numba, "njit", lambda **options: cannot_compile)
        avro_jit.decode_kernel.cache_clear()
        assert avro_jit.decode_kernel() is None
    finally:
        avro_jit.decode_kernel.cache_clear()


def test_small_files_leave_the_loop_unloaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Until a process reads a flat file of LOAD_FROM_BYTES, its files go to datafusion (loading
    the compiled loop costs more than decoding them); once loaded, it decodes every flat file."""
    path = tmp_path / "data-s.avro"
    _write(path, _schema(True), _model(20, True), "null")
    monkeypatch.setattr(avro_jit, "kernel_loaded", lambda: False)
    for threshold, used in ((path.stat().st_size + 1, False), (path.stat().st_size, True)):
        monkeypatch.setattr(avro_jit, "LOAD_FROM_BYTES", threshold)
        with path.open("rb") as f:
            columns = avro_data.open_columns(f, str(path))
            assert (columns._flat_decoder(["s"]) is not None) is used
            assert f.tell() == columns.data_start
    monkeypatch.setattr(avro_jit, "kernel_loaded", lambda: True)
    with path.open("rb") as f:
        assert avro_data.open_columns(f, str(path))._flat_decoder(["s"]) is not None


# --- corrupt files: one block written by hand after a header fastavro writes -----------------

_FLAT = {
    "type": "record",
    "name": "r",
    "fields": [
        {"name": "n", "type": ["null", "long"]},
        {"name": "i", "type": "int"},
        {"name": "s", "type": "string"},
        {"name": "d", "type": _dec(38, 0)},
    ],
}


def _zigzag(v: int) -> bytes:
    z = (v << 1) ^ (v >> 63)
    out = bytearray()
    while True:
        if z < 0x80:
            return bytes(out + bytes([z]))
        out.append((z & 0x7F) | 0x80)
        z >>= 7


def _row(n: int = 5, i: int = 7, s: bytes = b"ok", d: bytes = b"\x01") -> bytes:
    """One row of ["null", _FLAT] as Avro's binary encoding."""
    return (
        _zigzag(1)  # the record's branch
        + _zigzag(1)
        + _zigzag(n)
        + _zigzag(i)
        + _zigzag(len(s))
        + s
        + _zigzag(len(d))
        + d
    )


def _file(tmp_path: Path, count: int, payload: bytes, *, sync_ok: bool = True) -> Path:
    head = io.BytesIO()
    fastavro.writer(head, ["null", _FLAT], [], codec="null")
    header = head.getvalue()
    sync = header[-16:]
    block = _zigzag(count) + _zigzag(len(payload)) + payload
    path = tmp_path / "data-c.avro"
    path.write_bytes(header + block + (sync if sync_ok else bytes(16)))
    return path


@pytest.mark.parametrize(
    ("count", "payload", "sync_ok", "what"),
    [
        pytest.param(2, _row() + _row()[:-3], True, "truncated", id="truncated-block"),
        pytest.param(1, _row()[:2] + b"\xff" * 11 + b"\x01", True, "varint", id="bad-varint"),
        pytest.param(
            1, _zigzag(1) + _zigzag(2) + _row()[2:], True, "union branch", id="wrong-branch"
        ),
        pytest.param(1, _zigzag(0) + _row()[1:], True, "NULL row", id="null-row"),
        pytest.param(1, _row(i=2**31), True, "32-bit", id="int-out-of-range"),
        pytest.param(1, _row(s=b"\xff\xfe"), True, "UTF-8", id="not-utf8"),
        pytest.param(1, _row(d=b"\x01" * 17), True, "16 bytes", id="decimal-too-wide"),
        pytest.param(1, _row() + _row(), True, "left over", id="count-too-small"),
        pytest.param(3, _row() + _row(), True, "truncated", id="count-overruns"),
        pytest.param(10**12, _row(), True, "claims", id="count-huge"),
        pytest.param(-1, _row(), True, "corrupt header", id="count-negative"),
        pytest.param(
            1,
            _row()[:4] + _zigzag(-5) + b"ok" + _zigzag(1) + b"\x01",
            True,
            "negative length",
            id="negative-length",
        ),
        pytest.param(1, _row(), False, "sync marker", id="sync-marker"),
    ],
)
def test_corrupt_blocks_are_refused(
    tmp_path: Path,
    fs: pafs.FileSystem,
    only_jit: None,
    count: int,
    payload: bytes,
    sync_ok: bool,
    what: str,
) -> None:
    path = _file(tmp_path, count, payload, sync_ok=sync_ok)
    with pytest.raises(CorruptTableError, match=what):
        AvroFormat(fs).read(str(path), ["n", "i", "s", "d"])


def test_a_well_formed_hand_written_block_reads(
    tmp_path: Path, fs: pafs.FileSystem, only_jit: None
) -> None:
    """The corrupt cases above start from this block, which reads as the model."""
    path = _file(tmp_path, 2, _row() + _row(n=-(2**63), i=-(2**31), s="é".encode(), d=b"\xff"))
    got = AvroFormat(fs).read(str(path), ["n", "i", "s", "d"])
    assert got.to_pylist() == [
        {"n": 5, "i": 7, "s": "ok", "d": Decimal(1)},
        {"n": -(2**63), "i": -(2**31), "s": "é", "d": Decimal(-1)},
    ]
    assert _row()[:4] + _zigzag(2) + b"ok" + _zigzag(1) + b"\x01" == _row()
