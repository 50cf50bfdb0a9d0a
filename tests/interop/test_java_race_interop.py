"""lakeops and Java Paimon 0.9 on one table at the same time. A primary-key table: Java's JVM runs a
sequence of writes, deletes, compactions and snapshot expiries while this process runs its own
writes, deletes, compactions and expiries, each side on keys of its own, so that whatever the
interleaving each side's last state is known (a plain model per side). Compactions of either side
may lose a race (Java's "File deletion conflicts detected", lakeops' ``CommitConflictError``):
the loser commits nothing, or — a Java write that compacts in its commit — only its appended
data, which Paimon 0.9 commits first and without a check. Afterwards both readers must agree,
then, after a full compaction by each, both must read the two models' rows, and ``check()`` must
pass.

Deletion-vector tables: Java Paimon 0.9's commit does not check deletion-vector index
conflicts (Paimon 1.x's does), so a 0.9 compaction racing lakeops' replaces the vectors lakeops
committed meanwhile (README, *Deletion vectors*). There Java only appends (``write-only``) and
expires, and lakeops compacts: a delete racing Java's appends must still remove every row it
names, including rows of records no compaction has reached yet.

Java publishes its snapshots with an exclusive rename here (``exclusive_commits``). Paimon 0.9's
own local file system checks that ``snapshot-N`` is free and then renames over it, under a lock
of its JVM only: a lakeops snapshot published in between is replaced and its commit lost (seen
in these races: lakeops' manifest lists left unreferenced under Java's snapshot of the same
id). That is Paimon 0.9's commit, not lakeops': see ``docs/commit-protocol.md``.

One side expires snapshots in a run: lakeops with even seeds, Java with odd ones. Paimon 0.9's
expiry deletes the data files its range's deltas dropped before it deletes the snapshot files,
and fails on a snapshot another expiry removed meanwhile: beside a second expiry (another Paimon
writer's, or lakeops') it can stop between the two, leaving a snapshot it was expiring in place
without files that snapshot names (seen in these races: files of the earliest retained snapshot
deleted, and not by lakeops). lakeops' expiry beside another one stops before it deletes
anything (``tests/maintenance/test_expire.py``).

An append table (unaware and fixed buckets, deletion vectors): appends, compactions and
expiries by both, lakeops' deletes beside them; both readers read every appended row lakeops
did not delete, once, before and after a compaction by each.
"""

from __future__ import annotations

import contextlib
import itertools
import random
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakeops import Catalog
from lakeops.errors import CommitConflictError
from tests.interop.java_oracle import run_ops

pytestmark = [pytest.mark.interop, pytest.mark.slow]

SCHEMA = pa.schema(
    [pa.field("k", pa.int32(), False), pa.field("v", pa.int64()), ("w", pa.string())]
)
FIELDS = [
    {"name": "k", "type": "INT NOT NULL"},
    {"name": "v", "type": "BIGINT"},
    {"name": "w", "type": "STRING"},
]
OURS, JAVAS = range(0, 50), range(50, 100)
#: Java's ops per run: a warm JVM runs one in about as long as lakeops does, so both sides
#: keep racing for most of the run
JAVA_OPS = 40
Rows = dict[int, tuple[int, int, str]]

CONFIGS = {
    "dedupe-2-buckets": {"bucket": "2"},
    "lookup-changelog": {"bucket": "1", "changelog-producer": "lookup"},
    "eager-compaction": {"bucket": "1", "num-sorted-run.compaction-trigger": "2"},
    "deletion-vectors": {"bucket": "2", "deletion-vectors.enabled": "true"},
    "deletion-vectors-lookup": {
        "bucket": "1",
        "deletion-vectors.enabled": "true",
        "changelog-producer": "lookup",
    },
}


def _random_rows(rng: random.Random, keys: range, tag: str) -> list[dict[str, Any]]:
    """1 to 30 rows of random ``keys``, each tagged ``tag`` (the op that wrote it)."""
    return [
        {"k": rng.choice(keys), "v": rng.randrange(100), "w": tag}
        for _ in range(rng.randint(1, 30))
    ]


