"""File locations as Paimon resolves them, between lakeops and pypaimon 2.1:
``data-file.path-directory``, ``data-file.external-paths`` (round-robin, specific-fs),
``index-file-in-data-file-dir``, ``data-file.prefix`` / ``changelog-file.prefix``.

pypaimon writes several commits, lakeops reads (against a plain model), appends, compacts,
expires and removes orphans; pypaimon reads every row back; every live file exists where the
manifests say (and where Paimon's layout puts it). And the other way: lakeops creates the table.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.errors import UnsupportedFeatureError
from lakeops.store.locations import split_uri
from tests.interop.java_oracle import normalize, run_ops
from tests.interop.oracle import oracle_create, oracle_read, oracle_write

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])


def _rows(ids: range | list[int], v: str, part: str = "a") -> pa.Table:
    ids = list(ids)
    return pa.table(
        {"dt": [part] * len(ids), "id": ids, "v": [f"{v}{i}" for i in ids]}, schema=SCHEMA
    )


class Model:
    """The plain model: the last write of each (dt, id) wins."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, int], str] = {}

    def apply(self, t: pa.Table) -> pa.Table:
        for r in t.to_pylist():
            self.rows[(r["dt"], r["id"])] = r["v"]
        return t

    def sorted(self) -> list[dict[str, object]]:
        return [{"dt": k[0], "id": k[1], "v": v} for k, v in sorted(self.rows.items())]


def _sorted(t: pa.Table) -> list[dict[str, object]]:
    return sorted(t.select(["dt", "id", "v"]).to_pylist(), key=lambda r: (r["dt"], r["id"]))


def _ext_roots(tmp: Path) -> list[str]:
    return [f"file://{tmp / 'ext1'}", f"file:{tmp / 'ext2'}"]


def _cases(tmp: Path) -> dict[str, dict[str, str]]:
    roots = _ext_roots(tmp)
    return {
        "path-directory": {"bucket": "2", "data-file.path-directory": "data"},
        "external-round-robin": {
            "bucket": "2",
            "data-file.external-paths": ",".join(roots),
            "data-file.external-paths.strategy": "round-robin",
        },
        "external-specific-fs": {
            "bucket": "2",
            "data-file.external-paths": f"{roots[0]},s3://no-such-bucket/x",
            "data-file.external-paths.strategy": "specific-fs",
            "data-file.external-paths.specific-fs": "file",
        },
        "external-and-path-directory": {
            "bucket": "2",
            "data-file.path-directory": "data",
            "data-file.external-paths": roots[1],
            "data-file.external-paths.strategy": "round-robin",
        },
        "index-in-data-dir": {"bucket": "-1", "index-file-in-data-file-dir": "true"},
        "index-in-data-dir-external": {
            "bucket": "-1",
            "index-file-in-data-file-dir": "true",
            "data-file.path-directory": "data",
            "data-file.external-paths": roots[0],
            "data-file.external-paths.strategy": "round-robin",
        },
        "prefixes": {
            "bucket": "2",
            "data-file.prefix": "dp-",
            "changelog-file.prefix": "cp-",
            "changelog-producer": "input",
        },
    }


CASES = list(_cases(Path("/x")))


def _live_paths(table: object) -> list[tuple[str, str | None, str]]:
    """(file name, external path, storage path) of every live data file and index file."""
    store = table.store  # type: ignore[attr-defined]
    loc = store.locations(table.schema)  # type: ignore[attr-defined]
    snap = store.latest_snapshot()
    out = []
    for e in store.live_entries(snap):
        path = loc.entry_path(e.partition, e.bucket, e.file.file_name, e.file.external_path)
        out.append((e.file.file_name, e.file.external_path, path))
    for ie in store.index_entries(snap):
        path = loc.index_entry_path(ie.partition, ie.bucket, ie.file)
        out.append((ie.file.file_name, dict(ie.file.extra).get("_EXTERNAL_PATH"), path))
    return out


