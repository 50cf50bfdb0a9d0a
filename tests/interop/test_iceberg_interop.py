"""Iceberg-compatible metadata judged by pyiceberg (0.12, ``.venv-iceberg``, a subprocess): after
each lakeops commit (write, overwrite, compaction) and snapshot expiry, pyiceberg reading the
table's newest ``v<N>.metadata.json`` returns exactly the rows pypaimon 2.1 reads from the Paimon
snapshot (pypaimon keeps reading the table too). The Java oracle is Paimon 0.9, whose
``metadata.iceberg-compatible`` writes the older layout, so the Paimon 1.x layout is judged by an
Iceberg reader, not by Java."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.format.schema_change import AddColumn, RenameColumn
from lakeops.format.types import DataType
from tests.interop.iceberg_oracle import iceberg_read, require_pyiceberg
from tests.interop.java_oracle import json_rows, run_ops
from tests.interop.oracle import oracle_read

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.string())])


def _rows(table: pa.Table) -> list[tuple[object, ...]]:
    cols = ["id", "dt", "v"]
    return sorted(zip(*(table.column(c).to_pylist() for c in cols), strict=True))


def _avro_records(path: str) -> list[dict[str, Any]]:
    with open(path.removeprefix("file:"), "rb") as f:
        return [r for r in fastavro.reader(f) if isinstance(r, dict)]


def _latest_metadata(meta_dir: Path) -> Path:
    hint = int((meta_dir / "version-hint.text").read_text())
    return meta_dir / f"v{hint}.metadata.json"


def test_append_table_write_overwrite_expire_read_by_pyiceberg(tmp_path: Path) -> None:
    require_pyiceberg()
    catalog = Catalog(tmp_path)
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        partition_keys=["dt"],
        options={"metadata.iceberg.storage": "table-location", "bucket": "-1"},
    )
    table.write(pa.table({"id": [1, 2, 3], "dt": ["a", "b", "a"], "v": ["x", "y", "z"]}))
    table.write(pa.table({"id": [4, 5], "dt": ["b", "c"], "v": ["p", "q"]}))
    table.write(pa.table({"id": [6], "dt": ["a"], "v": ["o"]}), overwrite=[{"dt": "a"}])
    meta_dir = tmp_path / "db.db" / "t" / "metadata"
    rows, info = iceberg_read(_latest_metadata(meta_dir))
    expected = _rows(oracle_read(tmp_path, "db.t"))
    assert expected == [(2, "b", "y"), (4, "b", "p"), (5, "c", "q"), (6, "a", "o")]
    assert _rows(rows) == expected
    assert info["current_snapshot_id"] == 3 and info["partition_fields"] == ["dt"]
    # metadata.iceberg.previous-versions-max = 0: only the newest version is left
    assert sorted(p.name for p in meta_dir.glob("v*.metadata.json")) == ["v3.metadata.json"]

    table.compact(full=True)
    table.expire_snapshots(retain_min=1, retain_max=1)
    rows, info = iceberg_read(_latest_metadata(meta_dir))
    assert info["current_snapshot_id"] == 4
    assert _rows(rows) == _rows(oracle_read(tmp_path, "db.t")) == expected
    assert all(Path(f).exists() for f in info["files"])


def test_primary_key_table_shows_the_fully_compacted_files(tmp_path: Path) -> None:
    """Paimon exposes only the highest-level files of a primary-key table to Iceberg: before a
    full compaction pyiceberg sees none of the level-0 rows; after it, the merged rows."""
    require_pyiceberg()
    catalog = Catalog(tmp_path)
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["id"],
        options={"metadata.iceberg.storage": "hadoop-catalog", "bucket": "2"},
    )
    table.write(pa.table({"id": [1, 2, 3], "dt": ["a", "b", "a"], "v": ["x", "y", "z"]}))
    table.write(pa.table({"id": [2, 4], "dt": ["b", "c"], "v": ["Y", "w"]}))
    meta_dir = tmp_path / "iceberg" / "db" / "t" / "metadata"
    rows, info = iceberg_read(_latest_metadata(meta_dir))
    assert rows.num_rows == 0 and info["files"] == []

    table.compact(full=True)
    rows, info = iceberg_read(_latest_metadata(meta_dir))
    expected = _rows(oracle_read(tmp_path, "db.t"))
    assert expected == [(1, "a", "x"), (2, "b", "Y"), (3, "a", "z"), (4, "c", "w")]
    assert _rows(rows) == expected
    assert not (tmp_path / "db.db" / "t" / "metadata").exists()


def test_java_09_commits_on_top_of_lakeops_iceberg_metadata(
    catalog: Catalog, warehouse: Path, java_classpath: str
) -> None:
    """Paimon 0.9 (``metadata.iceberg-compatible``) builds its next version on the previous one
    (``createMetadataWithBase``): it reads lakeops' metadata JSON, manifest list and manifests
    with its own readers, and lists lakeops' files next to its own. Then lakeops commits on top
    of Java's and pyiceberg reads the head. (Paimon 0.9's own Avro files declare a nullable
    top-level record, which pyiceberg cannot open, so Java's version is read with fastavro.)"""
    require_pyiceberg()
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        partition_keys=["dt"],
        options={"metadata.iceberg-compatible": "true", "bucket": "-1"},
    )
    table.write(pa.table({"id": [1, 2], "dt": ["a", "b"], "v": ["x", "y"]}))
    run_ops(
        java_classpath,
        str(warehouse),
        [
            {
                "op": "write",
                "table": "db.t",
                "rows": json_rows(pa.table({"id": [3], "dt": ["a"], "v": ["z"]}, schema=SCHEMA)),
            }
        ],
    )
    meta_dir = warehouse / "db.db" / "t" / "metadata"
    java = json.loads((meta_dir / "v2.metadata.json").read_text())
    assert java["current-snapshot-id"] == 2
    (snap,) = [s for s in java["snapshots"] if s["snapshot-id"] == 2]
    live = set()
    for manifest in _avro_records(snap["manifest-list"]):
        for entry in _avro_records(manifest["manifest_path"]):
            if entry["status"] != 2:  # not DELETED
                live.add(entry["data_file"]["file_path"].removeprefix("file:"))
    on_disk = {str(p) for p in (warehouse / "db.db" / "t").glob("dt=*/bucket-*/*.parquet")}
    assert live == on_disk and len(on_disk) == 3

    table.write(pa.table({"id": [4], "dt": ["c"], "v": ["w"]}, schema=SCHEMA))
    rows, info = iceberg_read(_latest_metadata(meta_dir))
    assert info["current_snapshot_id"] == 3
    # (pypaimon 2.1 cannot read the manifests Java 0.9 wrote: the rows are the plain model's)
    assert _rows(rows) == [(1, "a", "x"), (2, "b", "y"), (3, "a", "z"), (4, "c", "w")]


