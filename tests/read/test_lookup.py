"""Point lookups (``Table.lookup``, :mod:`lakeops.read.lookup`) return exactly a plain model's
rows for the keys asked: present, updated, deleted and re-inserted, absent, asked twice, in
other partitions; with fixed and dynamic buckets, a lookup table and first-row."""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
import pytest

from lakeops import Catalog, ConfigurationError, DataValidationError

SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), False),
        pa.field("id", pa.int64(), False),
        ("v", pa.string()),
        ("op", pa.string()),
    ]
)
VARIANTS = {
    "fixed": {"bucket": "2"},
    "dynamic": {"bucket": "-1"},
    "lookup-table": {"bucket": "2", "changelog-producer": "lookup"},
    "first-row": {"bucket": "2", "merge-engine": "first-row"},
}


def _commits(first_row: bool) -> list[list[tuple[str, int, str, str]]]:
    first = [(dt, i, f"{dt}{i}-1", "+I") for dt in ("a", "b") for i in range(40)]
    second = [("a", i, f"a{i}-2", "+U") for i in range(10)]
    if not first_row:  # (first-row tables take no deletes)
        second += [("b", i, "", "-D") for i in range(10, 15)]
    third = [("b", 12, "b12-3", "+I"), *[("c", i, f"c{i}-3", "+I") for i in range(100, 105)]]
    return [first, second, third]


def _model(commits: list[list[tuple[str, int, str, str]]], first_row: bool) -> dict:
    state: dict[tuple[str, int], dict[str, Any]] = {}
    for batch in commits:
        for dt, i, v, op in batch:
            if first_row:
                state.setdefault((dt, i), {"dt": dt, "id": i, "v": v, "op": op})
            elif op in ("-D", "-U"):
                state.pop((dt, i), None)
            else:
                state[(dt, i)] = {"dt": dt, "id": i, "v": v, "op": op}
    return state


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_lookup_returns_the_models_rows(catalog: Catalog, variant: str) -> None:
    first_row = variant == "first-row"
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"rowkind.field": "op", **VARIANTS[variant]},
    )
    commits = _commits(first_row)
    for batch in commits:
        table.write(pa.Table.from_pylist([dict(zip(SCHEMA.names, r, strict=True)) for r in batch]))
    if first_row:
        table.flush_level0()  # first-row lookups see levels >= 1 only
    model = _model(commits, first_row)
    asked = [
        *[("a", i) for i in (0, 5, 9, 10, 39)],  # updated and untouched
        *[("b", i) for i in (10, 12, 14, 15)],  # deleted, re-inserted
        ("c", 104),
        ("c", 1),  # absent key of a present partition
        ("z", 0),  # absent partition
        ("a", 5),  # asked twice
    ]
    random.Random(7).shuffle(asked)
    keys = pa.table(
        {"id": [i for _, i in asked], "dt": [dt for dt, _ in asked]}
    )  # columns in another order than the table's
    got = table.lookup(keys)
    assert got.schema.names == SCHEMA.names
    want = [model[k] for k in dict.fromkeys(asked) if k in model]
    order = sorted(got.to_pylist(), key=lambda r: (r["dt"], r["id"]))
    assert order == sorted(want, key=lambda r: (r["dt"], r["id"]))
    only_v = table.lookup(keys, columns=["v", "id"])
    assert only_v.schema.names == ["v", "id"]
    assert sorted(only_v.to_pylist(), key=lambda r: r["id"]) == sorted(
        ({"v": r["v"], "id": r["id"]} for r in want), key=lambda r: r["id"]
    )


def test_lookup_refusals(catalog: Catalog) -> None:
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"]
    )
    table.write(pa.table({"dt": ["a"], "id": [1], "v": ["x"], "op": ["+I"]}, schema=SCHEMA))
    with pytest.raises(DataValidationError, match=r"lack column\(s\) \['dt'\]"):
        table.lookup(pa.table({"id": [1]}))
    with pytest.raises(DataValidationError, match="nulls"):
        table.lookup(pa.table({"dt": ["a", None], "id": [1, 2]}))
    with pytest.raises(ConfigurationError, match="unknown column"):
        table.lookup(pa.table({"dt": ["a"], "id": [1]}), columns=["nope"])
    none = pa.table({"dt": pa.array([], pa.string()), "id": pa.array([], pa.int64())})
    empty = table.lookup(none)
    assert empty.num_rows == 0 and empty.schema.names == SCHEMA.names


def test_lookup_after_a_rollback_to_before_a_rescale(catalog: Catalog) -> None:
    """A rollback to a snapshot before a rescale brings the old bucket count back into the
    partition's files, while the schema keeps the new one: keys are routed by the count the
    files hold (as a read's bucket pruning does), not by the schema's."""
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "2"},
    )
    rows = [{"dt": "a", "id": i, "v": f"v{i}", "op": "+I"} for i in range(40)]
    before = table.write(pa.Table.from_pylist(rows, schema=SCHEMA))
    assert before is not None
    table.rescale_buckets(bucket=3)
    table = catalog.get_table("db.t")
    table.rollback_to(before.id)
    table = catalog.get_table("db.t")
    assert table.options.bucket == 3  # the schema is not rolled back
    keys = pa.table({"dt": ["a"] * 40, "id": pa.array(range(40), pa.int64())})
    got = table.lookup(keys).sort_by("id").to_pylist()
    assert got == rows
    assert table.read().num_rows == 40
