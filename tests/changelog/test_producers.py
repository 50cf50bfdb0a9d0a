"""Changelog producers: replaying the changelog (a plain dict replay) reproduces the table, and
for deduplicate a plain last-wins model of the commits, at every snapshot that produced one;
row-deduplicate, first-row, read modes, dedicated flushes, the lookup cache."""

from __future__ import annotations

import tempfile

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakeops import Catalog, ConfigurationError, Table
from lakeops.changelog.lookup_cache import RowGroupCache

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("w", pa.string()), ("op", pa.string())])
ENGINES = {
    "deduplicate": {},
    "partial-update": {"merge-engine": "partial-update", "ignore-delete": "true"},
    "aggregation": {
        "merge-engine": "aggregation",
        "fields.v.aggregate-function": "sum",
        "fields.w.aggregate-function": "last_value",
    },
}


def _replay(changes: pa.Table) -> list[tuple]:
    """A plain replay of changelog records, in order, into a dict: ``+I``/``+U`` set the key's
    row, ``-U``/``-D`` remove it; the rows left."""
    state: dict[int, tuple] = {}
    for r in changes.to_pylist():
        if r["_row_kind"] in ("+I", "+U"):
            state[r["id"]] = (r["id"], r["v"], r["w"])
        else:
            state.pop(r["id"], None)
    return sorted(state.values())


def _last_wins(commits: list[list[tuple]]) -> list[tuple]:
    """A plain model of a deduplicate table with a rowkind field: each key's last record, absent
    when that is a retraction."""
    state: dict[int, tuple] = {}
    for batch in commits:
        for key, v, w, op in batch:
            if op in ("+I", "+U"):
                state[key] = (key, v, w)
            else:
                state.pop(key, None)
    return sorted(state.values())


def _rows(t: pa.Table) -> list[tuple]:
    return sorted((r["id"], r["v"], r["w"]) for r in t.to_pylist())


record = st.tuples(
    st.integers(0, 15),
    st.integers(-5, 5),
    st.one_of(st.none(), st.sampled_from(["a", "b"])),
    st.sampled_from(["+I", "+U", "+U", "-D", "-U"]),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    commits=st.lists(st.lists(record, min_size=1, max_size=15), min_size=1, max_size=6),
    producer=st.sampled_from(["input", "lookup", "full-compaction", "none"]),
    engine=st.sampled_from(sorted(ENGINES)),
    buckets=st.sampled_from([1, 2]),
    formats=st.sampled_from(
        [{}, {"file.format": "avro"}, {"file.format.per.level": "0:avro", "file.format": "orc"}]
    ),
)
def test_replaying_the_changelog_gives_the_table(
    commits, producer, engine, buckets, formats
) -> None:
    if producer in ("input", "none") and engine != "deduplicate":
        engine = "deduplicate"  # input changelog holds raw records: replay needs last-wins
    with tempfile.TemporaryDirectory() as wh:
        catalog = Catalog(wh)
        catalog.create_database("db")
        table = catalog.create_table(
            "db.t",
            schema=SCHEMA,
            primary_keys=["id"],
            options={
                "bucket": str(buckets),
                "rowkind.field": "op",
                "changelog-producer": producer,
                **ENGINES[engine],
                **formats,
            },
        )
        for batch in commits:
            table.write(
                pa.Table.from_pylist(
                    [dict(zip(SCHEMA.names, r, strict=True)) for r in batch], schema=SCHEMA
                )
            )
        snapshots = table.snapshots()
        checkpoints = (
            [s.id for s in snapshots if s.changelog_manifest_list]
            if producer in ("lookup", "full-compaction")
            else [snapshots[-1].id]
        )
        for sid in checkpoints:
            replayed = _replay(table.read_changes(0, sid))
            assert replayed == _rows(table.read(snapshot_id=sid))
            if engine == "deduplicate":  # and both equal a plain model of the commits so far
                appended = sum(s.commit_kind == "APPEND" for s in snapshots if s.id <= sid)
                assert replayed == _last_wins(commits[:appended])


def _table(catalog: Catalog, name: str, **options: str) -> Table:
    return catalog.create_table(
        name,
        schema=SCHEMA,
        primary_keys=["id"],
        options={"bucket": "1", "rowkind.field": "op", **options},
    )


def _write(table: Table, rows: list[tuple]) -> None:
    table.write(
        pa.Table.from_pylist([dict(zip(SCHEMA.names, r, strict=True)) for r in rows], schema=SCHEMA)
    )


def _kinds(changes: pa.Table) -> list[tuple]:
    return [(r["_row_kind"], r["id"], r["v"]) for r in changes.to_pylist()]


