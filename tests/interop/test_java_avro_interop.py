"""Avro data files with Java Paimon 0.9, both ways: lakeops writes every value type as Avro and
Java reads exactly the rows (and lakeops' writer schema is the one Java's files carry); Java
writes Avro and lakeops reads, appends and compacts it for Java and pypaimon to read back; a
table with Avro at level 0 and Parquet above is compacted by lakeops and read by Java and
pypaimon; what Paimon cannot write as Avro (timestamps of precision 7..9) is refused."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.errors import UnsupportedFeatureError
from lakeops.kv.avro_layout import avro_schema
from tests.interop.java_oracle import json_rows, normalize, run_ops
from tests.interop.oracle import oracle_read
from tests.interop.test_java_interop import (
    COLUMNS,
    NS_COLUMNS,
    _create_op,
    _every_type_rows,
    _ns_rows,
)

pytestmark = pytest.mark.interop

AVRO = {"file.format": "avro"}


def _files(warehouse: Path, table: str, pattern: str = "*") -> list[Path]:
    db, name = table.split(".")
    return sorted((warehouse / f"{db}.db" / name).rglob(f"bucket-*/{pattern}"))


def _tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _sorted_maps(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Map entries in key order: Java's Avro reader puts a map's entries in a HashMap, so
    their order is not the written one (a map has none)."""

    def by_key(pairs: Any) -> Any:
        if pairs is None:
            return None
        return sorted(pairs, key=lambda kv: (kv[0] is None, kv[0]))

    out = []
    for row in rows:
        row = dict(row)
        if row.get("m") is not None:
            row["m"] = by_key(row["m"])
        if row.get("deep") is not None:
            row["deep"] = [None if e is None else {**e, "m": by_key(e["m"])} for e in row["deep"]]
        out.append(row)
    return out


def _model(*tables: pa.Table) -> list[dict]:
    """Rows of the last write of each key, in the oracle's JSON form."""
    rows: dict[int, dict] = {}
    for t in tables:
        rows.update({r["id"]: r for r in json_rows(t)})
    return _sorted_maps(normalize(list(rows.values()), ["id"]))


def _java_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return _sorted_maps(normalize(rows, ["id"]))


