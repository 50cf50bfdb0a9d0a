"""Append tables both ways with Java Paimon 0.9, before and after compaction by either side.

Two tables per side — unaware bucket (partitioned) and fixed bucket (``bucket-key``) — written
by their creator with awkward rows (nulls, NaN, -0.0, empty and non-ASCII strings); the other
side reads them, appends and compacts (Java: ``write.compact(full)`` for a fixed bucket, the
batch ``UnawareAppendTableCompactionCoordinator`` for unaware buckets), and so on, back and
forth. Every read on either side must equal the plain model: every row written.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakeops import Catalog
from lakeops.kv.append_reader import AppendFileReader
from tests.interop.java_oracle import json_rows, run_ops

pytestmark = pytest.mark.interop

SCHEMA = pa.schema(
    [("dt", pa.string()), ("k", pa.int64()), ("v", pa.string()), ("d", pa.float64())]
)
FIELDS = [
    {"name": "dt", "type": "STRING"},
    {"name": "k", "type": "BIGINT"},
    {"name": "v", "type": "STRING"},
    {"name": "d", "type": "DOUBLE"},
]
#: table -> (partition keys, options); "j…" created by Java, "l…" by lakeops
TABLES: dict[str, tuple[list[str], dict[str, str]]] = {
    "db.ju": (["dt"], {"compaction.max.file-num": "3"}),
    "db.jb": ([], {"bucket": "2", "bucket-key": "k"}),
    "db.lu": (["dt"], {"compaction.max.file-num": "3"}),
    "db.lb": ([], {"bucket": "2", "bucket-key": "k"}),
}


def _batch(seed: int) -> pa.Table:
    n = 6
    return pa.table(
        {
            "dt": [["a", "ü"][(seed + j) % 2] for j in range(n)],
            "k": [None if j == 2 else (seed * 10 + j) % 13 for j in range(n)],
            "v": [["", "é😀", None, "x", "y", "z"][(seed + j) % 6] for j in range(n)],
            "d": [[math.nan, -0.0, 0.0, None, 1.5, -2.25][(seed + j) % 6] for j in range(n)],
        },
        schema=SCHEMA,
    )


def _canon(rows: list[dict[str, Any]]) -> list[str]:
    out = []
    for r in rows:
        d = r["d"]
        if isinstance(d, str) or (isinstance(d, float) and math.isnan(d)):
            d = "NaN"
        elif isinstance(d, int | float):
            d = repr(float(d))  # keeps -0.0 apart from 0.0
        out.append(json.dumps([r["dt"], r["k"], r["v"], d], ensure_ascii=False))
    return sorted(out)


def _model(*batches: pa.Table) -> list[str]:
    return _canon(json_rows(pa.concat_tables(batches)))


def _lakeops(table: Any) -> list[str]:
    return _canon(json_rows(table.read()))


def _keys_in_one_bucket(table: Any) -> None:
    """Every bucket-key value (NULL too) lies in one bucket, whoever wrote its rows."""
    reader = AppendFileReader(table.file_io, table.schema, table.store.schema, table.root)
    buckets: dict[Any, set[int]] = {}
    for split in table.splits():
        directory = table.context.bucket_path(split.partition_bytes, split.bucket)
        for f in split.files:
            for k in reader.read(directory, f, ["k"]).column("k").to_pylist():
                buckets.setdefault(k, set()).add(split.bucket)
    assert len(buckets) > 3
    assert all(len(b) == 1 for b in buckets.values()), buckets


def test_append_tables_with_java_both_ways(tmp_path: Path, java_classpath: str) -> None:
    b = [_batch(s) for s in range(5)]
    wh = str(tmp_path)
    catalog = Catalog(wh)
    catalog.create_database("db")
    ops: list[dict[str, Any]] = []
    for name, (parts, options) in TABLES.items():
        if name.startswith("db.l"):
            table = catalog.create_table(name, schema=SCHEMA, partition_keys=parts, options=options)
            table.write(b[0])
            table.write(b[1])
        else:
            ops.append(
                {
                    "op": "create",
                    "table": name,
                    "fields": FIELDS,
                    "partition_keys": parts,
                    "options": options,
                }
            )
            ops += [{"op": "write", "table": name, "rows": json_rows(x)} for x in b[:2]]
    run_ops(java_classpath, wh, ops)

    # lakeops reads Java's tables, appends and compacts them fully
    for name in ("db.ju", "db.jb"):
        table = catalog.get_table(name)
        assert _lakeops(table) == _model(*b[:2]), name
        # Java's value statistics prune files: only the second commit holds k >= 6
        files = sum(len(s.files) for s in table.splits())
        wanted = pc.field("k") >= 6
        assert 0 < sum(len(s.files) for s in table.splits(filter=wanted)) < files, name
        got = _canon(json_rows(table.read(filter=wanted)))
        assert got == _canon(json_rows(pa.concat_tables(b[:2]).filter(wanted))), name
        table.write(b[2])
        assert table.compact(full=True) is not None, name
        assert _lakeops(table) == _model(*b[:3]), name

    # Java reads everything, appends to every table and compacts it
    ops = [{"op": "read", "table": n} for n in TABLES]
    for name in TABLES:
        batch = b[3] if name.startswith("db.j") else b[2]
        ops += [
            {"op": "write", "table": name, "rows": json_rows(batch)},
            {"op": "compact", "table": name},
            {"op": "read", "table": name},
        ]
    results = run_ops(java_classpath, wh, ops)
    reads = dict(zip(TABLES, results[: len(TABLES)], strict=True))
    assert _canon(reads["db.ju"]["rows"]) == _model(*b[:3])
    assert _canon(reads["db.jb"]["rows"]) == _model(*b[:3])
    assert _canon(reads["db.lu"]["rows"]) == _model(*b[:2])
    assert _canon(reads["db.lb"]["rows"]) == _model(*b[:2])
    after = results[len(TABLES) :]
    for i, name in enumerate(TABLES):
        compacted, read = after[3 * i + 1], after[3 * i + 2]
        if name != "db.ju":  # (ju holds two files per partition: below max-file-num)
            assert compacted.get("tasks", compacted.get("buckets", 0)) > 0, name
        model = _model(*b[:4]) if name.startswith("db.j") else _model(*b[:3])
        assert _canon(read["rows"]) == model, name

    # lakeops reads what Java compacted, appends and compacts again; Java reads last
    for name in TABLES:
        table = catalog.get_table(name)
        done = 4 if name.startswith("db.j") else 3
        assert _lakeops(table) == _model(*b[:done]), name
        table.write(b[4])
        table.compact(full=True)
        assert _lakeops(table) == _model(*b[:done], b[4]), name
    for name in ("db.jb", "db.lb"):  # written and compacted by both sides
        _keys_in_one_bucket(catalog.get_table(name))
    results = run_ops(java_classpath, wh, [{"op": "read", "table": n} for n in TABLES])
    for name, result in zip(TABLES, results, strict=True):
        done = 4 if name.startswith("db.j") else 3
        assert _canon(result["rows"]) == _model(*b[:done], b[4]), name


@pytest.mark.parametrize("fmt", ["orc", "avro"])
def test_java_reads_and_compacts_lakeops_append_files_in_every_format(
    tmp_path: Path, java_classpath: str, fmt: str
) -> None:
    b = [_batch(s) for s in range(4)]
    wh = str(tmp_path)
    catalog = Catalog(wh)
    catalog.create_database("db")
    options = {"file.format": fmt, "bucket": "2", "bucket-key": "k"}
    table = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"], options=options)
    for x in b[:3]:
        table.write(x)
    ops = [
        {"op": "read", "table": "db.t"},
        {"op": "write", "table": "db.t", "rows": json_rows(b[3])},
        {"op": "compact", "table": "db.t"},
        {"op": "read", "table": "db.t"},
    ]
    first, _, compacted, last = run_ops(java_classpath, wh, ops)
    assert _canon(first["rows"]) == _model(*b[:3])
    assert compacted["buckets"] > 0
    assert _canon(last["rows"]) == _model(*b)
    assert _lakeops(catalog.get_table("db.t")) == _model(*b)
    names = {f.file_name.rsplit(".", 1)[-1] for s in table.splits() for f in s.files}
    assert names == {fmt}  # Java compacted into the table's format
