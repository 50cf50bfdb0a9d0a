"""Manifests in every Avro codec Paimon writes (``manifest.compression``), both ways with
pypaimon 2.1; and manifests in ORC and Parquet (``manifest.format``), both ways with Java
Paimon 0.9 (pypaimon 2.1 writes and reads Avro manifests only)."""

from __future__ import annotations

import io
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest

from lakeops import Catalog
from tests.interop.java_oracle import normalize, run_ops
from tests.interop.oracle import oracle_create, oracle_read, oracle_write

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
CODECS = {"snappy": "snappy", "deflate": "deflate", "zstd": "zstandard", "null": "null"}


def _codecs(table_dir: Path) -> set[str]:
    out = set()
    for f in (table_dir / "manifest").iterdir():
        with f.open("rb") as fh:
            out.add(fastavro.reader(io.BytesIO(fh.read())).codec)
    return out


@pytest.mark.parametrize("compression", sorted(CODECS))
def test_pypaimon_manifests_in_each_codec(warehouse, compression: str) -> None:
    oracle_create(
        warehouse,
        "db.m",
        SCHEMA,
        ["id"],
        options={"bucket": "1", "manifest.compression": compression},
    )
    oracle_write(warehouse, "db.m", pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    table = Catalog(str(warehouse)).get_table("db.m")
    assert table.read().sort_by("id").to_pylist() == [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]
    table.write(pa.table({"id": [2, 3], "v": ["B", "c"]}, schema=SCHEMA))
    table.compact(full=True)
    assert _codecs(warehouse / "db.db" / "m") == {CODECS[compression]}
    expected = [{"id": 1, "v": "a"}, {"id": 2, "v": "B"}, {"id": 3, "v": "c"}]
    assert oracle_read(warehouse, "db.m").sort_by("id").to_pylist() == expected


# ------------------------------------------------ manifest.format = orc / parquet, Java 0.9
#: format -> the table's manifest.compression and the codec its files must carry (Java's
#: ORC writer: CompressionKind by name; parquet-mr: CompressionCodecName)
FORMATS = {"orc": ("zstd", "ZSTD"), "parquet": ("snappy", "SNAPPY")}
_MAGIC = {"orc": b"ORC", "parquet": b"PAR1"}
_JAVA_FIELDS = [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "v", "type": "STRING"}]


def _java_create(table: str, fmt: str, bucket: str) -> dict:
    compression = FORMATS[fmt][0]
    options = {"bucket": bucket, "manifest.format": fmt, "manifest.compression": compression}
    return {
        "op": "create",
        "table": table,
        "fields": _JAVA_FIELDS,
        "primary_keys": ["id"],
        "options": options,
    }


def _java_write(table: str, rows: list[tuple[int, str | None]]) -> dict:
    return {"op": "write", "table": table, "rows": [{"id": i, "v": v} for i, v in rows]}


def _arrow(rows: list[tuple[int, str | None]]) -> pa.Table:
    return pa.table({"id": [r[0] for r in rows], "v": [r[1] for r in rows]}, schema=SCHEMA)


def _leaves(data: bytes, fmt: str) -> dict[str, tuple[str, ...]]:
    """Per leaf column of a metadata file: its physical layout (Parquet: physical and logical
    type, definition and repetition levels; ORC: the type pyarrow reads it as)."""
    if fmt == "parquet":
        schema = pq.ParquetFile(pa.BufferReader(data)).schema
        return {
            schema.column(i).path: (
                schema.column(i).physical_type,
                str(schema.column(i).logical_type),
                str(schema.column(i).max_definition_level),
                str(schema.column(i).max_repetition_level),
            )
            for i in range(len(schema))
        }
    out: dict[str, tuple[str, ...]] = {}

    def walk(prefix: str, t: pa.DataType) -> None:
        if pa.types.is_struct(t):
            for f in t:
                walk(f"{prefix}.{f.name}", f.type)
        elif pa.types.is_list(t):
            walk(f"{prefix}.element", t.value_type)
        else:
            out[prefix.lstrip(".")] = (str(t),)

    for f in orc.ORCFile(pa.BufferReader(data)).schema:
        walk(f.name, f.type)
    return out


def _codec(data: bytes, fmt: str) -> str | None:
    """The codec of a metadata file (None: a Parquet file without rows has none)."""
    if fmt == "orc":
        return str(orc.ORCFile(pa.BufferReader(data)).compression)
    meta = pq.ParquetFile(pa.BufferReader(data)).metadata
    return str(meta.row_group(0).column(0).compression) if meta.num_row_groups else None


