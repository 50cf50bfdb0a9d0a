"""Do Paimon's readers merge duplicate keys inside one level-0 file? (issue 17, item 5)

A native Spark write could skip its deduplicating window if readers merged the repeats of a key
within one file. This probe writes a one-file primary-key table with lakeops, rewrites that file
with key 3 twice (sequence numbers 3 and 100, values ``a3`` and ``DUP``, still sorted), and reads
it with pypaimon 2.1 and Java Paimon 0.9. Both return key 3 twice: Paimon's readers assume one
row per key per file (``SortMergeReaderWithMinHeap``: "the same iterator should not produce the
same keys"; a single-file split is even read raw, without any merge), so the write must
deduplicate. (lakeops itself refuses the rewritten file: its size disagrees with the manifest.)

Usage: ``PYTHONPATH=$PWD .venv/bin/python benchmarks/probe_duplicate_keys.py`` (needs the
oracles: ``bash scripts/setup.sh --oracle``).
"""

from __future__ import annotations

import glob
import tempfile

import pyarrow as pa
import pyarrow.parquet as pq

from lakeops import Catalog
from tests.interop.java_oracle import compile_oracle, run_ops
from tests.interop.oracle import oracle_script


def main() -> None:
    warehouse = tempfile.mkdtemp()
    catalog = Catalog(warehouse)
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    table = catalog.create_table(
        "db.one", schema=schema, primary_keys=["id"], options={"bucket": "1", "write-only": "true"}
    )
    rows = {"id": pa.array(range(6), pa.int64()), "v": [f"a{i}" for i in range(6)]}
    table.write(pa.table(rows, schema=schema))
    (path,) = glob.glob(f"{table.root}/bucket-0/*.parquet")
    data = pq.read_table(path)
    dup = data.slice(3, 1)
    seq_at = dup.schema.get_field_index("_SEQUENCE_NUMBER")
    dup = dup.set_column(seq_at, dup.schema.field(seq_at), pa.array([100], pa.int64()))
    v_at = dup.schema.get_field_index("v")
    dup = dup.set_column(v_at, dup.schema.field(v_at), pa.array(["DUP"]))
    pq.write_table(pa.concat_tables([data.slice(0, 4), dup, data.slice(4)]), path)
    (theirs,) = oracle_script(warehouse, [{"op": "read", "table": "db.one"}])
    ids, values = theirs.column("id").to_pylist(), theirs.column("v").to_pylist()
    print("pypaimon 2.1 reads", theirs.num_rows, "rows:", sorted(zip(ids, values, strict=True)))
    (java,) = run_ops(compile_oracle(), warehouse, [{"op": "read", "table": "db.one"}])
    java_rows = sorted((int(r["id"]), r["v"]) for r in java["rows"])
    print("Java Paimon 0.9 reads", len(java_rows), "rows:", java_rows)


if __name__ == "__main__":
    main()
