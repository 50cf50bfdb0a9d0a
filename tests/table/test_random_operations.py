"""Random sequences of table operations against a plain per-record model: writes with repeated
keys and nulls, deletes, updates, compactions, rollbacks (to snapshots and to tags), snapshot
expiry, time travel, filtered reads, and branches written and fast-forwarded, on primary-key
tables of every merge engine, with fixed, dynamic and cross-partition buckets, deletion vectors,
changelog producers and small write buffers. After every step the table reads as the model
says, every retained snapshot reads as it did when it was published, and ``check()`` finds
every file the table references.

The interactions of these operations lost data before (a rollback's restored index files
deleted by expiry, a first-row write's moved file deleted, a moved key's deleted row counted by
the cross-partition index); each such bug also has its own test.

Paimon's merge functions restart a partial-update or aggregation row from the values of a
``-D`` record (``initRow``) until a compaction to the top level drops the ``-D``, so what a
later partial record finds depends on compaction timing, in Java Paimon as in lakeops: the
model compacts fully after a delete on those engines, where the answer is determined.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakeops import Catalog, Table
from lakeops.errors import LakeopsError

Row = dict[str, Any]
KEYS = 30


class Model:
    """The rows a primary-key table holds, applied record by record in write order."""

    def __init__(self, engine: str, partitioned: bool, cross: bool) -> None:
        self.engine, self.partitioned, self.cross = engine, partitioned, cross
        self.rows: dict[tuple[Any, ...], Row] = {}

    def key(self, r: Row) -> tuple[Any, ...]:
        return (r["p"], r["k"]) if self.partitioned and not self.cross else (r["k"],)

    def write(self, rows: list[Row]) -> None:
        for r in rows:
            old = self.rows.get(self.key(r))
            if old is None or self.engine == "deduplicate":
                self.rows[self.key(r)] = dict(r)
            elif self.engine == "partial-update":  # non-null fields overwrite, in the old row
                old.update({c: r[c] for c in ("v", "w") if r[c] is not None})
            elif self.engine == "aggregation":  # v: sum; w: last non-null value
                if r["v"] is not None:
                    old["v"] = r["v"] if old["v"] is None else old["v"] + r["v"]
                if r["w"] is not None:
                    old["w"] = r["w"]
            # first-row: the first row stays

    def sorted_rows(self, names: list[str]) -> list[tuple[Any, ...]]:
        return sorted(tuple(r[n] for n in names) for r in self.rows.values())


def _table_rows(table: pa.Table, names: list[str]) -> list[tuple[Any, ...]]:
    return sorted(zip(*[table.column(n).to_pylist() for n in names], strict=True))


def _config(rng: random.Random) -> tuple[str, bool, bool, dict[str, str]]:
    engine = rng.choice(
        ["deduplicate", "deduplicate", "partial-update", "first-row", "aggregation"]
    )
    partitioned = rng.random() < 0.5
    options = {"bucket": rng.choice(["1", "2", "3", "-1"])}
    vectors = engine != "first-row" and rng.random() < 0.5
    if vectors:
        options["deletion-vectors.enabled"] = "true"
    if engine != "deduplicate":
        options["merge-engine"] = engine
    if engine == "partial-update":
        options["partial-update.remove-record-on-delete"] = "true"
    if engine == "aggregation":
        options["fields.v.aggregate-function"] = "sum"
        options["aggregation.remove-record-on-delete"] = "true"
    if rng.random() < 0.3:
        producers = ["lookup"] if engine == "first-row" else ["lookup", "input"]
        options["changelog-producer"] = rng.choice(
            producers + ([] if vectors or engine == "first-row" else ["full-compaction"])
        )
    if rng.random() < 0.3:
        options["num-sorted-run.compaction-trigger"] = "2"
    if rng.random() < 0.2:
        options["write-buffer-size"] = "4 kb"
    cross = partitioned and engine != "aggregation" and rng.random() < 0.35
    if cross:
        options["bucket"] = "-1"
    return engine, partitioned, cross, options


class Run:
    """One random sequence on one table."""

    def __init__(self, root: Path, seed: int) -> None:
        self.rng = rng = random.Random(seed)
        engine, partitioned, cross, options = _config(rng)
        self.engine, self.partitioned, self.cross = engine, partitioned, cross
        fields = [pa.field("k", pa.int32(), False), pa.field("v", pa.int64()), ("w", pa.string())]
        if partitioned:
            fields.insert(0, pa.field("p", pa.string(), False))
        self.schema = pa.schema(fields)
        self.names = self.schema.names
        self.catalog = Catalog(str(root))
        self.catalog.create_database("db")
        self.table: Table = self.catalog.create_table(
            "db.t",
            schema=self.schema,
            primary_keys=["p", "k"] if partitioned and not cross else ["k"],
            partition_keys=["p"] if partitioned else None,
            options=options,
        )
        self.model = Model(engine, partitioned, cross)
        self.published: dict[int, dict[tuple[Any, ...], Row]] = {}
        self.trail = [f"seed {seed}: {engine}, partitioned {partitioned}, cross {cross}, {options}"]

    # ------------------------------------------------------------------ the operations
    def random_rows(self, n: int) -> list[Row]:
        rng = self.rng
        rows = [
            {
                "p": rng.choice("ab"),
                "k": rng.randrange(KEYS),
                "v": rng.choice([None, rng.randint(-10, 30)]),
                "w": rng.choice([None, "x", "y", "z" * rng.randint(1, 5)]),
            }
            for _ in range(n)
        ]
        return [{c: r[c] for c in self.names} for r in rows]

    def arrow(self, rows: list[Row]) -> pa.Table:
        return pa.Table.from_pylist(rows, schema=self.schema)

    def a_filter(self) -> tuple[pc.Expression, Callable[[Row], bool]]:
        rng = self.rng
        kind = rng.choice(["v", "k", "w"] + (["p"] if self.partitioned else []))
        if kind == "v":
            limit = rng.randint(-20, 40)
            return pc.field("v") < limit, lambda r: r["v"] is not None and r["v"] < limit
        if kind == "k":
            keys = set(rng.sample(range(KEYS), 5))
            return pc.field("k").isin(sorted(keys)), lambda r: r["k"] in keys
        if kind == "w":
            return pc.field("w").is_null(), lambda r: r["w"] is None
        part = rng.choice("ab")
        return pc.field("p") == part, lambda r: r["p"] == part

    def retained(self) -> list[int]:
        live = {s.id for s in self.table.snapshots()}
        return sorted(s for s in self.published if s in live)

    def write(self) -> None:
        rows = self.random_rows(self.rng.randint(1, 40))
        self.table.write(self.arrow(rows))
        self.model.write(rows)

    def delete(self) -> None:
        where, holds = self.a_filter()
        self.table.delete(where)
        self.model.rows = {k: r for k, r in self.model.rows.items() if not holds(r)}
        if self.engine in ("partial-update", "aggregation"):
            self.table.compact(full=True)  # see the module docstring

    def update(self) -> None:
        where, holds = self.a_filter()
        value = self.rng.choice(["u1", "u2"])
        self.table.update(where, {"w": value})
        for r in self.model.rows.values():
            if holds(r):
                r["w"] = value

    def compact(self) -> None:
        self.table.compact(full=self.rng.random() < 0.5)

    def rollback(self) -> None:
        if ids := self.retained():
            target = self.rng.choice(ids)
            if self.rng.random() < 0.5:
                self.table.rollback_to(target)
            else:
                self.table.create_tag(f"t{len(self.trail)}", target)
                self.table.rollback_to(tag=f"t{len(self.trail)}")
            self.model.rows = copy.deepcopy(self.published[target])

    def expire(self) -> None:
        self.table.expire_snapshots(retain_max=self.rng.randint(1, 4), retain_min=1)

    def travel(self) -> None:
        if ids := self.retained():
            sid = self.rng.choice(ids)
            then = Model(self.engine, self.partitioned, self.cross)
            then.rows = self.published[sid]
            got = _table_rows(self.table.read(snapshot_id=sid), self.names)
            assert got == then.sorted_rows(self.names), f"snapshot {sid}"

    def filtered(self) -> None:
        where, holds = self.a_filter()
        got = _table_rows(self.table.read(filter=where), self.names)
        expected = sorted(
            tuple(r[n] for n in self.names) for r in self.model.rows.values() if holds(r)
        )
        assert got == expected, f"filter {where}"

    def branch(self) -> None:
        if not (ids := self.retained()):
            return
        source, name = self.rng.choice(ids), f"b{len(self.trail)}"
        self.table.create_branch(name, from_snapshot=source)
        branch = self.table.branch(name)
        model = Model(self.engine, self.partitioned, self.cross)
        model.rows = copy.deepcopy(self.published[source])
        rows = self.random_rows(self.rng.randint(1, 15))
        branch.write(self.arrow(rows))
        model.write(rows)
        if self.rng.random() < 0.5:
            branch.compact(full=True)
        assert _table_rows(branch.read(), self.names) == model.sorted_rows(self.names), "branch"
        if self.rng.random() < 0.4:
            self.table.fast_forward(name)
            self.table = self.catalog.get_table("db.t")
            self.model = model
            self.published.clear()  # the main branch's history is the branch's now
        else:
            self.table.delete_branch(name)

    # ------------------------------------------------------------------ one step
    STEPS: tuple[tuple[str, int], ...] = (
        ("write", 10),
        ("delete", 3),
        ("update", 3),
        ("compact", 3),
        ("rollback", 2),
        ("expire", 1),
        ("travel", 2),
        ("filtered", 2),
        ("branch", 1),
    )

    def step(self) -> None:
        names, weights = zip(*self.STEPS, strict=True)
        op = self.rng.choices(names, weights)[0]
        self.trail.append(op)
        before = self.table.latest_snapshot()
        try:
            getattr(self, op)()
        except LakeopsError as error:  # refused as Paimon refuses: nothing may have changed
            self.trail.append(f"  refused: {error}")
            assert self.table.latest_snapshot() == before, "a refused operation committed"
            return
        if (latest := self.table.latest_snapshot()) is not None:
            self.published[latest.id] = copy.deepcopy(self.model.rows)
        got = _table_rows(self.table.read(), self.names)
        assert got == self.model.sorted_rows(self.names), f"read after {op}"
        report = self.table.check()
        assert report.ok, report.problems


@pytest.mark.parametrize("seed", range(24))
def test_random_operations_match_the_model(tmp_path: Path, seed: int) -> None:
    run = Run(tmp_path / "wh", seed)
    try:
        for _ in range(run.rng.randint(8, 20)):
            run.step()
    except AssertionError as failure:
        raise AssertionError("\n".join([*run.trail, str(failure)])) from None