def test_typed_partitions_and_schema_evolution_read_by_pyiceberg(tmp_path: Path) -> None:
    """Date and int partition values (one null), decimal and timestamp columns, then a column
    renamed and one added: the old file is read under the new name (the name mapping lists
    every name of a field id) with nulls for the added column."""
    require_pyiceberg()
    catalog = Catalog(tmp_path)
    catalog.create_database("db")
    schema = pa.schema(
        [
            ("id", pa.int32()),
            ("d", pa.date32()),
            ("k", pa.int32()),
            ("amt", pa.decimal128(10, 2)),
            ("ts", pa.timestamp("us")),
        ]
    )
    table = catalog.create_table(
        "db.t",
        schema=schema,
        partition_keys=["d", "k"],
        options={"metadata.iceberg.storage": "table-location"},
    )
    first = {
        "id": [1, 2],
        "d": [dt.date(2024, 1, 1), dt.date(2024, 1, 2)],
        "k": [1, None],
        "amt": [decimal.Decimal("1.50"), None],
        "ts": [dt.datetime(2024, 1, 1, 1), None],
    }
    table.write(pa.table(first, schema=schema))
    table.alter([RenameColumn("amt", "amount"), AddColumn("note", DataType("STRING"))])
    table = catalog.get_table("db.t")
    table.write(
        pa.table(
            {
                "id": [3],
                "d": [dt.date(2024, 1, 1)],
                "k": [1],
                "amount": [decimal.Decimal("2.25")],
                "ts": [None],
                "note": ["n"],
            }
        )
    )
    rows, _ = iceberg_read(tmp_path / "db.db" / "t" / "metadata" / "v2.metadata.json")
    assert sorted(rows.to_pylist(), key=lambda r: r["id"]) == [
        {
            "id": 1,
            "d": dt.date(2024, 1, 1),
            "k": 1,
            "amount": decimal.Decimal("1.50"),
            "ts": dt.datetime(2024, 1, 1, 1),
            "note": None,
        },
        {"id": 2, "d": dt.date(2024, 1, 2), "k": None, "amount": None, "ts": None, "note": None},
        {
            "id": 3,
            "d": dt.date(2024, 1, 1),
            "k": 1,
            "amount": decimal.Decimal("2.25"),
            "ts": None,
            "note": "n",
        },
    ]


