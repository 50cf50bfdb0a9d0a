"""Binary aggregate states (rbm32, rbm64, hll_sketch, theta_sketch) against Java Paimon 0.9.

Java writes a table with these aggregates, lakeops writes more rows and compacts, Java reads
the merged states (exact bitmaps, sketch estimates); and the other way round. The byte fixtures
of ``tests/data/agg_states/`` (which the unit tests read) are checked to be what Java writes
today; ``python -m tests.interop.test_agg_states_java_interop`` writes them again.
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.merge import roaring64
from tests.interop.java_oracle import compile_oracle, run_ops

pyroaring = pytest.importorskip("pyroaring")
ds = pytest.importorskip("datasketches")

pytestmark = pytest.mark.interop

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "agg_states"
MASK64 = (1 << 64) - 1

#: the sets of the fixtures: name -> (kind, set as the oracle's "encode" takes it)
FIXTURE_SETS: dict[str, tuple[str, Any]] = {
    "rbm64_empty": ("rbm64", []),
    "rbm64_one": ("rbm64", [1]),
    # added in unsigned order, as Java's container array then is in key order (as ours)
    "rbm64_signed": ("rbm64", [1, 2, 3, 2**40 + 5, 2**63 - 1, -(2**63), -1]),
    "rbm64_node16": ("rbm64", {"ranges": [[0, 10 << 16, 1 << 16]], "values": [7, 65537]}),
    "rbm64_node48_256": ("rbm64", {"ranges": [[0, 300 << 16, 1 << 16]]}),
    "rbm64_deep": ("rbm64", {"ranges": [[5, 20 << 32, 1 << 32], [1 << 47, (1 << 47) + 40, 3]]}),
    "rbm64_run": ("rbm64", {"ranges": [[5000, 200000, 1]]}),
    "rbm64_bitmap": ("rbm64", {"ranges": [[0, 100000, 3]]}),
    "rbm32_mixed": ("rbm32", {"ranges": [[0, 100000, 3], [200000, 300000, 1]], "values": [-1]}),
    "rbm32_small": ("rbm32", [1, 5, 70000]),
    "hll_sketch_1000": ("hll_sketch", {"ranges": [[0, 1000, 1]]}),
    "theta_sketch_1000": ("theta_sketch", {"ranges": [[0, 1000, 1]]}),
}


def expand(spec: Any) -> list[int]:
    """The integers of an "encode" set (as Java longs)."""
    if isinstance(spec, list):
        return list(spec)
    out = list(spec.get("values", []))
    for start, stop, step in spec.get("ranges", []):
        out.extend(range(start, stop, step))
    return out


def java_states(classpath: str, tmp: Path, kind: str, sets: list[Any]) -> list[bytes]:
    [result] = run_ops(classpath, tmp, [{"op": "states", "kind": kind, "encode": sets}])
    return [base64.b64decode(s) for s in result["states"]]


def java_decode(classpath: str, tmp: Path, kind: str, states: list[bytes | None]) -> list[Any]:
    items = [None if s is None else base64.b64encode(s).decode("ascii") for s in states]
    [result] = run_ops(classpath, tmp, [{"op": "states", "kind": kind, "decode": items}])
    return list(result["states"])


def write_fixtures(classpath: str, tmp: Path) -> None:
    FIXTURES.mkdir(parents=True, exist_ok=True)
    index = {}
    for name, (kind, spec) in FIXTURE_SETS.items():
        [state] = java_states(classpath, tmp, kind, [spec])
        (FIXTURES / f"{name}.bin").write_bytes(state)
        entry: dict[str, Any] = {"kind": kind, "set": spec}
        if kind in ("hll_sketch", "theta_sketch"):
            [decoded] = java_decode(classpath, tmp, kind, [state])
            entry["java_estimate"] = decoded["estimate"]
        index[name] = entry
    lines = ",\n".join(f" {json.dumps(k)}: {json.dumps(v)}" for k, v in index.items())
    (FIXTURES / "index.json").write_text("{\n" + lines + "\n}\n", encoding="utf-8")


def test_fixtures_are_what_java_writes(java_classpath: str, tmp_path: Path) -> None:
    index = json.loads((FIXTURES / "index.json").read_text(encoding="utf-8"))
    assert set(index) == set(FIXTURE_SETS)
    for kind in ("rbm32", "rbm64"):
        names = [n for n, (k, _) in FIXTURE_SETS.items() if k == kind]
        fresh = java_states(java_classpath, tmp_path, kind, [FIXTURE_SETS[n][1] for n in names])
        for name, state in zip(names, fresh, strict=True):
            assert (FIXTURES / f"{name}.bin").read_bytes() == state, name


def test_java_reads_what_lakeops_writes(java_classpath: str, tmp_path: Path) -> None:
    """Bitmaps lakeops serializes (rbm64 through roaring64.to_java) decode in Java exactly."""
    sets = [expand(spec) for _, (kind, spec) in FIXTURE_SETS.items() if kind == "rbm64"]
    ours = [roaring64.to_java(pyroaring.BitMap64([v & MASK64 for v in s])) for s in sets]
    decoded = java_decode(java_classpath, tmp_path, "rbm64", list(ours))
    for values, got in zip(sets, decoded, strict=True):
        assert sorted(v & MASK64 for v in got["values"]) == sorted(v & MASK64 for v in values)


# --------------------------------------------------------------------- table round trips
SCHEMA = pa.schema(
    [
        ("k", pa.int32()),
        ("b32", pa.binary()),
        ("b64", pa.binary()),
        ("hll", pa.binary()),
        ("theta", pa.binary()),
    ]
)
FIELDS = [
    {"name": "k", "type": "INT NOT NULL"},
    {"name": "b32", "type": "VARBINARY(2147483647)"},
    {"name": "b64", "type": "VARBINARY(2147483647)"},
    {"name": "hll", "type": "VARBINARY(2147483647)"},
    {"name": "theta", "type": "VARBINARY(2147483647)"},
]
OPTIONS = {
    "bucket": "1",
    "merge-engine": "aggregation",
    "fields.b32.aggregate-function": "rbm32",
    "fields.b64.aggregate-function": "rbm64",
    "fields.hll.aggregate-function": "hll_sketch",
    "fields.theta.aggregate-function": "theta_sketch",
}
COLUMNS = {"b32": "rbm32", "b64": "rbm64", "hll": "hll_sketch", "theta": "theta_sketch"}


def _java_sets(key: int) -> list[int]:
    """What Java adds for a key: values in several 64-bit high parts, negatives too."""
    return [key, key * 70001, (key << 40) | 3, -key - 1, *range(key * 1000, key * 1000 + 300)]


def _lakeops_sets(key: int) -> list[int]:
    return [key + 1, (key << 40) | 4, *range(key * 1000 + 200, key * 1000 + 5000)]


def _python_states(values: list[int], portable: bool) -> dict[str, bytes]:
    """The four states of ``values`` made in Python; rbm64 in the portable layout older lakeops
    wrote (``portable``) or in Java's."""
    b64 = pyroaring.BitMap64([v & MASK64 for v in values])
    hll = ds.hll_sketch(12)
    theta = ds.update_theta_sketch()
    for v in values:
        hll.update(v)
        theta.update(v)
    return {
        "b32": bytes(pyroaring.BitMap([v & 0xFFFFFFFF for v in values]).serialize()),
        "b64": bytes(b64.serialize()) if portable else roaring64.to_java(b64),
        "hll": bytes(hll.serialize_compact()),
        "theta": bytes(theta.compact().serialize()),
    }