def _race(
    java_classpath: str, wh: str, java_ops: list[dict[str, Any]], ours: Callable[[int], None]
) -> list[dict[str, Any]]:
    """Run ``java_ops`` in the oracle's JVM while this thread runs ``ours(step)`` for step 0, 1,
    … until Java is done, and at least 10 steps; Java's results."""
    outcome: dict[str, Any] = {}

    def java() -> None:
        try:
            outcome["results"] = run_ops(java_classpath, wh, java_ops, exclusive_commits=True)
        except BaseException as exc:  # reported below, in the test's thread
            outcome["error"] = exc

    racing = threading.Thread(target=java)
    racing.start()
    step = 0
    while racing.is_alive() or step < 10:  # and a few more, if Java was quick
        ours(step)
        step += 1
    racing.join()
    assert "error" not in outcome, outcome.get("error")
    results: list[dict[str, Any]] = outcome["results"]
    return results


def _java_ops(rng: random.Random, vectors: bool, expires: bool) -> list[dict[str, Any]]:
    """Java's side: writes and deletes of its keys, compactions, expiries (see the module
    docstring for deletion-vector tables)."""
    write = {"op": "write", "table": "db.t", "may_fail": True}
    if vectors:
        write["options"] = {"write-only": "true"}
    ops: list[dict[str, Any]] = []
    for i in range(JAVA_OPS):
        r = rng.random()
        if r < 0.5:
            rows = _random_rows(rng, JAVAS, f"j{i}")
            ops.append({**write, "rows": rows})
        elif r < 0.7:
            doomed = rng.sample(JAVAS, rng.randint(1, 5))
            rows = [{"k": k, "v": None, "w": None, "__kind__": "-D"} for k in doomed]
            ops.append({**write, "rows": rows})
        elif r < 0.9 and not vectors:
            ops.append({"op": "compact", "table": "db.t", "may_fail": True})
        elif expires:
            ops.append({"op": "expire", "table": "db.t", "retain": 3, "may_fail": True})
    return ops


def _landed(ops: list[dict[str, Any]], results: list[dict[str, Any]]) -> list[list[int]]:
    """Which of Java's writes landed, for every outcome their failures allow: a write that
    succeeded did, and so did one whose compaction lost a race (Paimon 0.9 commits the append
    first, unchecked); a write that failed otherwise (reading a snapshot an expiry removed)
    may have failed before its append committed or after: both are possible."""
    sure, unsure = [], []
    for i, (op, result) in enumerate(zip(ops, results, strict=True)):
        failed = result.get("failed")
        if op["op"] == "write":
            (unsure if failed and "File deletion conflicts" not in failed else sure).append(i)
    outcomes = []
    for chosen in itertools.product([False, True], repeat=len(unsure)):
        maybe = [i for i, yes in zip(unsure, chosen, strict=True) if yes]
        outcomes.append(sorted([*sure, *maybe]))
    return outcomes


def _java_models(ops: list[dict[str, Any]], results: list[dict[str, Any]]) -> list[Rows]:
    """Java's keys after its ops, for every outcome :func:`_landed` allows."""
    models = []
    for landed in _landed(ops, results):
        model: Rows = {}
        for i in landed:
            for row in ops[i]["rows"]:
                if row.get("__kind__") == "-D":
                    model.pop(row["k"], None)
                else:
                    model[row["k"]] = (row["k"], row["v"], row["w"])
        models.append(model)
    return models