def test_column_bounds_let_pyiceberg_prune_files_exactly(tmp_path: Path) -> None:
    """The manifests carry each file's null counts and lower/upper bounds by field id (from
    its Paimon value statistics, as Paimon's ``IcebergDataFileMeta.create``): pyiceberg's
    filtered scan plans only the files whose bounds admit the filter and returns exactly the
    rows the plain model keeps — strings past the 16-character statistics truncation
    included, whose upper bound is rounded up, never cut below a value."""
    require_pyiceberg()
    catalog = Catalog(tmp_path)
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t", schema=SCHEMA, options={"metadata.iceberg.storage": "table-location"}
    )
    long = "zzzzzzzzzzzzzzzz-and-more"  # longer than the 16 code points statistics keep
    batches = [
        pa.table({"id": [1, 2, 3], "dt": ["a", "a", "b"], "v": ["x1", None, long]}),
        pa.table({"id": [10, 11], "dt": ["c", "c"], "v": ["y1", "y2"]}),
        pa.table({"id": [20, 25], "dt": ["d", "e"], "v": [None, None]}),
    ]
    for b in batches:
        table.write(b.cast(SCHEMA))
    meta = _latest_metadata(tmp_path / "db.db" / "t" / "metadata")
    every = pa.concat_tables([b.cast(SCHEMA) for b in batches])
    model = {(r["id"], r["dt"], r["v"]) for r in every.to_pylist()}
    cases = {
        "id >= 10 and id <= 11": (lambda r: 10 <= r[0] <= 11, 1),
        "id > 100": (lambda r: r[0] > 100, 0),
        # the all-null file stays planned: like Paimon, no value_counts are written, so an
        # Iceberg reader cannot tell that a column holds only nulls
        "v == 'zzzzzzzzzzzzzzzz-and-more'": (lambda r: r[2] == long, 2),
        "v > 'zzzzzzzzzzzzzzzz-and'": (
            lambda r: r[2] is not None and r[2] > "zzzzzzzzzzzzzzzz-and",
            2,
        ),
        "v is null": (lambda r: r[2] is None, 2),
        "dt == 'c' or id == 25": (lambda r: r[1] == "c" or r[0] == 25, 2),
    }
    for expression, (keep, files) in cases.items():
        rows, info = iceberg_read(meta, expression)
        assert set(_rows(rows)) == {r for r in model if keep(r)}, expression
        assert len(info["files"]) == files, expression