def _java_rows(classpath: str, warehouse: Path, keys: list[int]) -> list[dict[str, Any]]:
    """Rows of the keys whose states Java serialized itself (the oracle's "states" op)."""
    cols: dict[str, list[bytes]] = {}
    for col, kind in COLUMNS.items():
        cols[col] = java_states(classpath, warehouse, kind, [_java_sets(k) for k in keys])
    return [
        {"k": k, **{c: base64.b64encode(cols[c][i]).decode("ascii") for c in COLUMNS}}
        for i, k in enumerate(keys)
    ]


def _expected(keys: list[int], java: set[int], ours: set[int]) -> dict[int, set[int]]:
    out = {}
    for k in keys:
        values: set[int] = set()
        if k in java:
            values |= set(_java_sets(k))
        if k in ours:
            values |= set(_lakeops_sets(k))
        out[k] = values
    return out


def _check_java_read(classpath: str, warehouse: Path, expected: dict[int, set[int]]) -> None:
    [read] = run_ops(classpath, warehouse, [{"op": "read", "table": "db.t"}])
    rows = {int(r["k"]): r for r in read["rows"]}
    assert sorted(rows) == sorted(expected)
    keys = sorted(expected)
    for col, kind in COLUMNS.items():
        states = [base64.b64decode(rows[k][col]) for k in keys]
        decoded = java_decode(classpath, warehouse, kind, states)
        for k, got in zip(keys, decoded, strict=True):
            values = expected[k]
            if kind == "rbm64":
                assert roaring64.layout(base64.b64decode(rows[k][col])) == "java"
                assert sorted(v & MASK64 for v in got["values"]) == sorted(
                    v & MASK64 for v in values
                ), (k, col)
            elif kind == "rbm32":
                assert sorted(got["values"]) == sorted({v & 0xFFFFFFFF for v in values}), k
            else:
                assert got["estimate"] == pytest.approx(len(values), rel=0.05), (k, col)


