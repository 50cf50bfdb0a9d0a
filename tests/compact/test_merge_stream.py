"""The streaming k-way merge equals a one-shot merge, whatever the batch boundaries."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from lakeops.compact.merge_stream import merge_runs
from lakeops.merge import create_merge_engine, merge_sorted, sort_records
from lakeops.options import TableOptions
from lakeops.spec.kv import KIND, SEQ
from lakeops.spec.schema import TableSchema

SCHEMA = pa.schema([("a", pa.int32()), ("b", pa.string()), ("v", pa.int64())])


def _engine(options: dict[str, str]):  # type: ignore[no-untyped-def]
    schema = TableSchema.from_arrow(SCHEMA, ["a", "b"], [], {"bucket": "1", **options})
    return create_merge_engine(TableOptions.from_schema(schema), schema)


def _run(rows: list[tuple[int, str, int]], first_seq: int) -> pa.Table:
    """A sorted run (duplicates allowed, as in pypaimon level-0 files)."""
    t = pa.table(
        {
            "a": pa.array([r[0] for r in rows], pa.int32()),
            "b": pa.array([r[1] for r in rows], pa.string()),
            "v": pa.array([r[2] for r in rows], pa.int64()),
        }
    )
    t = t.append_column(SEQ, pa.array(np.arange(first_seq, first_seq + len(rows)), pa.int64()))
    t = t.append_column(KIND, pa.array(np.zeros(len(rows), np.int8)))
    return sort_records(t, ["a", "b"])


def _batches(table: pa.Table, size: int):  # type: ignore[no-untyped-def]
    return iter([table.slice(i, size) for i in range(0, table.num_rows, size)])


row = st.tuples(st.integers(0, 6), st.sampled_from(["x", "y"]), st.integers(-9, 9))


@settings(max_examples=150, deadline=None)
@given(
    runs=st.lists(st.lists(row, max_size=20), min_size=1, max_size=5),
    batch=st.integers(1, 7),
    engine=st.sampled_from(["deduplicate", "aggregation"]),
)
def test_streaming_equals_one_shot(runs, batch, engine) -> None:
    options = {"merge-engine": engine}
    if engine == "aggregation":
        options["fields.v.aggregate-function"] = "sum"
    tables, seq = [], 0
    for rows in runs:
        tables.append(_run(rows, seq))
        seq += len(rows)
    e = _engine(options)
    streamed = list(merge_runs([_batches(t, batch) for t in tables], ["a", "b"], e))
    got = pa.concat_tables(streamed) if streamed else None
    one_shot = merge_sorted(sort_records(pa.concat_tables(tables), ["a", "b"]), ["a", "b"], e)
    expected = one_shot.select(["a", "b", "v"]).to_pylist()
    assert (got.select(["a", "b", "v"]).to_pylist() if got is not None else []) == expected