def test_float_decimal_and_timestamp_bounds_prune_exactly(tmp_path: Path) -> None:
    """Bounds of DOUBLE, DECIMAL (negative unscaled values at a byte's edge, encoded in the
    fewest bytes) and TIMESTAMP columns: pyiceberg plans only the files whose bounds admit the
    filter and returns the rows the plain model keeps. A file whose DOUBLE column holds a NaN
    carries no bound for it (Iceberg's bounds are never NaN), so it stays planned."""
    require_pyiceberg()
    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("x", pa.float64()),
            ("amt", pa.decimal128(10, 2)),
            ("ts", pa.timestamp("us")),
        ]
    )
    catalog = Catalog(tmp_path)
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t", schema=schema, options={"metadata.iceberg.storage": "table-location"}
    )
    t0 = dt.datetime(2024, 1, 1)
    d = decimal.Decimal
    batches = [
        {"id": [1, 2], "x": [-1.5, 0.25], "amt": [d("-1.28"), d("-1.27")], "ts": [t0, t0]},
        {
            "id": [3, 4],
            "x": [10.0, 12.5],
            "amt": [d("1.28"), d("327.67")],
            "ts": [t0 + dt.timedelta(days=1, microseconds=1), t0 + dt.timedelta(days=2)],
        },
        {"id": [5], "x": [float("nan")], "amt": [d("-99999999.99")], "ts": [t0]},
    ]
    for b in batches:
        table.write(pa.table(b, schema=schema))
    meta = _latest_metadata(tmp_path / "db.db" / "t" / "metadata")
    every = [r for b in batches for r in pa.table(b, schema=schema).to_pylist()]
    cases = {
        "x > 5.0": (lambda r: r["x"] > 5.0, 2),
        "x < -1.0": (lambda r: r["x"] < -1.0, 2),
        "amt < -1.27": (lambda r: r["amt"] < d("-1.27"), 2),
        "amt >= 1.28": (lambda r: r["amt"] >= d("1.28"), 1),
        "ts > '2024-01-02T00:00:00'": (lambda r: r["ts"] > t0 + dt.timedelta(days=1), 1),
        "ts <= '2024-01-01T00:00:00'": (lambda r: r["ts"] <= t0, 2),
    }
    for expression, (keep, files) in cases.items():
        rows, info = iceberg_read(meta, expression)
        want = sorted(r["id"] for r in every if keep(r))
        assert sorted(rows.column("id").to_pylist()) == want, expression
        assert len(info["files"]) == files, expression


def test_pyiceberg_time_travels_through_the_kept_history(tmp_path: Path) -> None:
    """Each version keeps the earlier snapshots Paimon's retention keeps (Paimon's
    ``createMetadataWithBase``): pyiceberg reads every one of them — appends, an overwrite,
    a compaction — as the plain model of that step; after snapshot expiry the head's history
    starts at the earliest live snapshot and those still read exactly."""
    require_pyiceberg()
    catalog = Catalog(tmp_path)
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        partition_keys=["dt"],
        options={"metadata.iceberg.storage": "table-location", "bucket": "-1"},
    )
    model: dict[int, set[tuple[object, ...]]] = {}
    rows: set[tuple[object, ...]] = set()
    steps: list[tuple[pa.Table, list[dict[str, str]] | None]] = [
        (pa.table({"id": [1, 2], "dt": ["a", "b"], "v": ["x", "y"]}), None),
        (pa.table({"id": [3], "dt": ["a"], "v": ["z"]}), None),
        (pa.table({"id": [4], "dt": ["a"], "v": ["o"]}), [{"dt": "a"}]),
        (pa.table({"id": [5, 6], "dt": ["c", "c"], "v": ["p", "q"]}), None),
        (pa.table({"id": [8], "dt": ["c"], "v": ["s"]}), None),
    ]
    for data, overwrite in steps:
        snapshot = table.write(data.cast(SCHEMA), overwrite=overwrite or False)
        if overwrite:
            rows = {r for r in rows if r[1] != "a"}
        rows |= set(_rows(data))
        model[snapshot.id] = set(rows)
    compacted = table.compact(full=True)
    assert compacted is not None
    model[compacted.id] = set(rows)
    meta = _latest_metadata(tmp_path / "db.db" / "t" / "metadata")
    for snapshot_id, want in model.items():
        got, info = iceberg_read(meta, snapshot_id=snapshot_id)
        assert set(_rows(got)) == want, snapshot_id
    assert info["snapshot_ids"] == sorted(model)
    table.expire_snapshots(retain_min=1, retain_max=2)
    table.write(pa.table({"id": [7], "dt": ["b"], "v": ["r"]}).cast(SCHEMA))
    meta = _latest_metadata(tmp_path / "db.db" / "t" / "metadata")
    _, info = iceberg_read(meta)
    kept = info["snapshot_ids"]
    assert kept[0] >= compacted.id - 1 and kept[-1] == info["current_snapshot_id"]
    for snapshot_id in kept[:-1]:
        got, _ = iceberg_read(meta, snapshot_id=snapshot_id)
        assert set(_rows(got)) == model[snapshot_id], snapshot_id


