"""FLOAT/DOUBLE primary keys and sequence fields as Paimon compares them, judged by Java Paimon
0.9 reading the same tables and by a plain model.

Paimon's order for floats is Java's ``Double.compare`` / ``Float.compare``: every NaN is one
key, greater than ``+inf``; ``-0.0 < 0.0`` are two keys. (Paimon 0.9's generated key comparator
still compares with ``<``/``>``, under which NaN equals every key and ``-0.0`` equals ``0.0``;
Paimon 2.0 replaced it with ``Double.compare``. The tables here are laid out so that 0.9 never
meets those comparisons: NaN sits alone in its bucket and ``-0.0``/``0.0`` in different buckets,
so Java 0.9 and the total order must agree row for row.)

The model knows nothing of bits or orders: a key is its label ("NaN" for every NaN payload,
"-0" and "0" apart), upserts replace, ``-D`` removes.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.format.bucket_hash import assign_buckets
from lakeops.format.types import DataType
from tests.interop.java_oracle import json_rows, run_ops

pytestmark = pytest.mark.interop

# the bit patterns of each label, per width: three NaN payloads (quiet, payload 1, negative)
_BITS: dict[str, tuple[int, int]] = {  # label -> (float32 bits, float64 bits)
    "nan1": (0x7FC00000, 0x7FF8000000000000),
    "nan2": (0x7FC00001, 0x7FF8000000000001),
    "nan3": (0xFFC00000, 0xFFF8000000000000),
    "-0": (0x80000000, 0x8000000000000000),
    "0": (0x00000000, 0x0000000000000000),
}
_VALUES = {"-inf": -math.inf, "-1.5": -1.5, "1.0": 1.0, "2.5": 2.5, "inf": math.inf}
_VALUES.update({"5.0": 5.0, "7.0": 7.0})
LABELS = ["-inf", "-1.5", "-0", "0", "1.0", "2.5", "inf", "nan1"]

# (commit, [(key label, v)], row kind); lakeops fully compacts after the third commit
COMMITS: list[tuple[list[tuple[str, int]], str]] = [
    (
        [
            ("nan1", 1),
            ("nan2", 2),
            ("-0", 3),
            ("0", 4),
            ("1.0", 5),
            ("inf", 6),
            ("-inf", 7),
            ("-1.5", 8),
            ("2.5", 9),
            ("nan3", 10),
        ],
        "+I",
    ),
    ([("nan3", 11), ("0", 12), ("-inf", 13)], "+I"),
    ([("nan2", 0), ("-0", 0)], "-D"),
    ([("nan1", 20), ("-0", 21)], "+I"),
    ([("nan2", 22), ("0", 23), ("nan3", 24)], "+I"),
]
COMPACT_AFTER = 3  # snapshot 4 is lakeops' full compaction


def _keys(labels: list[str], arrow: pa.DataType) -> pa.Array:
    """The keys of ``labels`` with their exact bit patterns."""
    wide = arrow == pa.float64()
    ftype, utype = (np.float64, np.uint64) if wide else (np.float32, np.uint32)
    out = np.empty(len(labels), dtype=ftype)
    for i, label in enumerate(labels):
        if label in _BITS:
            out[i] = np.array([_BITS[label][wide]], dtype=utype).view(ftype)[0]
        else:
            out[i] = _VALUES[label]
    return pa.array(out, type=arrow)


def _model_label(label: str) -> str:
    return "NaN" if label.startswith("nan") else label


def _label(value: Any) -> str:
    """A key as the model names it, from lakeops (a float) or Java (a number or a string)."""
    if isinstance(value, str):
        return {"NaN": "NaN", "Infinity": "inf", "-Infinity": "-inf"}[value]
    value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    return repr(value)


def _state(rows: list[dict[str, Any]]) -> list[tuple[str, int]]:
    labels = [(_label(r["k"]), r["v"]) for r in rows]
    assert len({k for k, _ in labels}) == len(labels), f"a key twice: {labels}"
    return sorted(labels)


def _model(upto: int) -> list[tuple[str, int]]:
    state: dict[str, int] = {}
    for rows, kind in COMMITS[:upto]:
        for label, v in rows:
            if kind == "-D":
                state.pop(_model_label(label), None)
            else:
                state[_model_label(label)] = v
    return sorted(state.items())


def _schema(arrow: pa.DataType) -> pa.Schema:
    return pa.schema(
        [pa.field("k", arrow, False), pa.field("v", pa.int64()), pa.field("op", pa.string())]
    )


def _batch(arrow: pa.DataType, rows: list[tuple[str, int]], kind: str) -> pa.Table:
    return pa.table(
        {
            "k": _keys([k for k, _ in rows], arrow),
            "v": pa.array([v for _, v in rows], pa.int64()),
            "op": pa.array([kind] * len(rows)),
        },
        schema=_schema(arrow),
    )


def _buckets_apart(arrow: pa.DataType, paimon: str) -> int:
    """A bucket count under which NaN has a bucket of its own and -0.0, 0.0 differ (where Java
    0.9's comparator agrees with Double.compare)."""
    for n in range(2, 32):
        b = assign_buckets([_keys(LABELS, arrow)], [DataType.parse(paimon)], n).tolist()
        at = dict(zip(LABELS, b, strict=True))
        if at["-0"] != at["0"] and b.count(at["nan1"]) == 1:
            return n
    raise AssertionError("no bucket count separates the keys")


WIDTHS = [("DOUBLE", pa.float64()), ("FLOAT", pa.float32())]


Ops = list[dict[str, Any]]
Results = list[dict[str, Any]]


def _float_keys_before_java(catalog: Catalog) -> tuple[Ops, dict[str, list[Any]]]:
    """lakeops writes, deletes, compacts and writes again (reading after every step); the ops
    with which Java then reads every snapshot, compacts, reads, and writes a table of its own."""
    java_ops: Ops = []
    ours_reads: dict[str, list[Any]] = {}
    for paimon, arrow in WIDTHS:
        n = _buckets_apart(arrow, paimon)
        options = {"bucket": str(n), "rowkind.field": "op"}
        table = f"db.ours_{paimon}"
        ours = catalog.create_table(
            table, schema=_schema(arrow), primary_keys=["k"], options=options
        )
        reads = ours_reads[paimon] = []
        for i, (rows, kind) in enumerate(COMMITS, start=1):
            ours.write(_batch(arrow, rows, kind))
            reads.append(_state(ours.read().to_pylist()))
            if i == COMPACT_AFTER:
                ours.compact(full=True)
                reads.append(_state(ours.read().to_pylist()))
        java_ops += [{"op": "read", "table": table, "snapshot_id": s} for s in range(1, 7)]
        java_ops += [{"op": "compact", "table": table}, {"op": "read", "table": table}]
        # Java writes NaN (its canonical Double.NaN) and ±0.0; lakeops upserts them after
        java_ops += [
            {
                "op": "create",
                "table": f"db.java_{paimon}",
                "fields": [
                    {"name": "k", "type": f"{paimon} NOT NULL"},
                    {"name": "v", "type": "BIGINT"},
                    {"name": "op", "type": "STRING"},
                ],
                "primary_keys": ["k"],
                "partition_keys": [],
                "options": options,
            },
            {
                "op": "write",
                "table": f"db.java_{paimon}",
                "rows": json_rows(
                    _batch(arrow, [("nan1", 1), ("-0", 2), ("0", 3), ("1.0", 4)], "+I")
                ),
            },
        ]
    return java_ops, ours_reads


def _float_keys_after_java(
    catalog: Catalog, results: Results, ours_reads: dict[str, list[Any]]
) -> Ops:
    """Check lakeops', Java's and the model's reads; lakeops then upserts and deletes NaN and
    ±0.0 in Java's table (they must land in Java's buckets: a read would show a key twice
    otherwise). Returns the ops with which Java reads that table again."""
    expected = [_model(i) for i in range(1, COMPACT_AFTER + 1)]
    expected += [_model(COMPACT_AFTER)] + [_model(i) for i in range(COMPACT_AFTER + 1, 6)]
    answers = iter(results)
    later_ops: Ops = []
    for paimon, arrow in WIDTHS:
        assert ours_reads[paimon] == expected, paimon
        java_reads = [_state(next(answers)["rows"]) for _ in range(6)]
        assert java_reads == expected, paimon
        next(answers)  # Java's compaction
        assert _state(next(answers)["rows"]) == expected[-1], paimon
        ours = catalog.get_table(f"db.ours_{paimon}")
        assert _state(ours.read().to_pylist()) == expected[-1], paimon
        next(answers), next(answers)  # create, write
        java_table = catalog.get_table(f"db.java_{paimon}")
        java_table.write(_batch(arrow, [("nan2", 10), ("-0", 11), ("nan3", 12)], "+I"))
        assert _state(java_table.read().to_pylist()) == AFTER_UPSERT, paimon
        looked = java_table.lookup(pa.table({"k": _keys(["nan2"], arrow)}))
        assert _state(looked.to_pylist()) == [("NaN", 12)], paimon
        java_table.write(_batch(arrow, [("nan2", 0), ("0", 0)], "-D"))
        assert _state(java_table.read().to_pylist()) == AFTER_DELETE, paimon
        later_ops += [
            {"op": "read", "table": f"db.java_{paimon}", "snapshot_id": 2},
            {"op": "read", "table": f"db.java_{paimon}", "snapshot_id": 3},
        ]
    return later_ops


AFTER_UPSERT = [("-0", 11), ("0", 3), ("1.0", 4), ("NaN", 12)]
AFTER_DELETE = [("-0", 11), ("1.0", 4)]


def test_float_keys_and_sequence_fields_read_alike_by_lakeops_java_and_the_model(
    warehouse: Path, java_classpath: str
) -> None:
    """Both scenarios share two JVM runs (a JVM start costs seconds)."""
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    float_ops, ours_reads = _float_keys_before_java(catalog)
    seq_ops, seq_expected = _sequence_before_java(catalog)
    results = run_ops(java_classpath, warehouse, float_ops + seq_ops)
    later_ops = _float_keys_after_java(catalog, results[: len(float_ops)], ours_reads)
    _sequence_after_java(catalog, results[len(float_ops) :], seq_expected)
    later = iter(run_ops(java_classpath, warehouse, later_ops))
    for paimon, _ in WIDTHS:
        assert _state(next(later)["rows"]) == AFTER_UPSERT, paimon
        assert _state(next(later)["rows"]) == AFTER_DELETE, paimon


# ----------------------------------------------------------------------------- sequence.field
# (k, s, v) in input order; one batch, then a second commit (lakeops only: Java 0.9 ties a NaN
# sequence value with every other one across files, Paimon 2.0 and lakeops put NaN highest)
SEQ_BATCH: list[tuple[int, str | None, int]] = [
    (1, "5.0", 1),
    (2, "nan1", 2),
    (2, "7.0", 3),
    (3, "0", 5),
    (3, "-0", 4),
    (4, "nan1", 6),
    (4, "nan3", 7),
    (5, "inf", 8),
    (5, "nan2", 9),
    (5, "1.0", 10),
    (6, None, 15),
    (6, "-inf", 16),
]
SEQ_SECOND: list[tuple[int, str | None, int]] = [
    (1, "nan2", 11),
    (5, "2.5", 12),
    (3, "-0", 13),
    (2, "nan3", 14),
    (6, None, 17),
]


def _seq_rank(label: str | None) -> tuple[float, ...]:
    """Java's order of a sequence value, plainly: null lowest, NaN highest, -0.0 below 0.0."""
    if label is None:
        return (0.0,)
    if label.startswith("nan"):
        return (2.0,)
    value = float({"-0": "-0.0", "0": "0.0"}.get(label, label))
    return (1.0, value, math.copysign(1.0, value))


def _seq_model(commits: list[list[tuple[int, str | None, int]]]) -> list[tuple[int, int]]:
    best: dict[int, tuple[tuple[float, ...], int, int, int]] = {}
    for c, rows in enumerate(commits):
        for i, (k, s, v) in enumerate(rows):
            candidate = (_seq_rank(s), c, i, v)
            if k not in best or candidate[:3] >= best[k][:3]:
                best[k] = candidate
    return sorted((k, entry[3]) for k, entry in best.items())


def _seq_batch(rows: list[tuple[int, str | None, int]]) -> pa.Table:
    labels = [s for _, s, _ in rows]
    values = _keys([s or "0" for s in labels], pa.float64())
    mask = np.array([s is None for s in labels])
    return pa.table(
        {
            "k": pa.array([k for k, _, _ in rows], pa.int64()),
            "s": pa.array(values.to_numpy(zero_copy_only=False), pa.float64(), mask=mask),
            "v": pa.array([v for _, _, v in rows], pa.int64()),
        },
        schema=pa.schema(
            [pa.field("k", pa.int64(), False), ("s", pa.float64()), ("v", pa.int64())]
        ),
    )


def _kv(rows: list[dict[str, Any]]) -> list[tuple[int, int]]:
    return sorted((r["k"], r["v"]) for r in rows)


def _sequence_before_java(catalog: Catalog) -> tuple[Ops, dict[str, Any]]:
    """A ``sequence.field`` table: lakeops writes one batch, a second commit, compacts; Java
    writes the same batch into its own table (its write buffer orders a batch by normalized
    keys: NaN highest) and reads both."""
    options = {"bucket": "1", "sequence.field": "s"}
    ours = catalog.create_table(
        "db.seq_ours", schema=_seq_batch(SEQ_BATCH).schema, primary_keys=["k"], options=options
    )
    ours.write(_seq_batch(SEQ_BATCH))
    first = _kv(ours.read().to_pylist())
    assert first == _seq_model([SEQ_BATCH])
    ours.write(_seq_batch(SEQ_SECOND))
    second = _seq_model([SEQ_BATCH, SEQ_SECOND])
    assert _kv(ours.read().to_pylist()) == second
    ours.compact(full=True)
    assert _kv(ours.read().to_pylist()) == second
    ops: Ops = [
        {
            "op": "create",
            "table": "db.seq_java",
            "fields": [
                {"name": "k", "type": "BIGINT NOT NULL"},
                {"name": "s", "type": "DOUBLE"},
                {"name": "v", "type": "BIGINT"},
            ],
            "primary_keys": ["k"],
            "partition_keys": [],
            "options": options,
        },
        {"op": "write", "table": "db.seq_java", "rows": json_rows(_seq_batch(SEQ_BATCH))},
        {"op": "read", "table": "db.seq_java"},
        {"op": "read", "table": "db.seq_ours", "snapshot_id": 1},
        {"op": "read", "table": "db.seq_ours"},
    ]
    return ops, {"first": first, "second": second}


def _sequence_after_java(catalog: Catalog, results: Results, expected: dict[str, Any]) -> None:
    assert _kv(results[2]["rows"]) == expected["first"]  # Java's own batch
    assert _kv(catalog.get_table("db.seq_java").read().to_pylist()) == expected["first"]
    assert _kv(results[3]["rows"]) == expected["first"]
    assert _kv(results[4]["rows"]) == expected["second"]  # lakeops' compaction, read by Java