def _metadata(table_dir: Path) -> dict[str, bytes]:
    """Every manifest, manifest list and index manifest of a table, by kind of file + name."""
    return {f.name: f.read_bytes() for f in sorted((table_dir / "manifest").iterdir())}


def _kind(name: str) -> str:
    for prefix in ("manifest-list-", "index-manifest-", "manifest-"):
        if name.startswith(prefix):
            return prefix
    raise AssertionError(name)


def test_java_and_lakeops_share_tables_with_orc_and_parquet_manifests(
    warehouse: Path, java_classpath: str
) -> None:
    """Java 0.9 writes tables whose manifests are ORC / Parquet; lakeops reads them (vs a
    model), appends and compacts, and writes a dynamic-bucket table (index manifests) in
    each format; Java reads every table, compacts it and reads it again; lakeops reads the
    result. Every metadata file is in the table's format and codec, and lakeops' files have
    Java's physical layout for each column Java writes."""
    first = [(1, "a"), (2, None), (3, "")]
    second = [(2, "b"), (4, "é")]
    ours = [(3, "C"), (5, "e")]
    dyn_first = [(i, f"d{i}") for i in range(40)]
    dyn_second = [(i, f"D{i}") for i in range(30, 60)]
    ops: list[dict] = []
    for fmt in FORMATS:
        ops += [
            _java_create(f"db.{fmt}", fmt, "2"),
            _java_write(f"db.{fmt}", first),
            _java_write(f"db.{fmt}", second),
            _java_create(f"db.{fmt}_dyn", fmt, "-1"),
        ]
    run_ops(java_classpath, warehouse, ops)
    java_files = {fmt: _metadata(warehouse / "db.db" / fmt) for fmt in FORMATS}

    model = {i: v for i, v in first + second}
    catalog = Catalog(str(warehouse))
    for fmt in FORMATS:
        table = catalog.get_table(f"db.{fmt}")
        assert table.read().sort_by("id").to_pylist() == _rows(model)
        table.write(_arrow(ours))
        table.compact(full=True)
        dyn = catalog.get_table(f"db.{fmt}_dyn")
        dyn.write(_arrow(dyn_first))
        dyn.write(_arrow(dyn_second))
    model.update(ours)
    dyn_model = {i: v for i, v in dyn_first + dyn_second}

    for fmt in FORMATS:
        # every file lakeops added has the layout of Java's file of the same kind
        java_layout = {_kind(n): _leaves(d, fmt) for n, d in java_files[fmt].items()}
        for name, data in _metadata(warehouse / "db.db" / fmt).items():
            if name not in java_files[fmt]:
                assert java_layout[_kind(name)].items() <= _leaves(data, fmt).items(), name
        index = [n for n in _metadata(warehouse / "db.db" / f"{fmt}_dyn") if "index" in n]
        assert index, "the dynamic-bucket table has no index manifest"

    reads = [{"op": "read", "table": f"db.{t}"} for fmt in FORMATS for t in (fmt, f"{fmt}_dyn")]
    compacts = [{"op": "compact", "table": r["table"]} for r in reads]
    results = run_ops(java_classpath, warehouse, reads + compacts + reads)
    for r, expected in zip(results[: len(reads)], [model, dyn_model] * len(FORMATS), strict=True):
        assert normalize(r["rows"], ["id"]) == _rows(expected)
    for r, expected in zip(results[-len(reads) :], [model, dyn_model] * len(FORMATS), strict=True):
        assert normalize(r["rows"], ["id"]) == _rows(expected)

    catalog = Catalog(str(warehouse))
    for fmt, (_, codec) in FORMATS.items():
        assert catalog.get_table(f"db.{fmt}").read().sort_by("id").to_pylist() == _rows(model)
        dyn = catalog.get_table(f"db.{fmt}_dyn")
        assert dyn.read().sort_by("id").to_pylist() == _rows(dyn_model)
        for t in (fmt, f"{fmt}_dyn"):
            for name, data in _metadata(warehouse / "db.db" / t).items():
                assert data.startswith(_MAGIC[fmt]), name
                assert _codec(data, fmt) in (codec, None), name


def _rows(model: dict[int, str | None]) -> list[dict]:
    return [{"id": i, "v": model[i]} for i in sorted(model)]
