"""Every operation overtaken by another job: at its first read of a data file, another writer
appends, compacts the table fully and expires every snapshot but the latest — so the files the
operation planned on are deleted under it, as on a busy table where every Paimon writer
expires after its commit. Whatever it is, the operation either succeeds or fails as a lost race
(``CommitConflictError``, ``SnapshotExpiredError``), never as corruption (whose advice, restore
or roll back, would discard the other job's commits); afterwards the table holds exactly what a
plain model says and ``check()`` finds nothing wrong."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakeops import Catalog, Table
from lakeops.errors import CommitConflictError, SnapshotExpiredError
from lakeops.io import data_formats

SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), False), ("v", pa.int64()), pa.field("dt", pa.string(), False)]
)
#: a kind's options and primary keys (partitioned by ``dt``, which each id keeps, where named)
CONFIGS: dict[str, tuple[dict[str, str], list[str]]] = {
    "primary-key": ({"bucket": "2"}, ["id"]),
    "deletion-vectors": ({"bucket": "2", "deletion-vectors.enabled": "true"}, ["id"]),
    "lookup-changelog": ({"bucket": "2", "changelog-producer": "lookup"}, ["id"]),
    "first-row": ({"bucket": "2", "merge-engine": "first-row"}, ["id"]),
    "dynamic-bucket": ({"bucket": "-1"}, ["id"]),
    "append": ({"bucket": "-1"}, []),
    "append-vectors": ({"bucket": "-1", "deletion-vectors.enabled": "true"}, []),
    "file-index": ({"bucket": "2", "file-index.bloom-filter.columns": "v"}, ["id"]),
    "cross-partition": ({"bucket": "-1"}, ["id"]),
    "partitioned": ({"bucket": "2"}, ["dt", "id"]),
}
PARTITIONED = ("cross-partition", "partitioned")
OPS = ["write", "compact", "full", "read", "lookup", "delete", "update", "flush", "index", "check"]
#: the ids the other job appends (v = id)
THEIRS = list(range(10_000, 10_010))


def _rows(ids: list[int], offset: int = 0) -> pa.Table:
    values = {"id": ids, "v": [i + offset for i in ids], "dt": [f"d{i % 3}" for i in ids]}
    return pa.table(values, schema=SCHEMA)


class _Race:
    """Arms the other job to run once, at the next data file read."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.armed = False
        self.running = False
        self.ran = False

    def run(self) -> None:
        self.armed, self.running = False, True
        try:
            other = self.catalog.get_table("db.t")
            other.write(_rows(THEIRS))
            other.compact(full=True)
            other.expire_snapshots(retain_min=1, retain_max=1)
            self.ran = True
        finally:
            self.running = False


@pytest.fixture
def race(catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> Iterator[_Race]:
    race = _Race(catalog)
    for name in ("names", "read", "row_count", "unit_rows", "read_unit", "iter_batches"):
        real = getattr(data_formats.ParquetFormat, name)

        def reading(self: Any, path: str, *args: Any, _real: Any = real, **kw: Any) -> Any:
            if race.armed and not race.running and "/data-" in str(path):
                race.run()
            return _real(self, path, *args, **kw)

        monkeypatch.setattr(data_formats.ParquetFormat, name, reading)
    yield race


def _contents(table: Table, keyed: bool) -> Any:
    rows = [(r["id"], r["v"]) for r in table.read().to_pylist()]
    return dict(rows) if keyed else Counter(rows)


def _cases() -> list[tuple[str, str]]:
    """Every (table kind, operation) the kind takes: lookups and level-0 flushes are for
    primary-key tables, and a first-row table takes no delete or update (as Paimon)."""
    return [
        (config, op)
        for config in sorted(CONFIGS)
        for op in OPS
        if (CONFIGS[config][1] or op not in ("lookup", "flush"))
        and not (config == "first-row" and op in ("delete", "update"))
    ]


@pytest.mark.parametrize(("config", "op"), _cases())
def test_an_operation_overtaken_by_another_jobs_compaction_and_expiry(
    catalog: Catalog, race: _Race, config: str, op: str
) -> None:
    options, keys = CONFIGS[config]
    parts = ["dt"] if config in PARTITIONED else []
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=keys, partition_keys=parts, options=options
    )
    for i in range(4):
        table.write(_rows(list(range(i * 20, i * 20 + 40))))
    table = catalog.get_table("db.t")
    model = _contents(table, bool(keys))
    race.armed = True
    outcome = "ok"
    try:
        _operate(table, op, bool(keys), model, race)
    except (CommitConflictError, SnapshotExpiredError) as exc:
        assert op in ("compact", "full", "flush", "index", "read"), exc
        outcome = type(exc).__name__
    race.armed = False
    # the model: the other job's rows (if it ran), then the operation's change (if it applied)
    if race.ran:
        for i in THEIRS:
            if keys:
                model[i] = i
            else:
                model[(i, i)] += 1
    if outcome == "ok":
        _apply(model, op, keys, config)
    latest = catalog.get_table("db.t")
    assert _contents(latest, bool(keys)) == model
    assert not latest.check().problems


def _operate(table: Table, op: str, keyed: bool, model: Any, race: _Race) -> None:
    """Run ``op`` on ``table`` (a read or lookup checked against ``model`` here)."""
    if op == "write":
        table.write(_rows(list(range(5, 15)), 1000))
    elif op == "compact":
        table.compact()
    elif op == "full":
        table.compact(full=True)
    elif op == "read":
        got = _contents(table, keyed)
        assert got == model or race.ran
    elif op == "lookup":
        ids = [1, 30, 10_005, 99_999]
        keys = pa.table({"id": pa.array(ids, pa.int64()), "dt": [f"d{i % 3}" for i in ids]})
        got = table.lookup(keys)
        found = {r["id"]: r["v"] for r in got.to_pylist()}
        assert found == {1: 1, 30: 30, **({10_005: 10_005} if race.ran else {})}
    elif op == "delete":
        table.delete(pc.field("id") < 10)
    elif op == "update":
        table.update(pc.field("id") < 10, {"v": pc.field("v") + 1})
    elif op == "index":
        table.rewrite_file_index()
    elif op == "check":  # files expired while it checks them are no problem
        assert table.check().problems == ()
    else:
        table.flush_level0()


def _apply(model: Any, op: str, keys: list[str], config: str) -> None:
    """The change ``op`` makes to ``model`` (an id -> v dict, or a Counter of rows)."""
    if op == "write":
        for i in range(5, 15):
            if not keys:
                model[(i, i + 1000)] += 1
            elif config != "first-row" or i not in model:
                model[i] = i + 1000
    elif op in ("delete", "update"):
        touched = [k for k in model if (k if keys else k[0]) < 10]
        for k in touched:
            if keys:
                if op == "delete":
                    del model[k]
                else:
                    model[k] += 1
            else:
                count = model.pop(k)
                if op == "update":
                    model[(k[0], k[1] + 1)] += count