def _full_names(schema: Any, namespace: str = "") -> Any:
    """An Avro schema with every record name spelled out in full (no 'namespace' keys), so
    that two spellings of one schema compare equal."""
    if isinstance(schema, list):
        return [_full_names(s, namespace) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    if out.get("type") == "record":
        name = str(out["name"])
        if "." not in name:
            ns = out.get("namespace", namespace)
            name = f"{ns}.{name}" if ns else name
        namespace = name.rpartition(".")[0]
        out.pop("namespace", None)
        out["name"] = name
        out["fields"] = [{**f, "type": _full_names(f["type"], namespace)} for f in out["fields"]]
        return out
    for key in ("items", "values"):
        if key in out:
            out[key] = _full_names(out[key], namespace)
    return out


def _writer_schema(path: Path) -> Any:
    with path.open("rb") as f:
        return fastavro.reader(f).metadata["avro.schema"]


def test_java_reads_every_type_lakeops_wrote_as_avro(warehouse: Path, java_classpath: str) -> None:
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    first = _every_type_rows(list(range(9)), "a")
    second = _every_type_rows(list(range(0, 12, 2)), "b")
    # a table lakeops creates from an Arrow schema, and one Java creates with every type
    arrow_cols = [c[0] for c in COLUMNS if c[0] not in ("c", "vc", "bn", "vb")]
    own = catalog.create_table(
        "db.own",
        schema=first.select(arrow_cols).schema,
        primary_keys=["id"],
        options={"bucket": "2", **AVRO},
    )
    run_ops(
        java_classpath,
        warehouse,
        [
            _create_op("db.java", COLUMNS, **AVRO),
            _create_op("db.layout", COLUMNS, **AVRO),
            {"op": "write", "table": "db.layout", "rows": json_rows(first)},
        ],
    )
    own.write(first.select(arrow_cols))
    own.write(second.select(arrow_cols))
    java = catalog.get_table("db.java")
    java.write(first)
    java.write(second)
    for t in ("db.own", "db.java"):
        names = [p.name for p in _files(warehouse, t)]
        assert names and all(n.startswith("data-") and n.endswith(".avro") for n in names), names

    # lakeops' writer schema is the one in Java's files, record names and defaults included
    theirs = json.loads(_writer_schema(_files(warehouse, "db.layout")[0]))
    assert _full_names(avro_schema(java.schema)) == _full_names(theirs)
    for f in _files(warehouse, "db.java"):
        assert _full_names(json.loads(_writer_schema(f))) == _full_names(theirs)
        with f.open("rb") as src:
            assert fastavro.reader(src).codec == "zstandard"  # Paimon's default: zstd

    results = run_ops(
        java_classpath,
        warehouse,
        [{"op": "read", "table": t} for t in ("db.own", "db.java")],
    )
    assert _java_rows(results[0]["rows"]) == _model(
        first.select(arrow_cols), second.select(arrow_cols)
    )
    assert _java_rows(results[1]["rows"]) == _model(first, second)
    # lakeops reads its own Avro files back the same, and so does pypaimon
    assert _sorted_maps(normalize(json_rows(java.read()), ["id"])) == _model(first, second)
    theirs = oracle_read(warehouse, "db.java")
    assert _sorted_maps(normalize(json_rows(theirs.cast(java.arrow_schema)), ["id"])) == _model(
        first, second
    )


@pytest.mark.parametrize(
    "options",
    [{}, {"file.compression": "lz4"}, {"avro.codec": "deflate"}],
    ids=["zstd", "snappy", "deflate"],
)
def test_lakeops_appends_to_and_compacts_an_avro_table_java_wrote(
    warehouse: Path, java_classpath: str, options: dict[str, str]
) -> None:
    first = _every_type_rows(list(range(12)), "java")
    second = _every_type_rows(list(range(0, 12, 3)), "again")
    run_ops(
        java_classpath,
        warehouse,
        [
            _create_op("db.t", COLUMNS, **AVRO, **options),
            {"op": "write", "table": "db.t", "rows": json_rows(first)},
            {"op": "write", "table": "db.t", "rows": json_rows(second)},
        ],
    )
    assert all(p.suffix == ".avro" for p in _files(warehouse, "db.t"))
    catalog = Catalog(str(warehouse))
    table = catalog.get_table("db.t")
    assert _sorted_maps(normalize(json_rows(table.read()), ["id"])) == _model(first, second)
    third = _every_type_rows(list(range(5, 20)), "lakeops")
    table.write(third)
    table.compact(full=True)
    codecs = set()
    for f in _files(warehouse, "db.t", "data-*"):
        with f.open("rb") as src:
            codecs.add(fastavro.reader(src).codec)
    want_codec = {"": "zstandard", "file.compression": "snappy", "avro.codec": "deflate"}
    assert codecs == {want_codec[next(iter(options), "")]}
    results = run_ops(
        java_classpath,
        warehouse,
        [
            {"op": "read", "table": "db.t"},
            {"op": "write", "table": "db.t", "rows": json_rows(first.slice(0, 3))},
            {"op": "compact", "table": "db.t"},
            {"op": "read", "table": "db.t"},
        ],
    )
    assert _java_rows(results[0]["rows"]) == _model(first, second, third)
    expected = _model(first, second, third, first.slice(0, 3))
    assert _java_rows(results[3]["rows"]) == expected
    assert all(p.suffix == ".avro" for p in _files(warehouse, "db.t", "data-*"))
    # lakeops reads Java's compaction of what it wrote (pypaimon 2.1 cannot read this table at
    # all: it fails with KeyError '_VALUE_STATS_COLS' on the manifests Java 0.9 writes)
    got = catalog.get_table("db.t").read()
    assert _sorted_maps(normalize(json_rows(got), ["id"])) == expected


def test_per_level_avro_and_parquet_compacted_by_lakeops_read_by_java_and_pypaimon(
    warehouse: Path, java_classpath: str
) -> None:
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), False),
            ("v", pa.string()),
            ("x", pa.float64()),
            ("ts", pa.timestamp("us")),
            ("n", pa.decimal128(20, 3)),
        ]
    )

    def rows(ids: range, tag: str) -> pa.Table:
        return pa.table(
            {
                "id": list(ids),
                "v": [f"{tag}-{i}" if i % 4 else None for i in ids],
                "x": [i / 3 if i % 5 else float("-0.0") for i in ids],
                "ts": [i * -1_000_003 if i % 6 else None for i in ids],
                "n": [None if i % 7 == 0 else -i * 1001 for i in ids],
            },
            schema=schema,
        )

    options = {
        "bucket": "2",
        "file.format.per.level": "0:avro",
        "file.compression.per.level": "0:lz4",
    }
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    table = catalog.create_table("db.p", schema=schema, primary_keys=["id"], options=options)
    a, b, c = rows(range(0, 40), "a"), rows(range(10, 30), "b"), rows(range(35, 60), "c")
    table.write(a)
    table.write(b)
    # level 0 holds Avro files (snappy: Paimon's Avro codec for every compression but zstd)
    assert {p.suffix for p in _files(warehouse, "db.p")} == {".avro"}
    for f in _files(warehouse, "db.p"):
        with f.open("rb") as src:
            assert fastavro.reader(src).codec == "snappy"
    table.compact(full=True)
    # the full compaction's output (the highest level) is Parquet, the table's default
    assert {p.suffix for p in _files(warehouse, "db.p")} >= {".parquet"}
    assert normalize(json_rows(table.read()), ["id"]) == _model(a, b)
    table.write(c)  # a new level-0 Avro file beside the Parquet ones

    results = run_ops(java_classpath, warehouse, [{"op": "read", "table": "db.p"}])
    assert _java_rows(results[0]["rows"]) == _model(a, b, c)
    theirs = oracle_read(warehouse, "db.p")
    assert normalize(json_rows(theirs.select(schema.names)), ["id"]) == _model(a, b, c)

    # Java writes level 0 (Avro by the same option), lakeops compacts, Java reads it back
    d = rows(range(50, 70), "d")
    run_ops(java_classpath, warehouse, [{"op": "write", "table": "db.p", "rows": json_rows(d)}])
    assert any(p.suffix == ".avro" for p in _files(warehouse, "db.p"))
    catalog.get_table("db.p").compact(full=True)
    results = run_ops(
        java_classpath,
        warehouse,
        [{"op": "compact", "table": "db.p"}, {"op": "read", "table": "db.p"}],
    )
    assert _java_rows(results[1]["rows"]) == _model(a, b, c, d)
    assert normalize(json_rows(catalog.get_table("db.p").read()), ["id"]) == _model(a, b, c, d)


