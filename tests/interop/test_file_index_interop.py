"""File indexes judged by Java Paimon 0.9: its ``FileIndexPredicate`` finds and uses the bloom
filters lakeops writes (embedded in the manifest entry and as extra ``.index`` files), after
lakeops' writes and full compactions of both table kinds, and on a Java-written table after
lakeops compacted it.

Java 0.9 itself indexes only append tables' files (its key-value writer has no file index; Paimon
1.x indexes primary-key tables' value columns too): the primary-key cases are judged by handing
lakeops' index bytes to Java 0.9's reader, which is the same format 1.x reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakeops import Catalog

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string()), ("v", pa.float64())])
PRESENT = list(range(0, 120, 7))
ABSENT = list(range(1000, 1040))


def _batch(ids: range) -> pa.Table:
    return pa.table(
        {"id": list(ids), "s": [f"s{i}" for i in ids], "v": [i / 2 for i in ids]}, schema=SCHEMA
    )


def _probes() -> list[dict[str, Any]]:
    return [{"field": "id", "value": i} for i in PRESENT + ABSENT] + [
        {"field": "s", "value": f"s{i}"} for i in PRESENT + ABSENT
    ]


def _check_file(f: dict[str, Any], ids_in_file: set[int]) -> None:
    """Every value in the file may match (no false negatives); most absent ones are skipped."""
    assert sorted(f["index_columns"]) == ["id:bloom-filter", "s:bloom-filter"], f
    answers = f["may_match"]
    n = len(PRESENT) + len(ABSENT)
    for column in range(2):
        got = answers[column * n : (column + 1) * n]
        for value, may in zip(PRESENT + ABSENT, got, strict=True):
            if value in ids_in_file:
                assert may, (f["file"], column, value)
        skipped = sum(1 for value, may in zip(PRESENT + ABSENT, got, strict=True) if not may)
        assert skipped >= len(ABSENT) // 2, (f["file"], column, skipped)


@pytest.mark.parametrize(
    ("primary_keys", "items"),
    [([], "200"), (["id"], "20000")],
    ids=["append-embedded", "primary-key-extra-file"],
)
def test_java_uses_lakeops_bloom_filters_after_write_and_compaction(
    warehouse: Path, java_classpath: str, primary_keys: list[str], items: str
) -> None:
    from tests.interop.java_oracle import run_ops

    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=primary_keys,
        options={
            "bucket": "1" if primary_keys else "-1",
            "file-index.bloom-filter.columns": "id,s",
            "file-index.bloom-filter.id.items": items,
            "file-index.bloom-filter.s.items": items,
        },
    )
    table.write(_batch(range(0, 60)))
    table.write(_batch(range(50, 120)))
    probe = [{"op": "file_index", "table": "db.t", "probes": _probes()}]
    before = run_ops(java_classpath, warehouse, probe)[0]["files"]
    table.compact(full=True)
    after = run_ops(java_classpath, warehouse, probe)[0]["files"]
    embedded = items == "200"
    for files, rows_of in (
        (before, {60: set(range(0, 60)), 70: set(range(50, 120))}),
        (after, {130 if not primary_keys else 120: set(range(0, 120))}),
    ):
        assert sorted(f["row_count"] for f in files) == sorted(rows_of)
        for f in files:
            assert f["embedded"] is embedded, f
            assert f["extra_files"] == ([] if embedded else [f["file"] + ".index"]), f
            _check_file(f, rows_of[f["row_count"]])


def test_lakeops_compacts_a_java_indexed_table_and_java_finds_the_index(
    warehouse: Path, java_classpath: str
) -> None:
    """Java writes three indexed files; after lakeops' full compaction the one file left has
    the index Java's reader uses, and Java reads every row."""
    from tests.interop.java_oracle import normalize, run_ops

    fields = [
        {"name": "id", "type": "BIGINT"},
        {"name": "s", "type": "STRING"},
        {"name": "v", "type": "DOUBLE"},
    ]
    options = {
        "bucket": "-1",
        "file-index.bloom-filter.columns": "id,s",
        "file-index.bloom-filter.id.items": "500",
        "file-index.bloom-filter.s.items": "500",
    }
    batches = [range(0, 40), range(40, 80), range(80, 120)]
    rows = [[{"id": i, "s": f"s{i}", "v": i / 2} for i in b] for b in batches]
    ops: list[dict[str, Any]] = [
        {"op": "create", "table": "db.j", "fields": fields, "primary_keys": [], "options": options}
    ]
    ops += [{"op": "write", "table": "db.j", "rows": r} for r in rows]
    ops.append({"op": "file_index", "table": "db.j", "probes": _probes()})
    java = run_ops(java_classpath, warehouse, ops)
    assert len(java[-1]["files"]) == 3
    assert all(f["index_columns"] for f in java[-1]["files"])

    table = Catalog(str(warehouse)).get_table("db.j")
    table.compact(full=True)
    after = run_ops(
        java_classpath,
        warehouse,
        [
            {"op": "file_index", "table": "db.j", "probes": _probes()},
            {"op": "read", "table": "db.j"},
        ],
    )
    files = after[0]["files"]
    assert len(files) == 1
    _check_file(files[0], set(range(120)))
    assert normalize(after[1]["rows"], ["id"]) == normalize([r for b in rows for r in b], ["id"])


