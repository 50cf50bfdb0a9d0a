"""Random interleavings of lakeops and Java Paimon 0.9 on what keeps data alive: tags made by
either side, snapshot expiry by either side, lakeops' rollbacks (to snapshots and tags),
branches made from tags and written by both, fast-forwards and orphan cleanup, among writes and
compactions by both. After every step both readers read the main branch and every branch, each
tag and a few retained snapshots, against a plain per-record model of what each held; and
``check()`` finds every file.

(A wider form of this, run by hand, found that lakeops' expiry deleted the data of a tag whose
changelog Paimon's expiry had deleted with its snapshot, and that a rollback to such a tag
failed: ``tests/interop/test_java_keep_alive_interop.py`` and ``tests/store/test_tags.py`` pin
both down; these seeds are the net for what else such sequences may break.)
"""

from __future__ import annotations

import copy
import datetime as dt
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakeops import Catalog, Table
from tests.interop.java_oracle import run_ops
from tests.interop.test_random_java_interop import random_config, random_rows, table_schema
from tests.table.test_random_operations import Model

pytestmark = pytest.mark.interop

Row = dict[str, Any]
Rows = dict[tuple[Any, ...], Row]
KEYS = 20


class Run:
    """One random sequence on one table and its branches, by both engines. ``models`` holds
    each branch's latest rows (None: the main branch), ``at`` the rows of every snapshot a
    step committed and ``tagged`` those of every tag, both by (branch, id or name)."""

    def __init__(self, warehouse: Path, classpath: str, seed: int) -> None:
        self.rng = rng = random.Random(seed)
        self.engine, self.partitioned, options = random_config(rng)
        self.warehouse, self.classpath = warehouse, classpath
        self.schema = table_schema(self.partitioned)
        self.names = self.schema.names
        self.catalog = Catalog(str(warehouse))
        self.catalog.create_database("db")
        self.catalog.create_table(
            "db.t",
            schema=self.schema,
            primary_keys=["p", "k"] if self.partitioned else ["k"],
            partition_keys=["p"] if self.partitioned else [],
            options=options,
        )
        self.models: dict[str | None, Model] = {None: self.model()}
        self.at: dict[tuple[str | None, int], Rows] = {}
        self.tagged: dict[tuple[str | None, str], Rows] = {}
        self.branch_tag: dict[str, str] = {}  # branch -> the tag it was made from
        self.names_made = 0
        self.trail = [f"seed {seed}: {self.engine}, partitioned {self.partitioned}, {options}"]

    def model(self, rows: Rows | None = None) -> Model:
        m = Model(self.engine, self.partitioned, False)
        m.rows = copy.deepcopy(rows or {})
        return m

    def java(self, ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return run_ops(self.classpath, str(self.warehouse), ops)

    def table(self, branch: str | None) -> Table:
        main = self.catalog.get_table("db.t")
        return main if branch is None else main.branch(branch)

    @staticmethod
    def ident(branch: str | None) -> str:
        return "db.t" if branch is None else f"db.t$branch_{branch}"

    def fresh_name(self, prefix: str) -> str:
        self.names_made += 1
        return f"{prefix}{self.names_made}"

    def rows(self) -> list[Row]:
        return random_rows(self.rng, self.names, KEYS)

    def committed(self, branch: str | None) -> None:
        latest = self.table(branch).latest_snapshot()
        if latest is not None:
            self.at[(branch, latest.id)] = copy.deepcopy(self.models[branch].rows)

    # ------------------------------------------------------------------ the operations
    def ours_write(self, branch: str | None) -> None:
        rows = self.rows()
        self.trail.append(f"  {rows}")
        self.table(branch).write(pa.Table.from_pylist(rows, schema=self.schema))
        self.models[branch].write(rows)
        self.committed(branch)

    def java_write(self, branch: str | None) -> None:
        rows = self.rows()
        self.trail.append(f"  {rows}")
        self.java([{"op": "write", "table": self.ident(branch), "rows": rows}])
        self.models[branch].write(rows)
        self.committed(branch)

    def ours_compact(self, branch: str | None) -> None:
        self.table(branch).compact(full=self.rng.random() < 0.5)
        self.committed(branch)

    def java_compact(self, branch: str | None) -> None:
        self.java([{"op": "compact", "table": self.ident(branch)}])
        self.committed(branch)

    def _tag(self, branch: str | None) -> tuple[str, int] | None:
        """A fresh tag name and a snapshot of ``branch`` whose rows are known, recorded as
        tagged (None: no such snapshot)."""
        live = [s.id for s in self.table(branch).snapshots() if (branch, s.id) in self.at]
        if not live:
            return None
        name, sid = self.fresh_name("t"), self.rng.choice(live)
        self.trail.append(f"  {name} -> {sid}")
        self.tagged[(branch, name)] = copy.deepcopy(self.at[(branch, sid)])
        return name, sid

    def ours_tag(self, branch: str | None) -> None:
        if tag := self._tag(branch):
            self.table(branch).create_tag(*tag)

    def java_tag(self, branch: str | None) -> None:
        if tag := self._tag(branch):
            name, sid = tag
            self.java(
                [{"op": "tag", "table": self.ident(branch), "name": name, "snapshot_id": sid}]
            )

    def ours_delete_tag(self, branch: str | None) -> None:
        tags = self.table(branch).tags()
        if tags:
            name = self.rng.choice(tags).name
            self.trail.append(f"  {name}")
            self.table(branch).delete_tag(name)

    def ours_expire(self, branch: str | None) -> None:
        if branch is None:  # lakeops expires the main branch (it keeps the branches)
            retain = self.rng.randint(1, 3)
            self.trail.append(f"  retain {retain}")
            self.table(None).expire_snapshots(retain_min=1, retain_max=retain)

    def java_expire(self, branch: str | None) -> None:
        if branch is not None:
            return  # Paimon 0.9's expiry of a branch keeps the main branch's tags, not its own
        tags = {t.name for t in self.table(None).tags()}
        if not set(self.branch_tag.values()) <= tags:
            return  # Paimon 0.9's expiry keeps the tags, not the branches made from them
        retain = self.rng.randint(1, 3)
        self.trail.append(f"  retain {retain}")
        self.java([{"op": "expire", "table": self.ident(branch), "retain": retain}])

    def ours_rollback(self, branch: str | None) -> None:
        table = self.table(branch)
        tags = table.tags()
        if tags and self.rng.random() < 0.5:
            name = self.rng.choice(tags).name
            self.trail.append(f"  to tag {name}")
            table.rollback_to(tag=name)
            self.models[branch] = self.model(self.tagged[(branch, name)])
        else:
            live = [s.id for s in table.snapshots() if (branch, s.id) in self.at]
            if not live:
                return
            sid = self.rng.choice(live)
            self.trail.append(f"  to snapshot {sid}")
            table.rollback_to(sid)
            self.models[branch] = self.model(self.at[(branch, sid)])
        self.committed(branch)

    def ours_branch(self, branch: str | None) -> None:
        tags = self.table(None).tags()
        if branch is not None or not tags:
            return
        tag, name = self.rng.choice(tags).name, self.fresh_name("b")
        self.trail.append(f"  {name} from {tag}")
        self.table(None).create_branch(name, from_tag=tag)
        rows = self.tagged[(None, tag)]
        self.models[name] = self.model(rows)
        self.branch_tag[name] = tag
        self.tagged[(name, tag)] = copy.deepcopy(rows)
        self.committed(name)

    def ours_fast_forward(self, branch: str | None) -> None:
        if branch is None:
            return
        first = min(s.id for s in self.table(branch).snapshots())
        main_tags = {t.name: t.snapshot.id for t in self.table(None).tags()}
        self.table(None).fast_forward(branch)
        self.models[None] = self.model(self.models[branch].rows)
        # the main branch holds the branch's snapshots and tags from the branch's first on
        self.at = {k: v for k, v in self.at.items() if k[0] is not None or k[1] < first}
        self.tagged = {
            k: v
            for k, v in self.tagged.items()
            if k[0] is not None or main_tags.get(k[1], first) < first
        }
        self.at.update({(None, i): v for (b, i), v in list(self.at.items()) if b == branch})
        self.tagged.update({(None, n): v for (b, n), v in list(self.tagged.items()) if b == branch})

    def ours_orphans(self, branch: str | None) -> None:
        self.table(None).remove_orphan_files(older_than=dt.timedelta(0), force=True)

    # ------------------------------------------------------------------ one step
    def step(self) -> None:
        ops = {
            self.ours_write: 6,
            self.java_write: 5,
            self.ours_compact: 2,
            self.java_compact: 2,
            self.ours_tag: 3,
            self.java_tag: 2,
            self.ours_delete_tag: 1,
            self.ours_expire: 3,
            self.java_expire: 3,
            self.ours_rollback: 2,
            self.ours_branch: 2,
            self.ours_fast_forward: 1,
            self.ours_orphans: 1,
        }
        op = self.rng.choices(list(ops), list(ops.values()))[0]
        branch = self.rng.choice(list(self.models))
        self.trail.append(f"{op.__name__} on {branch}")
        op(branch)
        for b in self.models:
            self.check(b)
        assert (report := self.table(None).check()).ok, report.problems

    def check(self, branch: str | None) -> None:
        table = self.table(branch)
        reads: list[tuple[str, Rows, dict[str, Any]]] = [("latest", self.models[branch].rows, {})]
        reads += [
            (f"tag {t.name}", self.tagged[(branch, t.name)], {"tag": t.name}) for t in table.tags()
        ]
        live = [s.id for s in table.snapshots() if (branch, s.id) in self.at]
        reads += [
            (f"snapshot {i}", self.at[(branch, i)], {"snapshot_id": i})
            for i in self.rng.sample(live, min(2, len(live)))
        ]
        for what, rows, scan in reads:
            expected = self.model(rows).sorted_rows(self.names)
            ours = table.read(**scan)
            got = sorted(zip(*[ours.column(n).to_pylist() for n in self.names], strict=True))
            assert got == expected, f"lakeops' read of {branch} {what}"
            if branch is not None and "tag" in scan:
                continue  # Paimon 0.9 reads a branch's scan.tag-name from the main's tags
            (java,) = self.java([{"op": "read", "table": self.ident(branch), **scan}])
            got = sorted(tuple(r[n] for n in self.names) for r in java["rows"])
            assert got == expected, f"Java's read of {branch} {what}"


@pytest.mark.parametrize("seed", range(12))
def test_tags_branches_and_expiry_of_both_match_the_model(
    tmp_path: Path, java_classpath: str, seed: int
) -> None:
    run = Run(tmp_path / "wh", java_classpath, seed)
    try:
        for _ in range(run.rng.randint(10, 16)):
            run.step()
    except AssertionError as failure:
        raise AssertionError("\n".join([*run.trail, str(failure)])) from None