def test_timestamps_paimon_cannot_write_as_avro_are_refused_byte_identical(
    warehouse: Path, java_classpath: str
) -> None:
    # Java Paimon refuses to create the table ...
    with pytest.raises(RuntimeError, match="precision"):
        run_ops(java_classpath, warehouse, [_create_op("db.ns", NS_COLUMNS, **AVRO)])
    # ... and lakeops refuses to create it, or to write Avro into one created as Parquet
    catalog = Catalog(str(warehouse))
    data = _ns_rows(list(range(5)))
    with pytest.raises(UnsupportedFeatureError, match=r"precision 0\.\.6"):
        catalog.create_table(
            "db.mine", schema=data.schema, primary_keys=["id"], options={"bucket": "1", **AVRO}
        )
    run_ops(
        java_classpath,
        warehouse,
        [
            _create_op("db.p", NS_COLUMNS),
            {"op": "write", "table": "db.p", "rows": json_rows(_ns_rows([1, 2], True))},
            {
                "op": "alter",
                "table": "db.p",
                "changes": [
                    {"change": "setOption", "key": "file.format.per.level", "value": "0:avro"}
                ],
            },
        ],
    )
    before = _tree(warehouse)
    table = catalog.get_table("db.p")
    with pytest.raises(UnsupportedFeatureError, match=r"precision 0\.\.6"):
        table.write(data)
    with pytest.raises(UnsupportedFeatureError, match=r"precision 0\.\.6"):
        table.compact(full=True)
    assert _tree(warehouse) == before
