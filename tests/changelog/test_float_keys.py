"""The lookup changelog producer and the dynamic-bucket and cross-partition indexes with DOUBLE
keys: every NaN payload is one key, -0.0 and 0.0 are two, against a plain model of the
changelog (``+I`` for a new key, ``-U``/``+U`` for a replaced one, ``-D`` for a deleted one)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from lakeops import Catalog

NAN_BITS = [0x7FF8000000000000, 0x7FF8000000000001, 0xFFF8000000000000]
# commits of (key label, NaN payload index, v, kind)
COMMITS = [
    [("nan", 0, 1, "+I"), ("-0", 0, 2, "+I"), ("0", 0, 3, "+I"), ("1", 0, 4, "+I")],
    [("nan", 1, 5, "+I"), ("0", 0, 6, "+I")],
    [("nan", 2, 7, "+I"), ("-0", 0, 8, "+I"), ("1", 0, 0, "-D")],
    [("nan", 1, 0, "-D"), ("0", 0, 9, "+I")],
]


def _key(label: str, payload: int) -> float:
    if label == "nan":
        return float(np.array([NAN_BITS[payload]], dtype=np.uint64).view(np.float64)[0])
    return {"-0": -0.0, "0": 0.0, "1": 1.0}[label]


def _label(value: float) -> str:
    if math.isnan(value):
        return "nan"
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    return "1"


SCHEMA = pa.schema(
    [
        pa.field("p", pa.string(), False),
        pa.field("k", pa.float64(), False),
        ("v", pa.int64()),
        ("op", pa.string()),
    ]
)


def _batch(rows: list[tuple[str, int, int, str]], partition: str) -> pa.Table:
    return pa.table(
        {
            "p": [partition] * len(rows),
            "k": pa.array([_key(label, p) for label, p, _, _ in rows], pa.float64()),
            "v": pa.array([v for _, _, v, _ in rows], pa.int64()),
            "op": [kind for _, _, _, kind in rows],
        },
        schema=SCHEMA,
    )


@pytest.mark.parametrize(
    "options",
    [
        {"bucket": "2", "changelog-producer": "lookup"},
        {"bucket": "-1", "changelog-producer": "lookup"},
        {"bucket": "-1"},
    ],
    ids=["fixed-lookup", "dynamic-lookup", "cross-partition"],
)
def test_float_keys_changelog_and_indexes(warehouse: Path, options: dict[str, str]) -> None:
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    cross = "changelog-producer" not in options  # primary key without the partition column
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["k"] if cross else ["p", "k"],
        partition_keys=["p"],
        options={**options, "rowkind.field": "op"},
    )
    state: dict[str, int] = {}
    for i, rows in enumerate(COMMITS):
        # cross-partition: every commit moves its keys to a new partition
        table.write(_batch(rows, f"p{i}" if cross else "p"))
        changes: list[tuple[str, str, int]] = []
        for label, _, v, kind in rows:
            old = state.get(label)
            if kind == "-D":
                if old is not None:
                    changes.append(("-D", label, old))
                    del state[label]
            elif old is None:
                changes.append(("+I", label, v))
                state[label] = v
            else:
                changes += [("-U", label, old), ("+U", label, v)]
                state[label] = v
        got = sorted((_label(r["k"]), r["v"]) for r in table.read().to_pylist())
        assert got == sorted(state.items()), i
        if not cross:
            latest = table.latest_snapshot()
            assert latest is not None
            snapshot = latest.id
            produced = table.read_changes(snapshot - 1, snapshot, mode="changelog").to_pylist()
            assert sorted((r["_row_kind"], _label(r["k"]), r["v"]) for r in produced) == sorted(
                changes
            ), i


def test_row_deduplicate_compares_float_values_as_java(warehouse: Path) -> None:
    """``changelog-producer.row-deduplicate``: an update that leaves a NaN value NaN (another
    payload) produces no changelog; ``-0.0`` -> ``0.0`` does (Double.compare differs)."""
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    schema = pa.schema([pa.field("k", pa.int64(), False), ("x", pa.float64())])
    options = {
        "bucket": "1",
        "changelog-producer": "lookup",
        "changelog-producer.row-deduplicate": "true",
    }
    table = catalog.create_table("db.t", schema=schema, primary_keys=["k"], options=options)
    values = [_key("nan", 0), _key("nan", 2), -0.0, 0.0, 0.0]
    emitted = []
    for x in values:
        table.write(pa.table({"k": pa.array([1], pa.int64()), "x": pa.array([x])}, schema=schema))
        latest = table.latest_snapshot()
        assert latest is not None
        changes = table.read_changes(latest.id - 1, latest.id, mode="changelog").to_pylist()
        emitted.append(sorted((r["_row_kind"], _label(r["x"])) for r in changes))
    assert emitted == [
        [("+I", "nan")],
        [],
        [("+U", "-0"), ("-U", "nan")],
        [("+U", "0"), ("-U", "-0")],
        [],
    ]
