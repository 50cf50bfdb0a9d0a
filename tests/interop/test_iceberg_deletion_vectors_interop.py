"""Iceberg format-version-3 metadata of deletion-vector tables, judged by pyiceberg 0.12 (which
applies the Puffin deletion vectors of the delete manifests) against a plain model, with
pypaimon 2.1 reading the same Paimon snapshots where it reads their vectors (32-bit ones), and
Java Paimon 0.9 deleting rows in between (its vectors reach Iceberg at lakeops' next commit;
Java reads the result). Every read must return the model's rows: a vector missing from the
metadata shows as a deleted row that comes back, a vector applied to the wrong file as a row
that goes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakeops import Catalog
from lakeops.format.puffin import read_puffin_footer
from tests.interop.iceberg_oracle import iceberg_read, require_pyiceberg
from tests.interop.java_oracle import run_ops
from tests.interop.oracle import oracle_read

pytestmark = pytest.mark.interop

SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), False),
        pa.field("k", pa.int64(), False),
        pa.field("v", pa.string()),
    ]
)
Row = tuple[Any, ...]
V3 = {"metadata.iceberg.storage": "table-location", "metadata.iceberg.format-version": "3"}


def _rows(table: pa.Table) -> list[Row]:
    return sorted(zip(*(table.column(c).to_pylist() for c in ("dt", "k", "v")), strict=True))


def _batch(keys: range | list[int], tag: str) -> pa.Table:
    ks = list(keys)
    return pa.table(
        {"dt": [["a", "b"][k % 2] for k in ks], "k": ks, "v": [f"{tag}-{k}" for k in ks]},
        schema=SCHEMA,
    )


def _put(model: dict[int, Row], batch: pa.Table) -> None:
    for row in _rows(batch):
        model[int(row[1])] = row


def _iceberg(meta_dir: Path) -> tuple[list[Row], dict[str, Any]]:
    hint = int((meta_dir / "version-hint.text").read_text())
    rows, info = iceberg_read(meta_dir / f"v{hint}.metadata.json")
    return _rows(rows), info


def _puffins(meta_dir: Path) -> dict[str, str]:
    """Each Puffin file of the metadata directory and the Paimon index file it copies."""
    out = {}
    for p in sorted(meta_dir.glob("*.puffin")):
        _, props = read_puffin_footer(p.read_bytes(), str(p))
        out[p.name] = props["paimon-index-file"]
    return out


@pytest.mark.parametrize("bitmap64", ["false", "true"])
def test_primary_key_vectors_reach_iceberg_through_writes_compaction_and_expiry(
    tmp_path: Path, bitmap64: str
) -> None:
    """Upserts and deletes of a deletion-vector primary-key table: each commit lifts its level
    0 and marks the rows it supersedes, so the Iceberg metadata names data files above level 0
    and their vectors; pyiceberg reads exactly the model after every commit, a full
    compaction and an expiry that retires the Puffin files of expired index files."""
    require_pyiceberg()
    catalog = Catalog(tmp_path)
    catalog.create_database("db")
    options = {
        **V3,
        "bucket": "2",
        "deletion-vectors.enabled": "true",
        "deletion-vectors.bitmap64": bitmap64,
    }
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["dt", "k"], partition_keys=["dt"], options=options
    )
    meta_dir = tmp_path / "db.db" / "t" / "metadata"
    model: dict[int, Row] = {}
    for batch in (_batch(range(40), "v1"), _batch(range(0, 40, 3), "v2")):
        table.write(batch)
        _put(model, batch)
    table.delete(pc.field("k").isin([1, 4, 11]))
    for k in (1, 4, 11):
        model.pop(k)
    rows, info = _iceberg(meta_dir)
    assert rows == sorted(model.values())
    assert _puffins(meta_dir), "the vectors reached the metadata as Puffin files"
    metadata = json.loads((meta_dir / f"v{info['current_snapshot_id']}.metadata.json").read_text())
    assert metadata["format-version"] == 3
    assert metadata["next-row-id"] >= metadata["snapshots"][-1]["added-rows"]
    if bitmap64 == "false":  # pypaimon 2.1 reads 32-bit vectors only
        assert _rows(oracle_read(tmp_path, "db.t")) == sorted(model.values())

    batch = _batch(range(35, 50, 2), "v3")
    table.write(batch)
    _put(model, batch)
    before = _puffins(meta_dir)
    table.compact(full=True)
    assert _iceberg(meta_dir)[0] == sorted(model.values())
    table.expire_snapshots(retain_min=1, retain_max=1)
    rows, info = _iceberg(meta_dir)
    assert rows == sorted(model.values())
    assert all(Path(f.removeprefix("file:")).exists() for f in info["files"])
    after = _puffins(meta_dir)
    assert all(Path(p.removeprefix("file:")).exists() for p in after.values())
    assert set(before) - set(after), "the Puffin files of expired index files went"


def test_append_table_deletes_reach_iceberg(tmp_path: Path) -> None:
    """Row-level deletes of an append table with deletion vectors (Paimon's append DELETE),
    then more rows and a second delete, then a compaction that rewrites the files without
    the deleted rows: pyiceberg reads the model each time, as pypaimon does."""
    require_pyiceberg()
    catalog = Catalog(tmp_path)
    catalog.create_database("db")
    options = {**V3, "bucket": "-1", "deletion-vectors.enabled": "true"}
    table = catalog.create_table("db.a", schema=SCHEMA, partition_keys=["dt"], options=options)
    meta_dir = tmp_path / "db.db" / "a" / "metadata"
    rows_in = [_batch(range(30), "a1"), _batch(range(30, 50), "a2")]
    model = [r for b in rows_in for r in _rows(b)]
    for batch in rows_in:
        table.write(batch)
    for gone in ([2, 3, 17, 44], [5, 45]):
        table.delete(pc.field("k").isin(gone))
        model = [r for r in model if r[1] not in gone]
        assert _iceberg(meta_dir)[0] == sorted(model)
        assert _rows(oracle_read(tmp_path, "db.a")) == sorted(model)
    assert _puffins(meta_dir)
    table.compact(full=True)
    assert _iceberg(meta_dir)[0] == sorted(model)


def test_java_09_vectors_reach_iceberg_at_lakeops_next_commit(
    tmp_path: Path, java_classpath: str
) -> None:
    """Java Paimon 0.9 deletes rows of an append table through deletion vectors (Paimon's
    append DELETE: its 32-bit vectors; it writes no format version 3 metadata of its own);
    lakeops' next commit exports Java's vectors, and pyiceberg reads the model, as Java
    does."""
    require_pyiceberg()
    catalog = Catalog(tmp_path)
    catalog.create_database("db")
    options = {**V3, "bucket": "-1", "deletion-vectors.enabled": "true"}
    table = catalog.create_table("db.j", schema=SCHEMA, partition_keys=["dt"], options=options)
    first = _batch(range(20), "l1")
    table.write(first)
    gone = [3, 4, 9, 16]
    results = run_ops(
        java_classpath,
        tmp_path,
        [
            {"op": "delete_dv", "table": "db.j", "column": "k", "values": gone},
            {"op": "read", "table": "db.j"},
        ],
    )
    model = [r for r in _rows(first) if r[1] not in gone]
    java_rows = sorted(tuple(r[c] for c in ("dt", "k", "v")) for r in results[1]["rows"])
    assert java_rows == model
    last = _batch([20, 21], "l2")
    catalog.get_table("db.j").write(last)
    model = sorted(model + _rows(last))
    assert _iceberg(tmp_path / "db.db" / "j" / "metadata")[0] == model
    # pypaimon 2.1 cannot read Java 0.9's manifests: Java judges the Paimon side
    final = run_ops(java_classpath, tmp_path, [{"op": "read", "table": "db.j"}])[0]
    assert sorted(tuple(r[c] for c in ("dt", "k", "v")) for r in final["rows"]) == model
