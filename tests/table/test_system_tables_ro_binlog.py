"""``$ro`` and ``$binlog`` against plain models of what the test wrote.

``ro`` (Paimon's ``ReadOptimizedTable``): the rows of a primary-key table's files at the top
level (``num-levels - 1``) only — the state each bucket's latest full compaction left, with the
snapshot's deletion vectors applied where the table has them; an append table's is the table.
``binlog`` (Paimon's ``BinlogTable``): a snapshot's read is the audit log (each key's last
record, retractions kept until a full compaction) with every value as an array of one; a
stream of changes packs each ``-U`` with the row after it (``PackChangelogReader``)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from lakeops import AppendTable, Catalog, Table
from lakeops.errors import ConfigurationError
from lakeops.table.system_tables import (
    SYSTEM_TABLES,
    binlog_of_changes,
    system_table_schema,
)

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), False),
        pa.field("dt", pa.string(), False),
        ("v", pa.string()),
        ("op", pa.string()),
    ]
)
Model = dict[tuple[int, str], dict[str, Any]]


def _records(ids: list[int], tag: str, ops: list[str] | None = None, pad: int = 0) -> pa.Table:
    return pa.table(
        {
            "id": ids,
            "dt": ["a" if i % 2 else "b" for i in ids],
            "v": [f"{tag}{i}" + "." * pad for i in ids],
            "op": ops or ["+I"] * len(ids),
        },
        schema=SCHEMA,
    )


def _compacted(t: Table) -> pa.Table:
    """A large first state, fully compacted: every bucket's top-level files dwarf the later
    small level-0 files, so lifting those (flush_level0) stops at a middle level rather than
    merging into the top (universal compaction's size ratio)."""
    a = _records(list(range(400)), "a", pad=200)
    t.write(a)
    t.compact(full=True)
    assert _levels(t) == {5}
    return a


def _apply(model: Model, batch: pa.Table) -> None:
    """The merged state after ``batch`` (deduplicate: the last record of a key wins; a
    retraction removes the key)."""
    for r in batch.to_pylist():
        key = (r["id"], r["dt"])
        if r["op"] in ("-D", "-U"):
            model.pop(key, None)
        else:
            model[key] = r


def _sorted(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: (r["id"], r["dt"]))


def _table(catalog: Catalog, **options: str) -> Table:
    t = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["id", "dt"],
        partition_keys=["dt"],
        options={"bucket": "2", "rowkind.field": "op", **options},
    )
    assert isinstance(t, Table)
    return t


def _ro(t: Table, snapshot_id: int | None = None) -> list[dict[str, Any]]:
    got = t.metadata_table("ro", snapshot_id=snapshot_id)
    assert got.schema == t.arrow_schema
    # the read-optimized read mode returns the same rows, whole and streamed
    read = t.read(snapshot_id=snapshot_id, mode="read-optimized")
    streamed = list(t.to_batches(snapshot_id=snapshot_id, mode="read-optimized", batch_rows=1))
    assert _sorted(read.to_pylist()) == _sorted(got.to_pylist())
    assert _sorted([r for b in streamed for r in b.to_pylist()]) == _sorted(got.to_pylist())
    return _sorted(got.to_pylist())


def _levels(t: Table) -> set[int]:
    return set(t.metadata_table("files").column("level").to_pylist())


# -------------------------------------------------------------------------------------- ro
def test_ro_is_what_the_top_level_holds(catalog: Catalog) -> None:
    t = _table(catalog)
    assert _ro(t) == []
    t.write(_records([1, 2], "z"))
    assert _ro(t) == []  # everything at level 0: nothing is readable without merging yet
    compacted: Model = {}
    a = _compacted(t)
    _apply(compacted, a)
    after_full = t.store.latest_snapshot_id()
    # updates, new keys and a deletion land in level 0 (and, flushed, in a middle level):
    # invisible to ro until a full compaction
    b = _records([1, 2, 20, 21], "b", ["+U", "+I", "+I", "+I"])
    c = _records([3, 4], "c", ["-D", "+U"])
    t.write(b)
    t.flush_level0()
    t.write(c)
    assert _levels(t) == {0, 4, 5}  # level 0, a middle level, the top
    assert _ro(t) == _sorted(list(compacted.values()))
    merged = dict(compacted)
    for batch in (b, c):
        _apply(merged, batch)
    assert _sorted(t.read().to_pylist()) == _sorted(list(merged.values()))
    assert _ro(t) != _sorted(t.read().to_pylist())  # only the compacted state
    # the next full compaction publishes everything
    t.compact(full=True)
    assert _ro(t) == _sorted(list(merged.values()))
    # snapshot_id: the top level of that snapshot
    assert _ro(t, after_full) == _sorted(list(compacted.values()))
    assert catalog.metadata_table("db.t$ro").equals(t.metadata_table("ro"))


