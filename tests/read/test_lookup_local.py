"""Local lookup files (:mod:`lakeops.read.lookup_local`): the first lookup of a data file builds
its local file, later lookups (of this process, of a fresh one) search it without reading the
data file; whatever state the local files are in — present, truncated, garbage, another file's,
evicted, turned off — every lookup returns exactly a plain model's rows (a dict of the rows
written)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from lakeops import Catalog, Table
from lakeops.format.schema_change import SetOption
from lakeops.kv.reader import KeyValueReader
from lakeops.read import lookup_files, lookup_local
from lakeops.read.lookup_files import UNIT_CACHE
from lakeops.read.lookup_local import LOCAL_FILES

SCHEMA = pa.schema(
    [
        pa.field("k", pa.string(), False),
        pa.field("id", pa.int64(), False),
        ("v", pa.int64()),
        ("s", pa.string()),
        ("op", pa.string()),
    ]
)


@pytest.fixture(autouse=True)
def fresh_process() -> Iterator[None]:
    """No local file opened and no unit cached by an earlier test."""
    LOCAL_FILES.clear()
    UNIT_CACHE.clear()
    yield
    LOCAL_FILES.clear()
    UNIT_CACHE.clear()


def _table(catalog: Catalog, local: Path, keys: list[str], **options: str) -> Table:
    return catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=keys,
        options={
            "bucket": "2",
            "rowkind.field": "op",
            "deletion-vectors.enabled": "true",
            "lakeops.lookup.local-dir": str(local),
            **options,
        },
    )


def _written(table: Table, keys: list[str], seed: int = 3) -> dict[tuple[Any, ...], dict]:
    """Inserts, then updates, deletes and re-inserts in later commits; the model by key."""
    rng = random.Random(seed)
    model: dict[tuple[Any, ...], dict] = {}
    batches = [[{"k": f"k{i % 3}", "id": i, "v": i, "s": f"s{i}", "op": "+I"} for i in range(600)]]
    for _ in range(3):
        rows = []
        for i in rng.sample(range(700), 120):
            op = rng.choice(["+I", "+U", "-D"])
            rows.append({"k": f"k{i % 3}", "id": i, "v": rng.randrange(10**6), "s": "t", "op": op})
        batches.append(rows)
    for rows in batches:
        table.write(pa.Table.from_pylist(rows, schema=SCHEMA))
        for r in rows:
            key = tuple(r[k] for k in keys)
            if r["op"] == "-D":
                model.pop(key, None)
            else:
                model[key] = dict(r)
    table.flush_level0()
    return model


def _asks(seed: int) -> list[list[int]]:
    rng = random.Random(seed)
    return [[0, 599, 650, 699, 700, -1], rng.sample(range(-5, 720), 40), list(range(-5, 720))]


def _check(
    table: Table, model: dict[tuple[Any, ...], dict], keys: list[str], ids: list[int]
) -> None:
    asked = pa.table({"k": [f"k{i % 3}" for i in ids], "id": pa.array(ids, pa.int64())})
    got = table.lookup(asked.select(keys))
    rows = got.to_pylist()
    found = {tuple(r[k] for k in keys): r for r in rows}
    assert len(found) == len(rows)
    wanted = {tuple(r[k] for k in keys) for r in asked.to_pylist()}
    assert found == {key: model[key] for key in wanted if key in model}


def _altered(catalog: Catalog, table: Table, options: dict[str, str]) -> Table:
    """``table`` with ``options`` set (an ALTER), read afresh."""
    table.alter([SetOption(k, v) for k, v in options.items()])
    return catalog.get_table("db.t")


def _local_files(local: Path) -> list[Path]:
    return sorted(local.glob("*.lookup.arrow"))


@pytest.mark.parametrize("keys", [["id"], ["k", "id"]])
def test_lookups_build_local_files_once_and_then_only_search_them(
    catalog: Catalog, tmp_path: Path, keys: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    local = tmp_path / "local"
    table = _table(catalog, local, keys)
    model = _written(table, keys)
    built = LOCAL_FILES.built
    _check(table, model, keys, _asks(1)[0])
    _check(table, model, keys, list(range(-5, 720)))  # every file
    LOCAL_FILES.settle()  # built ones are written in the background
    files = _local_files(local)
    assert files and LOCAL_FILES.built - built == len(files)
    assert oct(local.stat().st_mode & 0o777) == "0o700"
    # a fresh process: no data file is read, units or whole
    LOCAL_FILES.clear()
    UNIT_CACHE.clear()

    def refuse(*_: Any) -> Any:
        raise AssertionError("a data file was read although its local file exists")

    monkeypatch.setattr(KeyValueReader, "read", refuse)
    monkeypatch.setattr(KeyValueReader, "read_unit_columns", refuse)
    for ids in _asks(2):
        _check(table, model, keys, ids)
    assert _local_files(local) == files


def test_a_fresh_process_uses_the_local_files_another_built(
    catalog: Catalog, tmp_path: Path
) -> None:
    local = tmp_path / "local"
    table = _table(catalog, local, ["id"])
    model = _written(table, ["id"])
    _check(table, model, ["id"], [1, 2, 3])
    ids = _asks(5)[1]
    script = (
        "import json, sys, pyarrow as pa\n"
        "from lakeops import Catalog\n"
        "from lakeops.read.lookup_local import LOCAL_FILES\n"
        "t = Catalog(sys.argv[1]).get_table('db.t')\n"
        "got = t.lookup(pa.table({'id': pa.array(json.loads(sys.argv[2]), pa.int64())}))\n"
        "print(json.dumps([LOCAL_FILES.built, LOCAL_FILES.opened, got.to_pylist()]))\n"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            script,
            str(table.store.root).rsplit("/db.db", 1)[0],
            json.dumps(ids),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    built, opened, rows = json.loads(done.stdout.strip().splitlines()[-1])
    assert built == 0 and opened > 0
    assert {r["id"]: r for r in rows} == {i: model[(i,)] for i in ids if (i,) in model}


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty", "another file's"])
def test_damaged_or_foreign_local_files_are_rebuilt(
    catalog: Catalog, tmp_path: Path, damage: str
) -> None:
    local = tmp_path / "local"
    table = _table(catalog, local, ["id"])
    model = _written(table, ["id"])
    _check(table, model, ["id"], list(range(-5, 720)))
    LOCAL_FILES.settle()
    files = _local_files(local)
    assert len(files) >= 2
    contents = [path.read_bytes() for path in files]
    for i, path in enumerate(files):
        data = contents[i]
        if damage == "truncated":
            path.write_bytes(data[: len(data) // 2])
        elif damage == "garbage":
            path.write_bytes(os.urandom(len(data)))
        elif damage == "empty":
            path.write_bytes(b"")
        else:  # the local file of another data file under this one's name
            path.write_bytes(contents[(i + 1) % len(files)])
    LOCAL_FILES.clear()
    built = LOCAL_FILES.built
    for ids in _asks(7):
        _check(table, model, ["id"], ids)
    assert LOCAL_FILES.built - built == len(files)
    # rebuilt whole: a further fresh start builds nothing
    LOCAL_FILES.clear()
    built = LOCAL_FILES.built
    _check(table, model, ["id"], list(range(-5, 720)))
    assert LOCAL_FILES.built == built


def test_hash_collisions_never_return_other_rows(
    catalog: Catalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every key hashed alike: every row is a candidate, the exact key check decides."""

    def one_hash(columns: list[Any], _types: list[Any]) -> np.ndarray:
        return np.zeros(len(columns[0]), dtype=np.int32)

    monkeypatch.setattr(lookup_local, "key_hashes", one_hash)
    monkeypatch.setattr(lookup_files, "key_hashes", one_hash)
    local = tmp_path / "local"
    table = _table(catalog, local, ["k", "id"])
    model = _written(table, ["k", "id"])
    for ids in _asks(9):
        _check(table, model, ["k", "id"], ids)
    LOCAL_FILES.settle()
    assert _local_files(local)