def _check_locations(table: object, options: dict[str, str], tmp: Path, root: Path) -> None:
    live = _live_paths(table)
    assert live
    roots = [split_uri(r)[1] for r in options.get("data-file.external-paths", "").split(",") if r]
    local_roots = [r for r in roots if r.startswith("/")]
    for name, external, path in live:
        assert Path(path).is_file(), f"live file {name} is not at {path}"
        assert path.endswith("/" + name)
        if name.startswith("index-") and options.get("index-file-in-data-file-dir") != "true":
            assert path == str(root / "index" / name)
            continue
        if options.get("data-file.external-paths.strategy", "none") != "none":
            assert external is not None, f"{name} was not written to an external path"
            assert any(path.startswith(r + "/") for r in local_roots), path
            rel = path[len(next(r for r in local_roots if path.startswith(r + "/"))) + 1 :]
        else:
            assert external is None
            rel = path[len(str(root)) + 1 :]
        parts = rel.split("/")
        if options.get("data-file.path-directory"):
            assert parts[0] == options["data-file.path-directory"], rel
            parts = parts[1:]
        assert parts[0] == "dt=a" or parts[0] == "dt=b", rel
        assert parts[1].startswith("bucket-"), rel


def _maintain_and_check(table: object, options: dict[str, str], tmp: Path, root: Path) -> None:
    table.expire_snapshots(retain_min=1, retain_max=1)  # type: ignore[attr-defined]
    table.remove_orphan_files(older_than=dt.timedelta(0), force=True)  # type: ignore[attr-defined]
    _check_locations(table, options, tmp, root)


@pytest.mark.parametrize("case", CASES)
def test_lakeops_reads_appends_compacts_a_pypaimon_table(warehouse: Path, case: str) -> None:
    tmp = warehouse.parent
    options = _cases(tmp)[case]
    model = Model()
    oracle_create(warehouse, "db.p", SCHEMA, ["dt", "id"], ["dt"], options)
    oracle_write(warehouse, "db.p", model.apply(_rows(range(60), "p1-")))
    oracle_write(
        warehouse,
        "db.p",
        model.apply(pa.concat_tables([_rows(range(40, 90), "p2-"), _rows([1, 2], "b", "b")])),
    )
    catalog = Catalog(str(warehouse))
    table = catalog.get_table("db.p")
    root = warehouse / "db.db" / "p"
    assert _sorted(table.read()) == model.sorted()
    _check_locations(table, options, tmp, root)

    table.write(
        model.apply(pa.concat_tables([_rows(range(80, 120), "l1-"), _rows([2, 3], "lb", "b")]))
    )
    table.write(model.apply(_rows(range(0, 120, 9), "l2-")))
    assert _sorted(table.read()) == model.sorted()
    assert _sorted(oracle_read(warehouse, "db.p")) == model.sorted()
    _check_locations(table, options, tmp, root)

    table.compact(full=True)
    assert _sorted(table.read()) == model.sorted()
    assert _sorted(oracle_read(warehouse, "db.p")) == model.sorted()
    _check_locations(table, options, tmp, root)

    oracle_write(warehouse, "db.p", model.apply(_rows(range(100, 130), "p3-")))
    table = catalog.get_table("db.p")
    _maintain_and_check(table, options, tmp, root)
    assert _sorted(table.read()) == model.sorted()
    assert _sorted(oracle_read(warehouse, "db.p")) == model.sorted()

    if options.get("data-file.prefix"):  # lakeops names its files by the table's prefixes
        names = [n for n, _, _ in _live_paths(table)]
        assert any(n.startswith("dp-") for n in names), names


@pytest.mark.parametrize("case", CASES)
def test_pypaimon_reads_a_lakeops_table(warehouse: Path, case: str) -> None:
    tmp = warehouse.parent
    options = _cases(tmp)[case]
    model = Model()
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"], options=options
    )
    root = warehouse / "db.db" / "t"
    table.write(model.apply(pa.concat_tables([_rows(range(50), "a-"), _rows([7], "b", "b")])))
    table.write(model.apply(_rows(range(30, 70), "b-")))
    assert _sorted(oracle_read(warehouse, "db.t")) == model.sorted()
    _check_locations(table, options, tmp, root)
    table.compact(full=True)
    assert _sorted(oracle_read(warehouse, "db.t")) == model.sorted()
    oracle_write(warehouse, "db.t", model.apply(_rows(range(60, 80), "p-")))
    table = catalog.get_table("db.t")
    assert _sorted(table.read()) == model.sorted()
    _maintain_and_check(table, options, tmp, root)
    assert _sorted(oracle_read(warehouse, "db.t")) == model.sorted()
    assert _sorted(table.read()) == model.sorted()
    if case == "prefixes":
        names = [n for n, _, _ in _live_paths(table)]
        assert any(n.startswith("dp-") for n in names), names


