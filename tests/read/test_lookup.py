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


@pytest.mark.parametrize("local_files", [False, True])
def test_a_lookup_whose_files_expire_while_it_reads_looks_up_again(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch, tmp_path: Any, local_files: bool
) -> None:
    """Another job writes, compacts the files a lookup is reading and expires the snapshots
    naming them: the lookup looks up again at the latest snapshot and finds the other job's
    rows too (before, it failed with ``MissingDataFileError`` and its advice to restore or roll
    back). A file missing while its snapshot lives is still that error."""
    import lakeops.read.lookup as lookup_module
    from lakeops.errors import MissingDataFileError

    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.int64())])
    disk = "1 gb" if local_files else "0 b"
    table = catalog.create_table(
        "db.t",
        schema=schema,
        primary_keys=["id"],
        options={
            "bucket": "1",
            "write-only": "true",
            "lookup.cache-max-disk-size": disk,
            "lakeops.lookup.local-dir": str(tmp_path / "local"),
        },
    )
    for i in range(3):
        table.write(pa.table({"id": range(i, i + 10), "v": [i] * 10}, schema=schema))
    real = lookup_module.matching_records
    raced: list[bool] = []

    def overtaken(*args: Any, **kwargs: Any) -> pa.Table:
        if not raced:
            raced.append(True)
            other = catalog.get_table("db.t")
            other.write(pa.table({"id": [5, 100], "v": [50, 100]}, schema=schema))
            other.compact(full=True)
            other.expire_snapshots(retain_min=1, retain_max=1)
        return real(*args, **kwargs)

    monkeypatch.setattr(lookup_module, "matching_records", overtaken)
    got = table.lookup(pa.table({"id": pa.array([0, 5, 11, 100, 7], pa.int64())}))
    assert raced
    assert sorted((r["id"], r["v"]) for r in got.to_pylist()) == [
        (0, 0),
        (5, 50),
        (7, 2),
        (11, 2),
        (100, 100),
    ]
    monkeypatch.undo()
    latest = catalog.get_table("db.t")
    latest.write(pa.table({"id": [200], "v": [1]}, schema=schema))
    live = [e.file for e in latest.store.live_entries(latest.latest_snapshot())]
    victim = min(live, key=lambda f: f.row_count)  # id 200's, never looked up (no local file)
    root = str(latest.store.root).removeprefix("file://")
    (tmp_path.__class__(root) / "bucket-0" / victim.file_name).unlink()
    with pytest.raises(MissingDataFileError):
        latest.lookup(pa.table({"id": pa.array([200], pa.int64())}))