def test_lookup_changelog_describes_each_change(catalog: Catalog) -> None:
    t = _table(catalog, "db.t", **{"changelog-producer": "lookup"})
    _write(t, [(1, 1, "a", "+I"), (2, 2, "b", "+I")])
    first = t.latest_snapshot().id
    _write(t, [(1, 10, "a", "+U"), (2, 2, "b", "-D"), (3, 3, "c", "+I")])
    assert _kinds(t.read_changes(first)) == [
        ("-U", 1, 1),
        ("+U", 1, 10),
        ("-D", 2, 2),
        ("+I", 3, 3),
    ]


def test_row_deduplicate_suppresses_unchanged_rows(catalog: Catalog) -> None:
    plain = _table(catalog, "db.p", **{"changelog-producer": "lookup"})
    dedup = _table(
        catalog,
        "db.d",
        **{
            "changelog-producer": "lookup",
            "changelog-producer.row-deduplicate": "true",
            # the row-kind column is an ordinary column too
            "changelog-producer.row-deduplicate-ignore-fields": "w,op",
        },
    )
    starts = {}
    for t in (plain, dedup):
        _write(t, [(1, 1, "a", "+U")])
        starts[t.identifier] = t.latest_snapshot().id
        _write(t, [(1, 1, "a", "+U")])  # the same row again
        _write(t, [(1, 1, "changed only in an ignored field", "+U")])
    assert len(plain.read_changes(starts["db.p"])) == 4  # -U/+U for both, even the same row
    assert len(dedup.read_changes(starts["db.d"])) == 0


def test_first_row_emits_inserts_for_new_keys_only(catalog: Catalog) -> None:
    t = _table(
        catalog,
        "db.f",
        **{"merge-engine": "first-row", "changelog-producer": "lookup", "ignore-delete": "true"},
    )
    _write(t, [(1, 1, "a", "+I")])
    _write(t, [(1, 2, "b", "+I"), (2, 3, "c", "+I")])
    assert _kinds(t.read_changes(0)) == [("+I", 1, 1), ("+I", 2, 3)]


def test_write_only_lookup_table_changes_appear_at_the_flush(catalog: Catalog) -> None:
    t = _table(catalog, "db.w", **{"changelog-producer": "lookup", "write-only": "true"})
    _write(t, [(1, 1, "a", "+I")])
    _write(t, [(1, 2, "a", "+U")])
    assert t.read_changes(0).num_rows == 0  # nothing compacted yet, no changelog
    snapshot = t.flush_level0()
    assert snapshot is not None and snapshot.changelog_manifest_list
    assert _kinds(t.read_changes(0)) == [("+I", 1, 2)]


def test_full_compaction_delta_commits(catalog: Catalog) -> None:
    t = _table(
        catalog,
        "db.fc",
        **{"changelog-producer": "full-compaction", "full-compaction.delta-commits": "3"},
    )
    for i in range(6):
        _write(t, [(i, i, "x", "+I")])
    kinds = [s.commit_kind for s in t.snapshots()]
    assert kinds == [
        "APPEND",
        "APPEND",
        "APPEND",
        "COMPACT",
        "APPEND",
        "APPEND",
        "APPEND",
        "COMPACT",
    ]
    assert sorted(r["id"] for r in t.read_changes(0).to_pylist()) == list(range(6))


def test_read_modes(catalog: Catalog) -> None:
    t = _table(catalog, "db.m")  # no producer
    _write(t, [(1, 1, "a", "+I"), (2, 2, "b", "+I")])
    _write(t, [(1, 5, "a", "+U")])
    _write(t, [(1, 6, "a", "+U"), (2, 2, "b", "-D"), (3, 3, "c", "+I")])
    assert _kinds(t.read_changes(1)) == [("+U", 1, 5), ("+U", 1, 6), ("-D", 2, 2), ("+I", 3, 3)]
    assert _kinds(t.read_changes(1, mode="diff")) == [
        ("-U", 1, 1),
        ("+U", 1, 6),
        ("-D", 2, 2),
        ("+I", 3, 3),
    ]
    assert t.read_changes(1, 2, mode="diff", columns=["id"]).column_names == ["_row_kind", "id"]
    assert t.read_changes(3).num_rows == 0
    with pytest.raises(ConfigurationError, match="from_snapshot"):
        t.read_changes(2, 1)
    with pytest.raises(ConfigurationError, match="changelog-producer"):
        _table(catalog, "db.bad", **{"changelog-producer": "sometimes"})


def test_row_group_cache_stays_within_budget() -> None:
    cache = RowGroupCache(budget_bytes=3_000)
    tables = {i: pa.table({"x": list(range(100))}) for i in range(5)}  # 800 bytes each
    for i in range(5):
        cache.get(("f", i), lambda i=i: tables[i])
    assert cache.size <= 3_000 and cache.misses == 5
    cache.get(("f", 4), lambda: tables[4])
    assert cache.hits == 1
    cache.get(("f", 0), lambda: tables[0])  # evicted earlier: read again
    assert cache.misses == 6