def _ours(catalog: Catalog, rng: random.Random, step: int, model: Rows, expires: bool) -> None:
    """One lakeops op on its own keys (a write, a delete, an update, a compaction, an expiry);
    a compaction that loses a race is skipped."""
    table = catalog.get_table("db.t")
    r = rng.random()
    if r < 0.45:
        rows = _random_rows(rng, OURS, f"o{step}")
        table.write(pa.Table.from_pylist(rows, schema=SCHEMA))
        model.update({x["k"]: (x["k"], x["v"], x["w"]) for x in rows})
    elif r < 0.55:
        doomed = rng.sample(OURS, rng.randint(1, 5))
        table.delete(pc.field("k").isin(doomed))
        for k in doomed:
            model.pop(k, None)
    elif r < 0.65:
        touched = rng.sample(OURS, rng.randint(1, 8))
        table.update(pc.field("k").isin(touched), {"v": pc.field("v") + 1, "w": f"u{step}"})
        for k in touched:
            if k in model:
                model[k] = (k, model[k][1] + 1, f"u{step}")
    elif r < 0.9:
        with contextlib.suppress(CommitConflictError):  # Java compacted those files first
            table.compact(full=rng.random() < 0.5)
    elif expires:
        table.expire_snapshots(retain_min=2, retain_max=3)


def _diff(got: list[tuple[Any, ...]], expected: list[tuple[Any, ...]]) -> str:
    return (
        f"missing {sorted(set(expected) - set(got))}, unexpected {sorted(set(got) - set(expected))}"
    )


def _rows(table: pa.Table) -> list[tuple[Any, ...]]:
    return sorted(zip(*(table.column(n).to_pylist() for n in SCHEMA.names), strict=True))


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_lakeops_and_java_racing_on_one_table(
    tmp_path: Path, java_classpath: str, config: str, seed: int
) -> None:
    rng = random.Random(f"{config}-{seed}")
    options = {**CONFIGS[config], "write-buffer-size": "256 kb"}
    vectors = "deletion-vectors.enabled" in options
    wh = str(tmp_path)
    catalog = Catalog(wh)
    catalog.create_database("db")
    if seed % 2:
        create = {"op": "create", "table": "db.t", "fields": FIELDS, "primary_keys": ["k"]}
        run_ops(java_classpath, wh, [{**create, "partition_keys": [], "options": options}])
    else:
        catalog.create_table("db.t", schema=SCHEMA, primary_keys=["k"], options=options)
    java_ops = _java_ops(rng, vectors, expires=seed % 2 == 1)
    ours: Rows = {}
    results = _race(
        java_classpath,
        wh,
        java_ops,
        lambda step: _ours(catalog, rng, step, ours, expires=seed % 2 == 0),
    )
    candidates = [
        sorted([*ours.values(), *theirs.values()]) for theirs in _java_models(java_ops, results)
    ]

    table = catalog.get_table("db.t")
    got = _rows(table.read())
    (java_read,) = run_ops(java_classpath, wh, [{"op": "read", "table": "db.t"}])
    assert sorted((r["k"], r["v"], r["w"]) for r in java_read["rows"]) == got, "the readers"
    if not vectors:  # a deletion-vector table's batch reads skip level 0 until compacted
        assert got in candidates, _diff(got, candidates[-1])
    report = table.check()
    assert report.ok, report.problems

    run_ops(java_classpath, wh, [{"op": "compact", "table": "db.t"}])
    catalog.get_table("db.t").compact(full=True)
    got = _rows(catalog.get_table("db.t").read())
    assert got in candidates, _diff(got, candidates[-1])
    (java_read,) = run_ops(java_classpath, wh, [{"op": "read", "table": "db.t"}])
    assert sorted((r["k"], r["v"], r["w"]) for r in java_read["rows"]) == got, "the readers"
    ids = [s.id for s in catalog.get_table("db.t").snapshots()]
    assert ids == list(range(ids[0], ids[0] + len(ids))), "snapshot ids are contiguous"


APPEND_CONFIGS = {
    "unaware": {"bucket": "-1", "compaction.min.file-num": "2"},
    "fixed-bucket": {"bucket": "2", "bucket-key": "k"},
    "unaware-deletion-vectors": {
        "bucket": "-1",
        "compaction.min.file-num": "2",
        "deletion-vectors.enabled": "true",
    },
}


