"""A sort-compacted append table, read by Java Paimon 0.9 and pypaimon 2.1.

lakeops creates two unaware-bucket append tables and writes four commits to each. On the
first (deletion vectors on) Java deletes rows the way Paimon's Spark DELETE does (a vector per
touched file), then lakeops sort-compacts it by zorder on (k2, k): one OVERWRITE snapshot that
replaces every file of the partitions and their index files. The second has
``clustering.columns`` (hilbert), and lakeops' full compaction sorts it. Java and pypaimon then
read both tables: exactly the plain model (every row written, less the deleted ones), before
and after, and lakeops reads the same.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakeops import Catalog
from lakeops.format.deletion_vector import DELETION_VECTORS_INDEX
from tests.interop.java_oracle import run_ops
from tests.interop.oracle import oracle_script

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([("dt", pa.string()), ("k", pa.int64()), ("k2", pa.int64()), ("v", pa.string())])
#: the k values Java deletes
DELETED = [3, 1005, 2011, 3000, 3007]


def _batch(seed: int, n: int = 40) -> pa.Table:
    return pa.table(
        {
            "dt": [["a", "b"][j % 2] for j in range(n)],
            "k": [seed * 1000 + j for j in range(n)],
            "k2": [(seed * 37 + j * 11) % 17 - 8 for j in range(n)],
            "v": [None if j % 9 == 4 else f"v{seed}-{j}-é" for j in range(n)],
        },
        schema=SCHEMA,
    )


def _rows(table: pa.Table) -> list[tuple[Any, ...]]:
    cols = [table.column(n).to_pylist() for n in SCHEMA.names]
    return sorted(zip(*cols, strict=True), key=lambda r: tuple((x is None, x) for x in r))


def _java_rows(result: dict[str, Any]) -> list[tuple[Any, ...]]:
    return _rows(pa.Table.from_pylist(result["rows"], schema=SCHEMA))


def test_java_and_pypaimon_read_a_sort_compacted_table(tmp_path: Path, java_classpath: str) -> None:
    wh = str(tmp_path)
    catalog = Catalog(wh)
    catalog.create_database("db")
    batches = [_batch(s) for s in range(4)]
    tables = {
        "db.s": {"deletion-vectors.enabled": "true"},
        "db.c": {"clustering.columns": "k2,k", "clustering.strategy": "hilbert"},
    }
    for name, options in tables.items():
        table = catalog.create_table(name, schema=SCHEMA, partition_keys=["dt"], options=options)
        for b in batches:
            table.write(b)
    deletes = [{"op": "delete_dv", "table": "db.s", "column": "k", "values": DELETED}]
    assert [r["deleted"] for r in run_ops(java_classpath, wh, deletes)] == [len(DELETED)]

    rows = pa.concat_tables(batches)
    full = _rows(rows)
    kept = _rows(rows.filter(pc.invert(pc.is_in(rows.column("k"), pa.array(DELETED)))))
    models = {"db.s": kept, "db.c": full}

    s = catalog.get_table("db.s")
    assert any(
        e.file.index_type == DELETION_VECTORS_INDEX
        for e in s.store.index_entries(s.latest_snapshot())
    )
    sorted_s = s.compact(order_by=["k2", "k"], strategy="zorder")
    assert sorted_s is not None and sorted_s.commit_kind == "OVERWRITE"
    assert not s.store.index_entries(sorted_s)  # every vector retired with its file
    c = catalog.get_table("db.c")
    sorted_c = c.compact(full=True)
    assert sorted_c is not None and sorted_c.commit_kind == "OVERWRITE"
    for name, model in models.items():
        table = catalog.get_table(name)
        assert _rows(table.read()) == model, name
        # one file per partition
        assert sorted(len(split.files) for split in table.splits()) == [1, 1], name

    ops = [{"op": "read", "table": name} for name in models]
    for name, result in zip(models, run_ops(java_classpath, wh, ops), strict=True):
        assert result["latest"] == catalog.get_table(name).latest_snapshot().id, name
        assert _java_rows(result) == models[name], name
    reads = oracle_script(wh, [{"op": "read", "table": name} for name in models])
    for name, got in zip(models, reads, strict=True):
        assert _rows(got.select(SCHEMA.names)) == models[name], name
