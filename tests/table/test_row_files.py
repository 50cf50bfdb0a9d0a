"""Row-level changes of append tables, file by file (lakeops.table.row_files): merges with
conditions on both sides and NULL keys against a plain model of the rows; which columns each
file is read for (only a condition's or the keys' columns of a file the change does not touch,
no column read twice); a copy-on-write rewrite holds at most one file per worker; a merge that
matches a target row twice writes nothing."""

from __future__ import annotations

import random
import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lakeops.parallel
from lakeops import Catalog
from lakeops.errors import DataValidationError
from lakeops.kv.append_reader import AppendFileReader

SCHEMA = pa.schema([("k", pa.int64()), pa.field("p", pa.string(), False), ("v", pa.int32())])
KINDS = {
    "append": {},
    "append-dv": {"deletion-vectors.enabled": "true"},
    "append-fixed": {"bucket": "2", "bucket-key": "k"},
}


def _table(catalog: Catalog, kind: str) -> Any:
    return catalog.create_table("db.t", schema=SCHEMA, partition_keys=["p"], options=KINDS[kind])


def _bag(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted(
        (-1 if r["k"] is None else r["k"], r["p"], -1000 if r["v"] is None else r["v"])
        for r in rows
    )


def _files(root: Path) -> list[tuple[str, int]]:
    return sorted((str(p), p.stat().st_size) for p in root.rglob("*") if p.is_file())


@pytest.mark.parametrize("kind", list(KINDS))
def test_merges_with_conditions_and_null_keys_match_the_model(catalog: Catalog, kind: str) -> None:
    """Several files; target and source rows with NULL keys (matching nothing); a matched row
    is updated when ``target.v > 10``, else deleted when ``source.v < 0``, else kept as it
    is; a source row matching nothing is inserted (``v + 1``) unless ``source.v`` is 99 or
    NULL (a NULL condition is not true)."""
    rng = random.Random(7)
    table = _table(catalog, kind)
    model: list[dict[str, Any]] = []
    for f in range(5):
        rows = [
            {
                "k": None if rng.random() < 0.1 else f * 100 + i,
                "p": rng.choice("ab"),
                "v": None if rng.random() < 0.1 else rng.randrange(30),
            }
            for i in range(rng.randrange(10, 30))
        ]
        table.write(pa.Table.from_pylist(rows, schema=SCHEMA))
        model += rows
    keyed = [r for r in model if r["k"] is not None]
    picked = rng.sample(keyed, 25)
    values = [None, 99, -3, -1, 0, 5, 40]
    source = [{"k": r["k"], "p": "x", "v": rng.choice(values)} for r in picked]
    source += [{"k": 10_000 + i, "p": "b", "v": rng.choice(values)} for i in range(8)]
    source += [{"k": None, "p": "a", "v": 1}, {"k": None, "p": "b", "v": 2}]
    rng.shuffle(source)
    done = (
        table.merge(pa.Table.from_pylist(source, schema=SCHEMA), on=["k"])
        .when_matched_update({"v": pc.field("source.v")}, condition=pc.field("target.v") > 10)
        .when_matched_delete(condition=pc.field("source.v") < 0)
        .when_not_matched_insert(
            {"k": pc.field("source.k"), "p": pc.field("source.p"), "v": pc.field("source.v") + 1},
            condition=pc.field("source.v") != 99,
        )
        .execute()
    )
    by_key = {s["k"]: s for s in source if s["k"] is not None}
    kept, updated, deleted = [], 0, 0
    for r in model:
        s = by_key.pop(r["k"], None) if r["k"] is not None else None
        if s is not None and r["v"] is not None and r["v"] > 10:
            kept.append({**r, "v": s["v"]})
            updated += 1
        elif s is not None and s["v"] is not None and s["v"] < 0:
            deleted += 1
        else:
            kept.append(r)
    unmatched = list(by_key.values()) + [s for s in source if s["k"] is None]
    inserted = [{**s, "v": s["v"] + 1} for s in unmatched if s["v"] is not None and s["v"] != 99]
    assert (done.deleted, done.updated, done.inserted) == (deleted, updated, len(inserted))
    assert updated and deleted and inserted  # the draw exercises every clause
    assert _bag(table.read().to_pylist()) == _bag(kept + inserted)


def _record_reads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, tuple[str, ...]]]:
    """Every (data file, columns) the append reader is asked for from now on."""
    reads: list[tuple[str, tuple[str, ...]]] = []
    real = AppendFileReader.read

    def read(self: AppendFileReader, directory: str, f: Any, columns: Any) -> pa.Table:
        reads.append((f.file_name, tuple(columns)))
        return real(self, directory, f, columns)

    monkeypatch.setattr(AppendFileReader, "read", read)
    return reads