def test_retention_and_disk_budget_evict_the_least_recently_used(
    catalog: Catalog, tmp_path: Path
) -> None:
    local = tmp_path / "local"
    table = _table(catalog, local, ["id"])
    model = _written(table, ["id"])
    _check(table, model, ["id"], list(range(-5, 720)))
    LOCAL_FILES.settle()
    files = _local_files(local)
    sizes = {p: p.stat().st_size for p in files}
    # a stale file of long ago, and one abandoned half-built
    old = local / ("0" * 64 + ".lookup.arrow")
    old.write_bytes(b"x" * 10)
    tmp = local / ".build-x.tmp"
    tmp.write_bytes(b"x")
    for p in (old, tmp):
        os.utime(p, (1, 1))
    # the files used longest ago: the first ones, by modification time
    for n, p in enumerate(files):
        os.utime(p, (1_000_000 + n, 1_000_000 + n))
    budget = sum(sizes.values()) - 1  # one file too many
    for p in files[-1:]:
        p.unlink()
    LOCAL_FILES.clear()
    table = _altered(catalog, table, {"lookup.cache-max-disk-size": f"{budget} b"})
    for ids in _asks(11):
        _check(table, model, ["id"], ids)
    LOCAL_FILES.settle()
    left = _local_files(local)
    assert not old.exists() and not tmp.exists()
    assert files[0] not in left and files[-1] in left  # least recently used went first
    assert sum(p.stat().st_size for p in left) <= budget


