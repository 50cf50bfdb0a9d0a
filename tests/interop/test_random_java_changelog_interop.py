"""Random interleavings of lakeops and Java Paimon 0.9 on lookup-changelog tables whose changelog
outlives their snapshots (``changelog.num-retained.max`` above ``snapshot.num-retained.max``):
writes, deletes, compactions and snapshot expiries by either side (Java's commits expire by
the table's options too). After every step, the state of a few snapshots the run saw with
lakeops' ``read_changes`` folded onto it must be the latest state of a per-record model — or,
where expiry left a gap in the changes, ``read_changes`` must refuse — and Java's read and
``check()`` must agree.

(A wider form of this, run by hand, found that lakeops' expiry of a kept changelog read the
data manifest lists of its snapshot, which had gone with it: every later expiry raised, and
``check()`` reported a healthy table broken; ``tests/maintenance/test_expire.py`` pins it down.
Seven of these ten seeds fail on the tree before that fix.)
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakeops import Catalog
from lakeops.errors import SnapshotExpiredError
from tests.interop.java_oracle import run_ops
from tests.interop.test_random_java_interop import random_rows, table_schema
from tests.table.test_random_operations import Model

pytestmark = pytest.mark.interop

Row = dict[str, Any]
KEYS = 20


class Run:
    """One random sequence on one table by both engines; ``seen`` holds the rows of every
    snapshot that was the latest after a step."""

    def __init__(self, warehouse: Path, classpath: str, seed: int) -> None:
        self.rng = rng = random.Random(seed)
        self.engine = rng.choice(["deduplicate", "partial-update", "aggregation", "first-row"])
        self.partitioned = rng.random() < 0.5
        options = {
            "bucket": rng.choice(["1", "2"]),
            "write-buffer-size": "256 kb",
            "changelog-producer": "lookup",
            "changelog.num-retained.min": "1",
            "changelog.num-retained.max": str(rng.randint(3, 10)),
            "snapshot.num-retained.min": "1",
            "snapshot.num-retained.max": "3",
        }
        if self.engine != "deduplicate":
            options["merge-engine"] = self.engine
        if self.engine == "aggregation":
            options["fields.v.aggregate-function"] = "sum"
            options["fields.w.aggregate-function"] = "last_non_null_value"
        if self.engine != "first-row" and rng.random() < 0.4:
            options["deletion-vectors.enabled"] = "true"
        self.schema = table_schema(self.partitioned)
        self.names = self.schema.names
        self.keys = ["p", "k"] if self.partitioned else ["k"]
        self.warehouse, self.classpath = warehouse, classpath
        self.catalog = Catalog(str(warehouse))
        self.catalog.create_database("db")
        self.catalog.create_table(
            "db.t",
            schema=self.schema,
            primary_keys=self.keys,
            partition_keys=["p"] if self.partitioned else [],
            options=options,
        )
        self.model = Model(self.engine, self.partitioned, False)
        self.seen: dict[int, list[Row]] = {0: []}
        self.trail = [f"seed {seed}: {self.engine}, {options}"]

    def java(self, ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return run_ops(self.classpath, str(self.warehouse), ops)

    def rows(self) -> list[Row]:
        return random_rows(self.rng, self.names, KEYS)

    # ------------------------------------------------------------------ the operations
    def ours_write(self) -> None:
        rows = self.rows()
        self.trail.append(f"  {rows}")
        self.catalog.get_table("db.t").write(pa.Table.from_pylist(rows, schema=self.schema))
        self.model.write(rows)

    def java_write(self) -> None:
        rows = self.rows()
        self.trail.append(f"  {rows}")
        self.java([{"op": "write", "table": "db.t", "rows": rows}])
        self.model.write(rows)

    def ours_compact(self) -> None:
        self.catalog.get_table("db.t").compact(full=self.rng.random() < 0.5)

    def java_compact(self) -> None:
        self.java([{"op": "compact", "table": "db.t"}])

    def ours_delete(self) -> None:
        if self.engine != "deduplicate":
            return
        keys = self.rng.sample(range(KEYS), 4)
        self.trail.append(f"  k in {keys}")
        self.catalog.get_table("db.t").delete(pc.field("k").isin(keys))
        self.model.rows = {k: r for k, r in self.model.rows.items() if r["k"] not in keys}

    def ours_expire(self) -> None:
        self.catalog.get_table("db.t").expire_snapshots()

    def java_expire(self) -> None:
        self.java([{"op": "expire", "table": "db.t", "retain": self.rng.randint(1, 3)}])

    # ------------------------------------------------------------------ one step
    def step(self) -> None:
        ops = {
            self.ours_write: 6,
            self.java_write: 6,
            self.ours_compact: 2,
            self.java_compact: 2,
            self.ours_delete: 2,
            self.ours_expire: 3,
            self.java_expire: 2,
        }
        op = self.rng.choices(list(ops), list(ops.values()))[0]
        self.trail.append(op.__name__)
        op()
        table = self.catalog.get_table("db.t")
        expected = self.model.sorted_rows(self.names)
        latest = table.latest_snapshot()
        if latest is None:
            return  # nothing written yet
        self.seen.setdefault(latest.id, [dict(zip(self.names, r, strict=True)) for r in expected])
        kept = {
            int(p.name[10:])
            for p in (Path(table.root) / "changelog").glob("changelog-*")
            if p.name[10:].isdigit()
        }
        readable = kept | {s.id for s in table.snapshots()}
        starts = sorted(self.seen)
        for start in self.rng.sample(starts, min(3, len(starts))):
            whole = all(i in readable for i in range(start + 1, latest.id + 1))
            if not whole:
                with pytest.raises(SnapshotExpiredError):
                    table.read_changes(start, mode="changelog")
                continue
            state = {tuple(r[k] for k in self.keys): dict(r) for r in self.seen[start]}
            for change in table.read_changes(start, mode="changelog").to_pylist():
                kind = change.pop("_row_kind")
                key = tuple(change[k] for k in self.keys)
                if kind in ("+I", "+U"):
                    state[key] = change
                else:
                    state.pop(key, None)
            got = sorted(tuple(r[n] for n in self.names) for r in state.values())
            assert got == expected, f"the changes after snapshot {start}, folded"
        (java,) = self.java([{"op": "read", "table": "db.t"}])
        assert sorted(tuple(r[n] for n in self.names) for r in java["rows"]) == expected, (
            "Java's read"
        )
        report = table.check()
        assert report.ok, report.problems


@pytest.mark.parametrize("seed", range(10))
def test_changes_of_both_fold_to_the_model_through_expiry(
    tmp_path: Path, java_classpath: str, seed: int
) -> None:
    run = Run(tmp_path / "wh", java_classpath, seed)
    try:
        for _ in range(run.rng.randint(8, 14)):
            run.step()
    except AssertionError as failure:
        raise AssertionError("\n".join([*run.trail, str(failure)])) from None