def _java_append_ops(rng: random.Random, vectors: bool, expires: bool) -> list[dict[str, Any]]:
    """Java's side on an append table: appends of its keys, compactions, expiries. No deletes,
    and no compactions of a deletion-vector table: Paimon 0.9 checks neither against the
    vectors committed meanwhile (a delete commits its vector as an append; a compaction keeps
    the rows a vector committed since it read the file)."""
    ops: list[dict[str, Any]] = []
    for i in range(JAVA_OPS):
        r = rng.random()
        if r < 0.6:
            rows = _random_rows(rng, JAVAS, f"j{i}")
            ops.append({"op": "write", "table": "db.t", "rows": rows, "may_fail": True})
        elif r < 0.9 and not vectors:
            ops.append({"op": "compact", "table": "db.t", "may_fail": True})
        elif expires:
            ops.append({"op": "expire", "table": "db.t", "retain": 3, "may_fail": True})
    return ops


def _ours_append(
    catalog: Catalog, rng: random.Random, step: int, model: list[Any], expires: bool
) -> None:
    """One lakeops op on an append table: an append, a delete of some of its keys' rows (a
    conflict with a compaction that replaced their files meanwhile commits nothing), a
    compaction or an expiry."""
    table = catalog.get_table("db.t")
    r = rng.random()
    if r < 0.45:
        rows = _random_rows(rng, OURS, f"o{step}")
        table.write(pa.Table.from_pylist(rows, schema=SCHEMA))
        model.extend((x["k"], x["v"], x["w"]) for x in rows)
    elif r < 0.6:
        doomed = set(rng.sample(OURS, rng.randint(1, 5)))
        with contextlib.suppress(CommitConflictError):
            table.delete(pc.field("k").isin(sorted(doomed)))
            model[:] = [row for row in model if row[0] not in doomed]
    elif r < 0.9:
        with contextlib.suppress(CommitConflictError):
            table.compact(full=rng.random() < 0.5)
    elif expires:
        table.expire_snapshots(retain_min=2, retain_max=3)


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("config", sorted(APPEND_CONFIGS))
def test_lakeops_and_java_racing_on_an_append_table(
    tmp_path: Path, java_classpath: str, config: str, seed: int
) -> None:
    """Append tables (unaware and fixed buckets, deletion vectors): appends, compactions and
    expiries by both sides at once, lakeops' deletes beside them; every row either side
    appended and lakeops did not delete is read once by both readers, before and after a
    compaction by each."""
    rng = random.Random(f"{config}-{seed}")
    options = {**APPEND_CONFIGS[config], "write-buffer-size": "256 kb"}
    wh = str(tmp_path)
    catalog = Catalog(wh)
    catalog.create_database("db")
    catalog.create_table("db.t", schema=SCHEMA, options=options)
    java_ops = _java_append_ops(rng, "deletion-vectors.enabled" in options, seed % 2 == 1)
    ours: list[Any] = []
    results = _race(
        java_classpath,
        wh,
        java_ops,
        lambda step: _ours_append(catalog, rng, step, ours, expires=seed % 2 == 0),
    )
    candidates = [
        sorted([*ours, *((r["k"], r["v"], r["w"]) for i in landed for r in java_ops[i]["rows"])])
        for landed in _landed(java_ops, results)
    ]
    for compact in (False, True):
        if compact:
            run_ops(java_classpath, wh, [{"op": "compact", "table": "db.t"}])
            catalog.get_table("db.t").compact(full=True)
        table = catalog.get_table("db.t")
        got = _rows(table.read())
        assert got in candidates, _diff(got, candidates[-1])
        (java_read,) = run_ops(java_classpath, wh, [{"op": "read", "table": "db.t"}])
        assert sorted((r["k"], r["v"], r["w"]) for r in java_read["rows"]) == got, "the readers"
        report = table.check()
        assert report.ok, report.problems