def test_files_outside_the_named_roots_are_refused(warehouse: Path) -> None:
    """An entry's _EXTERNAL_PATH is followed only below a root the table's options name."""
    tmp = warehouse.parent
    options = _cases(tmp)["external-round-robin"]
    oracle_create(warehouse, "db.p", SCHEMA, ["dt", "id"], ["dt"], options)
    oracle_write(warehouse, "db.p", _rows(range(10), "x"))
    catalog = Catalog(str(warehouse))
    table = catalog.get_table("db.p")
    assert len(table.read()) == 10
    # the table now names a different root: the files written before lie outside it
    schema_dir = warehouse / "db.db" / "p" / "schema"
    import json

    latest = max(schema_dir.iterdir(), key=lambda p: int(p.name.split("-")[1]))
    doc = json.loads(latest.read_text())
    doc["options"]["data-file.external-paths"] = f"file://{tmp / 'elsewhere'}"
    latest.write_text(json.dumps(doc))
    table = Catalog(str(warehouse)).get_table("db.p")
    with pytest.raises(UnsupportedFeatureError, match=r"data-file\.external-paths") as err:
        table.read()
    assert "ext" in str(err.value)


def test_strategies_lakeops_cannot_write_are_refused_before_writing(warehouse: Path) -> None:
    tmp = warehouse.parent
    options = {
        "bucket": "2",
        "data-file.external-paths": _ext_roots(tmp)[0],
        "data-file.external-paths.strategy": "round-robin",
    }
    oracle_create(warehouse, "db.p", SCHEMA, ["dt", "id"], ["dt"], options)
    oracle_write(warehouse, "db.p", _rows(range(10), "x"))
    schema_dir = warehouse / "db.db" / "p" / "schema"
    import json

    latest = max(schema_dir.iterdir(), key=lambda p: int(p.name.split("-")[1]))
    doc = json.loads(latest.read_text())
    doc["options"]["data-file.external-paths.strategy"] = "entropy-inject"
    latest.write_text(json.dumps(doc))
    table = Catalog(str(warehouse)).get_table("db.p")
    assert len(table.read()) == 10  # reads follow the entries' own paths
    before = sorted(p for p in tmp.rglob("*") if p.is_file())
    with pytest.raises(UnsupportedFeatureError, match="entropy-inject"):
        table.write(_rows(range(5), "y"))
    assert sorted(p for p in tmp.rglob("*") if p.is_file()) == before


def test_java_paimon_09_reads_files_lakeops_named_by_the_table_prefixes(
    warehouse: Path, java_classpath: str
) -> None:
    """Paimon 0.9 finds data files by their manifest names, whatever their prefix."""
    options = _cases(warehouse.parent)["prefixes"]
    model = Model()
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"], options=options
    )
    table.write(model.apply(pa.concat_tables([_rows(range(40), "a-"), _rows([7], "b", "b")])))
    table.write(model.apply(_rows(range(20, 60), "b-")))
    names = [n for n, _, _ in _live_paths(table)]
    assert names and all(n.startswith("dp-") for n in names), names
    [before] = run_ops(java_classpath, warehouse, [{"op": "read", "table": "db.t"}])
    table.compact(full=True)
    [after] = run_ops(java_classpath, warehouse, [{"op": "read", "table": "db.t"}])
    want = normalize(model.sorted(), ["dt", "id"])
    assert normalize(before["rows"], ["dt", "id"]) == want
    assert normalize(after["rows"], ["dt", "id"]) == want