def test_read_optimized_mode_takes_columns_and_filters(catalog: Catalog) -> None:
    t = _table(catalog)
    a = _compacted(t)
    t.write(_records([1, 2], "later"))  # level 0: not in the read-optimized read
    expected: Model = {}
    _apply(expected, a)
    wanted = sorted(r["id"] for r in expected.values() if r["id"] >= 2)
    got = t.read(columns=["id", "v"], filter=pa.compute.field("id") >= 2, mode="read-optimized")
    assert got.column_names == ["id", "v"]
    assert sorted(got.column("id").to_pylist()) == wanted
    assert not any(v.startswith("later") for v in got.column("v").to_pylist())
    assert "later2" in t.read().column("v").to_pylist()
    with pytest.raises(ConfigurationError, match=r"unknown read mode 'fast'.*read-optimized"):
        t.scan(mode="fast")  # type: ignore[arg-type]


def test_ro_reads_the_top_level_through_deletion_vectors(catalog: Catalog) -> None:
    """With deletion vectors, a key written again loses its top-level row to a vector as soon
    as its new record is compacted out of level 0: ro then holds the compacted keys nothing
    rewrote since."""
    t = _table(catalog, **{"deletion-vectors.enabled": "true"})
    a = _compacted(t)
    b = _records([1, 2, 30], "b", ["+U", "-D", "+I"])
    t.write(b)
    t.flush_level0()
    assert _levels(t) == {4, 5}
    touched = {(r["id"], r["dt"]) for r in b.to_pylist()}
    expected: Model = {}
    _apply(expected, a)
    kept = [r for k, r in expected.items() if k not in touched]
    assert _ro(t) == _sorted(kept)
    assert len(t.metadata_table("files").filter(pa.compute.field("level") == 5)) > 0


def test_ro_and_binlog_of_an_append_table_are_its_rows(catalog: Catalog) -> None:
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    t = catalog.create_table("db.a", schema=schema)
    assert isinstance(t, AppendTable)
    t.write(pa.table({"id": [1, 2], "v": ["x", None]}, schema=schema))
    t.write(pa.table({"id": [3], "v": ["y"]}, schema=schema))
    assert t.metadata_table("ro").equals(t.read())
    assert t.read(mode="read-optimized").equals(t.read())
    assert t.metadata_table("ro", snapshot_id=1).num_rows == 2
    binlog = t.metadata_table("binlog")
    assert binlog.schema == system_table_schema("binlog", t.schema)
    assert sorted(binlog.to_pylist(), key=lambda r: r["id"]) == [
        {"rowkind": "+I", "id": [1], "v": ["x"]},
        {"rowkind": "+I", "id": [2], "v": [None]},
        {"rowkind": "+I", "id": [3], "v": ["y"]},
    ]
    for name in ("ro", "binlog"):
        assert catalog.metadata_table(f"db.a${name}").equals(t.metadata_table(name))


# ----------------------------------------------------------------------------------- binlog
def test_binlog_schema_is_arrays_of_each_column(catalog: Catalog) -> None:
    t = _table(catalog)
    schema = system_table_schema("binlog", t.schema)
    assert schema.names == ["rowkind", "id", "dt", "v", "op"]
    assert schema.field("rowkind").type == pa.string() and schema.field("rowkind").nullable
    for f in SCHEMA:
        got = schema.field(f.name)
        assert got.nullable and got.type == pa.list_(pa.field("element", f.type, True))
    assert set(SYSTEM_TABLES) >= {"ro", "binlog", "consumers"}
    with pytest.raises(ConfigurationError, match="depends on the table's schema"):
        system_table_schema("binlog")