def test_rewrite_file_index_adds_indexes_java_uses(warehouse: Path, java_classpath: str) -> None:
    """Java writes two files without an index; the option is added and lakeops rewrites the
    file indexes: Java then finds the (embedded) index on every file, uses it to skip absent
    values and never a present one, and still reads every row."""
    from tests.interop.java_oracle import normalize, run_ops

    fields = [
        {"name": "id", "type": "BIGINT"},
        {"name": "s", "type": "STRING"},
        {"name": "v", "type": "DOUBLE"},
    ]
    rows = [
        [{"id": i, "s": f"s{i}", "v": i / 2} for i in b] for b in (range(0, 60), range(60, 120))
    ]
    java = run_ops(
        java_classpath,
        warehouse,
        [
            {
                "op": "create",
                "table": "db.r",
                "fields": fields,
                "primary_keys": [],
                "options": {"bucket": "-1"},
            },
            *({"op": "write", "table": "db.r", "rows": r} for r in rows),
            {"op": "file_index", "table": "db.r", "probes": _probes()},
        ],
    )
    assert all(not f["index_columns"] for f in java[-1]["files"])
    from lakeops.format.schema_change import SetOption

    table = Catalog(str(warehouse)).get_table("db.r")
    table.alter(
        [
            SetOption("file-index.bloom-filter.columns", "id,s"),
            SetOption("file-index.bloom-filter.id.items", "300"),
            SetOption("file-index.bloom-filter.s.items", "300"),
        ]
    )
    assert Catalog(str(warehouse)).get_table("db.r").rewrite_file_index().files == 2
    after = run_ops(
        java_classpath,
        warehouse,
        [
            {"op": "file_index", "table": "db.r", "probes": _probes()},
            {"op": "read", "table": "db.r"},
        ],
    )
    files = after[0]["files"]
    assert sorted(f["row_count"] for f in files) == [60, 60]
    ranges = []
    for f in files:
        assert f["extra_files"] == [] and f["embedded"], f
        fits = [
            lo
            for lo in (0, 60)
            if all(
                may for v, may in zip(PRESENT, f["may_match"], strict=False) if lo <= v < lo + 60
            )
        ]
        assert fits, f
        ranges.append(fits[0])
        _check_file(f, set(range(fits[0], fits[0] + 60)))
    assert sorted(ranges) == [0, 60]
    assert normalize(after[1]["rows"], ["id"]) == normalize([r for b in rows for r in b], ["id"])


@pytest.mark.parametrize("primary_keys", [[], ["id"]], ids=["append", "primary-key"])
def test_java_uses_lakeops_bitmaps_exactly(
    warehouse: Path, java_classpath: str, primary_keys: list[str]
) -> None:
    """Bitmap indexes (version 1, which Java 0.9 reads) on a string and a BIGINT column: after
    lakeops' writes and full compaction, Java's FileIndexPredicate says a value may match a file
    exactly when the file holds it (a bitmap has no false positives), nulls included."""
    from tests.interop.java_oracle import run_ops

    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    table = catalog.create_table(
        "db.b",
        schema=SCHEMA,
        primary_keys=primary_keys,
        options={
            "bucket": "1" if primary_keys else "-1",
            "file-index.bitmap.columns": "s,v",
            "file-index.bitmap.s.version": "1",  # Java 0.9 reads version 1 only
            "file-index.bitmap.v.version": "1",
            "file-index.bloom-filter.columns": "id",
        },
    )

    def batch(ids: range) -> pa.Table:
        return pa.table(
            {
                "id": list(ids),
                "s": [None if i % 11 == 0 else f"g{i % 5}" for i in ids],
                "v": [float(i % 7) for i in ids],
            },
            schema=SCHEMA,
        )

    table.write(batch(range(0, 40)))
    table.write(batch(range(40, 50)))
    probes = [{"field": "s", "value": f"g{g}"} for g in range(8)]
    probes += [{"field": "v", "value": float(x)} for x in range(9)]
    probe = [{"op": "file_index", "table": "db.b", "probes": probes}]
    before = run_ops(java_classpath, warehouse, probe)[0]["files"]
    table.compact(full=True)
    after = run_ops(java_classpath, warehouse, probe)[0]["files"]
    for files, rows_of in (
        (before, {40: range(0, 40), 10: range(40, 50)}),
        (after, {50: range(50)}),
    ):
        assert sorted(f["row_count"] for f in files) == sorted(rows_of)
        for f in files:
            assert sorted(f["index_columns"]) == ["id:bloom-filter", "s:bitmap", "v:bitmap"]
            ids = rows_of[f["row_count"]]
            groups = {i % 5 for i in ids if i % 11}
            sevens = {i % 7 for i in ids}
            expected = [g in groups for g in range(8)] + [x in sevens for x in range(9)]
            assert f["may_match"] == expected, f