@pytest.mark.parametrize("kind", ["append", "append-dv"])
def test_files_are_read_for_what_the_change_needs_once(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """Four files (file i: k = 4i with v = i, k = 4i + 2 with v = 10, so the statistics keep
    several files): a delete of v = 2, an update of v = 1 and a merge of keys 1, 5 (in the
    key ranges of files that do not hold them) and 12. Each file is read first for the
    condition's (or the keys') column; only the file touched is read for its other columns
    (but by a vector-marking delete), and no column of a file is read twice."""
    table = _table(catalog, kind)
    for i in range(4):
        table.write(pa.table({"k": [4 * i, 4 * i + 2], "p": ["a"] * 2, "v": [i, 10]}, SCHEMA))

    def check(run: Any, column: str, whole: bool) -> None:
        reads = _record_reads(monkeypatch)
        run()
        by_file: dict[str, list[str]] = {}
        for name, columns in reads:
            by_file.setdefault(name, []).extend(columns)
        assert len(by_file) >= 2, reads  # the statistics kept an untouched file
        assert all(len(set(cols)) == len(cols) for cols in by_file.values()), reads
        assert all(cols[0] == column for cols in by_file.values()), reads
        hit = [cols for cols in by_file.values() if len(cols) > 1]
        assert len(hit) == (1 if whole else 0), reads
        assert all(sorted(cols) == ["k", "p", "v"] for cols in hit), reads

    check(lambda: table.delete(pc.field("v") == 2), "v", kind == "append")
    check(lambda: table.update(pc.field("v") == 1, {"v": 7}), "v", True)
    source = pa.table({"k": [12, 1, 5], "p": ["a"] * 3, "v": [30, 31, 32]}, schema=SCHEMA)
    check(lambda: table.merge(source, on=["k"]).when_matched_update_all().execute(), "k", True)
    assert sorted(table.read().column("v").to_pylist()) == [0, 7, 10, 10, 10, 10, 30]


def test_a_copy_on_write_rewrite_holds_at_most_one_file_per_worker(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Eight files, every one touched, two workers: a file is held from its first read until
    its rewritten rows are written, and never more than two files at once (the rewrite
    streams; it does not read every touched file first)."""
    monkeypatch.setattr(lakeops.parallel, "available_cores", lambda: 2)
    table = _table(catalog, "append")
    for i in range(8):
        table.write(pa.table({"k": [2 * i, 2 * i + 1], "p": ["a"] * 2, "v": [i, i]}, schema=SCHEMA))
    lock = threading.Lock()
    held: set[str] = set()
    current: dict[int, str] = {}
    most = [0]
    real_read = AppendFileReader.read

    def read(self: AppendFileReader, directory: str, f: Any, columns: Any) -> pa.Table:
        with lock:
            held.add(f.file_name)
            current[threading.get_ident()] = f.file_name
            most[0] = max(most[0], len(held))
        return real_read(self, directory, f, columns)

    monkeypatch.setattr(AppendFileReader, "read", read)
    real_write = table.new_write

    def new_write(**kwargs: Any) -> Any:
        writer = real_write(**kwargs)
        prepare = writer.prepare_commit

        def prepared() -> Any:
            out = prepare()
            with lock:
                held.discard(current.get(threading.get_ident(), ""))
            return out

        writer.prepare_commit = prepared
        return writer

    table.new_write = new_write  # type: ignore[method-assign]
    assert table.delete(pc.field("k").isin(list(range(0, 16, 2)))).deleted == 8
    assert 1 <= most[0] <= 2
    assert sorted(table.read().column("k").to_pylist()) == list(range(1, 16, 2))


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_target_row_matched_twice_writes_nothing(
    catalog: Catalog, warehouse: Path, kind: str
) -> None:
    table = _table(catalog, kind)
    for i in range(4):
        table.write(pa.table({"k": [i], "p": ["a"], "v": [i]}, schema=SCHEMA))
    before = _files(warehouse)
    source = pa.table({"k": [0, 2, 2, 7], "p": ["a"] * 4, "v": [5, 6, 7, 8]}, schema=SCHEMA)
    merge = table.merge(source, on=["k"]).when_matched_update_all().when_not_matched_insert_all()
    with pytest.raises(DataValidationError, match="several source rows"):
        merge.execute()
    assert _files(warehouse) == before
    assert sorted(table.read().column("v").to_pylist()) == [0, 1, 2, 3]
