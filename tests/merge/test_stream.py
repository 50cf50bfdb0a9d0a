"""The streaming k-way merge equals a one-shot merge, whatever the batch boundaries."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from lakeops.format.kv import KIND, SEQ
from lakeops.format.schema import TableSchema
from lakeops.merge import create_merge_engine, merge_sorted, sort_records
from lakeops.merge.stream import _split_below, merge_runs
from lakeops.options import TableOptions
from tests.without_pandas import run_without_pandas

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
    engine=st.sampled_from(["deduplicate", "first-row", "aggregation"]),
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


@settings(max_examples=100, deadline=None)
@given(
    values=st.lists(st.integers(0, 9), max_size=20), bound=st.integers(0, 10), ordered=st.booleans()
)
def test_split_below_keeps_each_side_in_order(values, bound, ordered) -> None:
    # a sorted batch splits into two slices, any other by the mask: both as a plain model says
    if ordered:
        values = sorted(values)
    table = pa.table({"a": pa.array(values, pa.int64()), "i": pa.array(range(len(values)))})
    below, rest = _split_below(table, ["a"], (pa.scalar(bound, pa.int64()),))
    assert below.to_pylist() == [{"a": v, "i": i} for i, v in enumerate(values) if v < bound]
    assert rest.to_pylist() == [{"a": v, "i": i} for i, v in enumerate(values) if v >= bound]


# float keys: NaN payloads, ±0.0 and ±inf; the model names a key by its label
_FLOAT_KEYS = {
    "NaN": [0x7FF8000000000000, 0xFFF8000000000000, 0x7FF8000000000001],
    "-0": [0x8000000000000000],
    "0": [0],
    "1": [0x3FF0000000000000],
    "inf": [0x7FF0000000000000],
    "-inf": [0xFFF0000000000000],
}
_FLOAT_ORDER = ["-inf", "-0", "0", "1", "inf", "NaN"]  # Double.compare's order
float_row = st.tuples(st.sampled_from(_FLOAT_ORDER), st.integers(0, 2), st.integers(-9, 9))


@settings(max_examples=60, deadline=None)
@given(
    runs=st.lists(st.lists(float_row, max_size=12), min_size=1, max_size=4), batch=st.integers(1, 5)
)
def test_streaming_float_keys_in_java_order(runs, batch) -> None:
    schema = TableSchema.from_arrow(
        pa.schema([pa.field("k", pa.float64(), False), ("v", pa.int64())]),
        ["k"],
        [],
        {"bucket": "1"},
    )
    e = create_merge_engine(TableOptions.from_schema(schema), schema)
    tables, seq, model = [], 0, {}
    for rows in runs:
        bits = [_FLOAT_KEYS[label][p % len(_FLOAT_KEYS[label])] for label, p, _ in rows]
        t = pa.table(
            {
                "k": pa.array(np.array(bits, dtype=np.uint64).view(np.float64), pa.float64()),
                "v": pa.array([v for _, _, v in rows], pa.int64()),
                SEQ: pa.array(np.arange(seq, seq + len(rows)), pa.int64()),
                KIND: pa.array(np.zeros(len(rows), np.int8)),
            }
        )
        for label, _, v in rows:
            model[label] = v  # sequence numbers grow with input order
        seq += len(rows)
        tables.append(sort_records(t, ["k"]))
    streamed = list(merge_runs([_batches(t, batch) for t in tables], ["k"], e))
    got = pa.concat_tables(streamed).to_pylist() if streamed else []

    def label(x: float) -> str:
        if x != x:
            return "NaN"
        if x == 0:
            return "-0" if np.signbit(x) else "0"
        return {1.0: "1", float("inf"): "inf", float("-inf"): "-inf"}[x]

    assert [(label(r["k"]), r["v"]) for r in got] == [
        (k, model[k]) for k in _FLOAT_ORDER if k in model
    ]


def test_nanosecond_timestamp_keys_without_pandas() -> None:
    # keys 1 ns apart, split across batches: the watermark compares them exactly, also where
    # pyarrow cannot turn a nanosecond timestamp into a Python value (no pandas)
    script = """
import pyarrow as pa
from lakeops.format.schema import TableSchema
from lakeops.merge import create_merge_engine
from lakeops.merge.stream import merge_runs
from lakeops.options import TableOptions
arrow = pa.schema([pa.field("k", pa.timestamp("ns"), False), ("v", pa.int64())])
schema = TableSchema.from_arrow(arrow, ["k"], [], {"bucket": "1"})
engine = create_merge_engine(TableOptions.from_schema(schema), schema)
def run(ks, vs, seq):
    t = pa.table({"k": pa.array(ks, pa.timestamp("ns")), "v": pa.array(vs, pa.int64()),
                  "_SEQUENCE_NUMBER": pa.array([seq] * len(ks), pa.int64()),
                  "_VALUE_KIND": pa.array([0] * len(ks), pa.int8())})
    return iter([t.slice(i, 1) for i in range(t.num_rows)])
base = 1_700_000_000_000_000_000
runs = [run([base + 1, base + 2, base + 4], [1, 2, 4], 1), run([base + 2, base + 3], [20, 30], 2)]
out = pa.concat_tables(merge_runs(runs, ["k"], engine))
print([k - base for k in out.column("k").cast(pa.int64()).to_pylist()], out.column("v").to_pylist())
"""
    assert run_without_pandas(script)[0] == "[1, 2, 3, 4] [1, 20, 30, 4]"