def test_local_files_turned_off_or_in_an_unsafe_directory_are_not_used(
    catalog: Catalog, tmp_path: Path
) -> None:
    local = tmp_path / "local"
    table = _table(catalog, local, ["id"], **{"lookup.cache-max-disk-size": "0 b"})
    model = _written(table, ["id"])
    for ids in _asks(13):
        _check(table, model, ["id"], ids)
    assert not local.exists()
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    table = _altered(
        catalog,
        table,
        {"lookup.cache-max-disk-size": "1 gb", "lakeops.lookup.local-dir": str(shared)},
    )
    for ids in _asks(13):
        _check(table, model, ["id"], ids)
    assert not _local_files(shared)


def test_float_keys_keep_the_unit_path(catalog: Catalog, tmp_path: Path) -> None:
    local = tmp_path / "local"
    schema = pa.schema([pa.field("x", pa.float64(), False), ("v", pa.int64())])
    table = catalog.create_table(
        "db.f",
        schema=schema,
        primary_keys=["x"],
        options={"bucket": "1", "lakeops.lookup.local-dir": str(local)},
    )
    values = [float("nan"), -1.5, 0.0, 2.5, float("inf")]
    table.write(pa.table({"x": values, "v": list(range(5))}, schema=schema))
    got = table.lookup(pa.table({"x": [float("nan"), 2.5, 7.0]}))
    assert sorted(got.column("v").to_pylist()) == [0, 3]
    assert not _local_files(local)


@pytest.mark.parametrize("sought", [0, 1, 5, 40, 300, 2000])
def test_candidates_are_every_row_whose_hash_is_sought(sought: int) -> None:
    """Few sought hashes are listed, many mark the rows (``DENSE``): both give every row
    whose hash is sought, once, in position order — against a plain model, with hashes that
    repeat within the file and among the sought."""
    rng = np.random.default_rng(sought)
    rows = 1000
    row_hashes = rng.integers(-50, 400, rows).astype(np.int32)
    order = np.argsort(row_hashes, kind="stable")
    local = lookup_local.LocalFile(
        Path("unused"), pa.table({"x": np.arange(rows)}), row_hashes[order], order, 0.0
    )
    asked = rng.integers(-60, 420, sought).astype(np.int32)
    got = local.candidates(asked)
    wanted = set(asked.tolist())
    assert got.tolist() == [i for i, h in enumerate(row_hashes.tolist()) if h in wanted]


def test_a_local_file_that_cannot_be_written_is_not_kept(
    catalog: Catalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full local disk: the lookup that built the records answers from them, nothing is
    kept in memory or on disk, and later lookups read the data files — every answer exact."""

    def full(*_: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(lookup_local, "_write", full)
    local = tmp_path / "local"
    table = _table(catalog, local, ["id"])
    model = _written(table, ["id"])
    for ids in _asks(15):
        _check(table, model, ["id"], ids)
        LOCAL_FILES.settle()
        assert not LOCAL_FILES._open  # no copy in memory in place of a file on disk
    assert not _local_files(local)


def test_a_process_writes_what_it_built_before_it_exits(catalog: Catalog, tmp_path: Path) -> None:
    """A process that exits right after its first lookup leaves whole local files, and so
    does a child forked after the parent built some (it writes its own, on its own thread)."""
    local = tmp_path / "local"
    table = _table(catalog, local, ["id"])
    model = _written(table, ["id"])
    script = (
        "import os, sys, pyarrow as pa\n"
        "from lakeops import Catalog\n"
        "t = Catalog(sys.argv[1]).get_table('db.t')\n"
        "t.lookup(pa.table({'id': pa.array([1], pa.int64())}))\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    t.lookup(pa.table({'id': pa.array(list(range(700)), pa.int64())}))\n"
        "    sys.exit(0)\n"
        "os.waitpid(pid, 0)\n"
    )
    warehouse = str(table.store.root).rsplit("/db.db", 1)[0]
    subprocess.run([sys.executable, "-c", script, warehouse], check=True, timeout=120)
    assert _local_files(local)
    LOCAL_FILES.clear()

    def refuse(*_: Any) -> Any:
        raise AssertionError("a data file was read although its local file exists")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(KeyValueReader, "read", refuse)
        patch.setattr(KeyValueReader, "read_unit_columns", refuse)
        _check(table, model, ["id"], list(range(-5, 720)))