def test_binlog_of_a_snapshot_is_each_keys_last_record_as_arrays(catalog: Catalog) -> None:
    """Model: per key, the last record written, with its kind (retractions included until a
    full compaction drops them); each value an array of one."""
    t = _table(catalog)
    batches = [
        _records([1, 2, 3, 4], "a"),
        _records([2, 3, 5], "b", ["+U", "-D", "+I"]),
        _records([4, 6], "c", ["-U", "+I"]),
    ]
    last: Model = {}
    for i, batch in enumerate(batches, 1):
        t.write(batch)
        last.update({(r["id"], r["dt"]): r for r in batch.to_pylist()})
        binlog = t.metadata_table("binlog")
        assert binlog.schema == system_table_schema("binlog", t.schema)
        expected = [
            {"rowkind": r["op"], **{k: [r[k]] for k in SCHEMA.names}} for r in last.values()
        ]
        key = lambda r: (r["id"][0], r["dt"][0])  # noqa: E731
        assert sorted(binlog.to_pylist(), key=key) == sorted(expected, key=key), i
    # an earlier snapshot; and the retractions go with a full compaction
    assert t.metadata_table("binlog", snapshot_id=1).num_rows == 4
    t.compact(full=True)
    kinds = t.metadata_table("binlog").column("rowkind").to_pylist()
    assert sorted(kinds) == ["+I", "+I", "+I", "+U"]  # 1, 5, 6 and the updated 2


def _packed(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """PackChangelogReader, row by row: a -U takes the next row (if any) as its after-image,
    the pair has the second row's kind; any other row stands alone."""
    out: list[dict[str, Any]] = []
    i = 0
    while i < len(rows):
        first = rows[i]
        names = [k for k in first if k != "_row_kind"]
        if first["_row_kind"] == "-U" and i + 1 < len(rows):
            second = rows[i + 1]
            pair = {k: [first[k], second[k]] for k in names}
            out.append({"rowkind": second["_row_kind"], **pair})
            i += 2
        else:
            out.append({"rowkind": first["_row_kind"], **{k: [first[k]] for k in names}})
            i += 1
    return out


def test_binlog_of_changes_packs_each_update(catalog: Catalog) -> None:
    """The stream form: updates written as -U/+U pairs (an input changelog keeps them as
    written) come out one row each, [before, after]; inserts and deletes alone."""
    t = _table(catalog, **{"changelog-producer": "input", "bucket": "1"})
    t.write(_records([1, 2, 3], "a"))
    t.write(
        pa.table(
            {
                "id": [1, 1, 3, 4],
                "dt": ["a", "a", "a", "b"],
                "v": ["a1", "b1", "a3", "b4"],
                "op": ["-U", "+U", "-D", "+I"],
            },
            schema=SCHEMA,
        )
    )
    changes = t.read_changes(1)
    packed = binlog_of_changes(changes)
    assert packed.to_pylist() == _packed(changes.to_pylist())
    kinds = packed.column("rowkind").to_pylist()
    assert sorted(kinds) == ["+I", "+U", "-D"]  # the update is one row
    update = next(r for r in packed.to_pylist() if r["rowkind"] == "+U")
    assert update["v"] == ["a1", "b1"] and update["id"] == [1, 1]


@pytest.mark.parametrize(
    "kinds",
    [
        [],
        ["-U"],
        ["-U", "+U"],
        ["-U", "-U", "+U"],
        ["-U", "-U", "-U", "+U", "+I"],
        ["+I", "-U", "-D", "-U"],
        ["-D", "+I", "-U", "+U", "-U", "+U", "+U"],
    ],
)
def test_binlog_of_changes_follows_pack_changelog_reader(kinds: list[str]) -> None:
    changes = pa.table(
        {
            "_row_kind": pa.array(kinds, pa.string()),
            "id": pa.array(range(len(kinds)), pa.int64()),
            "v": pa.array([None if i % 3 == 0 else str(i) for i in range(len(kinds))], pa.string()),
        }
    )
    packed = binlog_of_changes(changes)
    assert packed.to_pylist() == _packed(changes.to_pylist())
    assert packed.schema.names == ["rowkind", "id", "v"]
    # whatever the chunking of the input
    chunked = pa.concat_tables([changes.slice(0, len(kinds) // 2), changes.slice(len(kinds) // 2)])
    assert binlog_of_changes(chunked).equals(packed)
