"""Rescaled buckets across engines, judged by a plain model of the rows (the last row per key):

* lakeops changes ``bucket`` and rescales one partition, leaving the other at the old count:
  Java Paimon 0.9 reads exactly the model, writes into the rescaled partition (its writer
  checks the bucket count of the partition's files, so it accepts only that one), and reads
  the model again; pypaimon 2.1 reads the model too;
* Java Paimon 0.9 alters ``bucket`` and overwrites one partition (Paimon's documented rescale):
  lakeops reads the model, refuses a plain write to the partition Java left at the old count,
  writes to the rescaled one, rescales the rest, and Java reads the final model.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.bucket.counts import BucketCountMismatchError
from tests.interop.oracle import oracle_read

pytestmark = pytest.mark.interop

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("dt", pa.string(), nullable=False),
        ("v", pa.int64()),
    ]
)
FIELDS = [
    {"name": "id", "type": "BIGINT NOT NULL"},
    {"name": "dt", "type": "STRING NOT NULL"},
    {"name": "v", "type": "BIGINT"},
]

Model = dict[tuple[int, str], int]


def _rows(ids: range, dt: str, v: int) -> list[dict[str, object]]:
    return [{"id": i, "dt": dt, "v": v * 1000 + i} for i in ids]


def _apply(model: Model, rows: list[dict[str, object]]) -> None:
    for r in rows:
        model[(int(r["id"]), str(r["dt"]))] = int(r["v"])  # type: ignore[call-overload]


def _sorted(rows: list[dict[str, object]]) -> list[tuple[object, ...]]:
    return sorted((r["id"], r["dt"], r["v"]) for r in rows)


def _expected(model: Model) -> list[tuple[object, ...]]:
    return sorted((k[0], k[1], v) for k, v in model.items())


def test_java_and_pypaimon_read_a_table_lakeops_rescaled(
    warehouse: Path, java_classpath: str
) -> None:
    from tests.interop.java_oracle import run_ops

    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["id", "dt"],
        partition_keys=["dt"],
        options={"bucket": "2"},
    )
    model: Model = {}
    for rows in (_rows(range(0, 40), "a", 1), _rows(range(0, 30), "b", 2)):
        table.write(pa.Table.from_pylist(rows, schema=SCHEMA))
        _apply(model, rows)
    update = _rows(range(20, 50), "a", 3)
    table.write(pa.Table.from_pylist(update, schema=SCHEMA))
    _apply(model, update)
    result = table.rescale_buckets(bucket=5, partitions=[{"dt": "a"}])
    assert result.partitions == ("dt=a",)
    first = _expected(model)
    # pypaimon first: it cannot read the manifests Java 0.9 writes (no _VALUE_STATS_COLS)
    assert _sorted(oracle_read(warehouse, "db.t").to_pylist()) == first
    java_rows = _rows(range(45, 60), "a", 4)
    _apply(model, java_rows)

    read1, _, read2 = run_ops(
        java_classpath,
        warehouse,
        [
            {"op": "read", "table": "db.t"},
            {"op": "write", "table": "db.t", "rows": java_rows},
            {"op": "read", "table": "db.t"},
        ],
    )
    assert _sorted(read1["rows"]) == first
    assert _sorted(read2["rows"]) == _expected(model)
    # Java wrote the rescaled partition with the new count
    reopened = catalog.get_table("db.t")
    counts = {
        (e.partition, e.total_buckets)
        for e in reopened.store.live_entries(reopened.latest_snapshot())
    }
    assert {n for _, n in counts} == {2, 5} and len(counts) == 2
    assert _sorted(reopened.read().to_pylist()) == _expected(model)
    # Java refuses a plain write into the partition still at the old count, as lakeops does
    with pytest.raises(RuntimeError, match="new bucket num 5, but the previous bucket num is 2"):
        run_ops(
            java_classpath,
            warehouse,
            [{"op": "write", "table": "db.t", "rows": _rows(range(3), "b", 9)}],
        )
    assert _sorted(catalog.get_table("db.t").read().to_pylist()) == _expected(model)


def test_lakeops_reads_writes_and_rescales_a_table_java_rescaled(
    warehouse: Path, java_classpath: str
) -> None:
    from tests.interop.java_oracle import run_ops

    model: Model = {}
    a1, b1, a2 = (
        _rows(range(0, 30), "a", 1),
        _rows(range(0, 25), "b", 2),
        _rows(range(10, 40), "a", 3),
    )
    for rows in (a1, b1, a2):
        _apply(model, rows)
    a_rows = [{"id": k[0], "dt": k[1], "v": v} for k, v in model.items() if k[1] == "a"]
    run_ops(
        java_classpath,
        warehouse,
        [
            {
                "op": "create",
                "table": "db.j",
                "fields": FIELDS,
                "primary_keys": ["id", "dt"],
                "partition_keys": ["dt"],
                "options": {"bucket": "2"},
            },
            {"op": "write", "table": "db.j", "rows": a1},
            {"op": "write", "table": "db.j", "rows": b1},
            {"op": "write", "table": "db.j", "rows": a2},
            {
                "op": "alter",
                "table": "db.j",
                "changes": [{"change": "setOption", "key": "bucket", "value": "3"}],
            },
            # Paimon's rescale: INSERT OVERWRITE the partition with its rows
            {"op": "overwrite", "table": "db.j", "partition": {"dt": "a"}, "rows": a_rows},
        ],
    )
    catalog = Catalog(str(warehouse))
    table = catalog.get_table("db.j")
    assert table.options.bucket == 3
    assert _sorted(table.read().to_pylist()) == _expected(model)
    with pytest.raises(BucketCountMismatchError, match="partition dt=b"):
        table.write(pa.Table.from_pylist(_rows(range(0, 3), "b", 9), schema=SCHEMA))
    more = _rows(range(35, 45), "a", 4)
    table.write(pa.Table.from_pylist(more, schema=SCHEMA))
    _apply(model, more)
    assert table.rescale_buckets().partitions == ("dt=b",)
    late = _rows(range(0, 3), "b", 9)
    table.write(pa.Table.from_pylist(late, schema=SCHEMA))
    _apply(model, late)
    (read,) = run_ops(java_classpath, warehouse, [{"op": "read", "table": "db.j"}])
    assert _sorted(read["rows"]) == _expected(model)