def test_nested_columns_read_by_pyiceberg(tmp_path: Path) -> None:
    """ARRAY, MAP, ROW and an ARRAY of ROWs: the Iceberg schema carries Paimon's nested ids
    (list elements and map values at ``Integer.MAX_VALUE / 4 + id * 1024 + depth``, map keys
    below it, struct fields their own) and the name mapping their Parquet names, so pyiceberg
    reads every value as written (nulls at each level included), after a compaction too."""
    require_pyiceberg()
    point = pa.struct([("x", pa.int32()), ("y", pa.string())])
    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("tags", pa.list_(pa.string())),
            ("attrs", pa.map_(pa.string(), pa.int64())),
            ("p", point),
            ("path", pa.list_(point)),
        ]
    )
    rows = [
        {
            "id": 1,
            "tags": ["a", None, "b"],
            "attrs": [("k", 1), ("l", None)],
            "p": {"x": 1, "y": "one"},
            "path": [{"x": 2, "y": None}, None],
        },
        {"id": 2, "tags": None, "attrs": None, "p": None, "path": []},
        # (no null list of structs: pyiceberg 0.12 reads one back as an empty list, though
        # the Parquet file holds a null, as lakeops and pyarrow read it)
        {"id": 3, "tags": [], "attrs": [], "p": {"x": None, "y": "z"}, "path": [None]},
    ]
    catalog = Catalog(tmp_path)
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t", schema=schema, options={"metadata.iceberg.storage": "table-location"}
    )
    for r in rows:
        table.write(pa.Table.from_pylist([r], schema=schema))
    meta_dir = tmp_path / "db.db" / "t" / "metadata"
    doc = json.loads(_latest_metadata(meta_dir).read_text())
    (current,) = [s for s in doc["schemas"] if s["schema-id"] == doc["current-schema-id"]]
    types = {f["name"]: f["type"] for f in current["fields"]}
    base = (2**31 - 1) // 4
    tags_id = next(f["id"] for f in current["fields"] if f["name"] == "tags")
    assert types["tags"]["element-id"] == base + tags_id * 1024 + 1
    assert types["attrs"]["key-id"] < base < types["attrs"]["value-id"]

    def normal(r: dict[str, Any]) -> dict[str, Any]:
        attrs = r["attrs"]
        return {**r, "attrs": None if attrs is None else sorted(dict(attrs).items())}

    want = sorted((normal(r) for r in rows), key=lambda r: r["id"])
    for step in ("written", "compacted"):
        got, _ = iceberg_read(_latest_metadata(meta_dir))
        assert sorted((normal(r) for r in got.to_pylist()), key=lambda r: r["id"]) == want, step
        table.compact(full=True)