def _check_lakeops_read(table: Any, expected: dict[int, set[int]]) -> None:
    rows = {r["k"]: r for r in table.read().to_pylist()}
    assert sorted(rows) == sorted(expected)
    for k, values in expected.items():
        row = rows[k]
        assert roaring64.values_of(row["b64"]).tolist() == sorted(v & MASK64 for v in values)
        assert set(pyroaring.BitMap.deserialize(row["b32"])) == {v & 0xFFFFFFFF for v in values}
        hll = ds.hll_sketch.deserialize(row["hll"]).get_estimate()
        theta = ds.compact_theta_sketch.deserialize(row["theta"]).get_estimate()
        assert hll == pytest.approx(len(values), rel=0.05)
        assert theta == pytest.approx(len(values), rel=0.05)


def test_java_table_merged_by_lakeops(java_classpath: str, tmp_path: Path) -> None:
    """Java creates and writes; lakeops reads (merging Java's states), writes more (rbm64 in
    both layouts) and compacts; Java reads every merged state back exactly."""
    wh = tmp_path / "wh"
    java_keys = [1, 2, 3, 4]
    create = {
        "op": "create",
        "table": "db.t",
        "fields": FIELDS,
        "primary_keys": ["k"],
        "options": OPTIONS,
    }
    rows = _java_rows(java_classpath, wh, java_keys)
    run_ops(
        java_classpath,
        wh,
        [
            create,
            {"op": "write", "table": "db.t", "rows": rows[:2]},
            {"op": "write", "table": "db.t", "rows": rows},
        ],
    )
    table = Catalog(str(wh)).get_table("db.t")
    _check_lakeops_read(table, _expected(java_keys, set(java_keys), set()))
    our_keys = [2, 3, 5]
    for portable in (True, False):
        batch = [{"k": k, **_python_states(_lakeops_sets(k), portable)} for k in our_keys]
        table.write(pa.Table.from_pylist(batch, schema=SCHEMA))
    expected = _expected([1, 2, 3, 4, 5], set(java_keys), set(our_keys))
    _check_lakeops_read(table, expected)
    assert table.compact(full=True) is not None
    _check_lakeops_read(table, expected)
    _check_java_read(java_classpath, wh, expected)


def test_lakeops_table_merged_by_java(java_classpath: str, tmp_path: Path) -> None:
    """lakeops creates and writes (twice per key, so its own union writes the states); Java
    writes more and compacts, merging lakeops' states with its own; both read the same."""
    wh = tmp_path / "wh"
    catalog = Catalog(str(wh))
    catalog.create_database("db")
    table = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["k"], options=OPTIONS)
    our_keys = [1, 2, 3]
    for portable in (False, True):
        batch = [{"k": k, **_python_states(_lakeops_sets(k), portable)} for k in our_keys]
        table.write(pa.Table.from_pylist(batch, schema=SCHEMA))
    assert table.compact(full=True) is not None  # lakeops' unions: Java's layout for rbm64
    java_keys = [2, 3, 4]
    rows = _java_rows(java_classpath, wh, java_keys)
    run_ops(
        java_classpath,
        wh,
        [{"op": "write", "table": "db.t", "rows": rows}, {"op": "compact", "table": "db.t"}],
    )
    expected = _expected([1, 2, 3, 4], set(java_keys), set(our_keys))
    _check_java_read(java_classpath, wh, expected)
    _check_lakeops_read(Catalog(str(wh)).get_table("db.t"), expected)


if __name__ == "__main__":  # regenerate tests/data/agg_states/ with the Java oracle
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        write_fixtures(compile_oracle(), Path(tmp))
    sys.exit(0)
