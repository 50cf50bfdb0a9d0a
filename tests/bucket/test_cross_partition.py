"""Cross-partition upserts (bucket = -1, primary key without every partition field): a key lives
in exactly one partition, and a record arriving in another partition is resolved by the merge
engine as Paimon does. Checked against a per-record reference model."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakeops import Catalog, Table
from lakeops.errors import ConfigurationError, DataValidationError

SCHEMA = pa.schema(
    [
        ("user_id", pa.int64()),
        ("city", pa.string()),
        ("name", pa.string()),
        ("score", pa.int64()),
        ("op", pa.string()),
    ]
)
ENGINES = {
    "deduplicate": {},
    "first-row": {"merge-engine": "first-row"},
    "partial-update": {"merge-engine": "partial-update"},
    "aggregation": {"merge-engine": "aggregation", "fields.score.aggregate-function": "sum"},
}


def _table(catalog: Catalog, engine: str, name: str = "db.users", **options: str) -> Table:
    return catalog.create_table(
        name,
        schema=SCHEMA,
        primary_keys=["user_id"],
        partition_keys=["city"],
        options={
            "bucket": "-1",
            "rowkind.field": "op",
            "dynamic-bucket.target-row-num": "2",
            **ENGINES[engine],
            **options,
        },
    )


def _batch(records: list[tuple]) -> pa.Table:
    cols = list(zip(*records, strict=True)) if records else [[]] * 5
    return (
        pa.table(
            {"op": cols[0], "user_id": cols[1], "city": cols[2], "name": cols[3], "score": cols[4]}
        )
        .select(SCHEMA.names)
        .cast(SCHEMA)
    )


def model(batches: list[list[tuple]], engine: str) -> dict[int, tuple[str, Any, Any]]:
    """Paimon's semantics one record at a time: user_id -> (city, name, score)."""
    state: dict[int, tuple[str, Any, Any]] = {}
    for batch in batches:
        for op, uid, city, name, score in batch:
            old = state.get(uid)
            if engine == "deduplicate":
                if op == "-D":
                    state.pop(uid, None)
                else:
                    state[uid] = (city, name, score)
            elif engine == "first-row":
                if old is None:
                    state[uid] = (city, name, score)
            elif engine == "partial-update":
                if old is None:
                    state[uid] = (city, name, score)
                else:
                    state[uid] = (
                        old[0],
                        name if name is not None else old[1],
                        score if score is not None else old[2],
                    )
            else:  # aggregation: sum(score), last non-null name
                if old is None:
                    state[uid] = (city, name, score)
                else:
                    total = (
                        old[2] if score is None else (score if old[2] is None else old[2] + score)
                    )
                    state[uid] = (old[0], name if name is not None else old[1], total)
    return state


def _state(table: Table) -> dict[int, tuple[str, Any, Any]]:
    rows = table.read(columns=["user_id", "city", "name", "score"]).to_pylist()
    out: dict[int, tuple[str, Any, Any]] = {}
    for r in rows:
        assert r["user_id"] not in out, f"user {r['user_id']} is in two partitions"
        out[r["user_id"]] = (r["city"], r["name"], r["score"])
    return out


def test_a_user_who_moves_is_in_exactly_one_partition(catalog: Catalog) -> None:
    table = _table(catalog, "deduplicate")
    table.write(_batch([("+I", 1, "paris", "ann", 10), ("+I", 2, "rome", "bob", 20)]))
    move = _batch([("+I", 1, "oslo", "ann", 11)])
    table.write(move)
    assert _state(table) == {1: ("oslo", "ann", 11), 2: ("rome", "bob", 20)}
    assert table.read(filter=[("city", "=", "paris")]).num_rows == 0  # retracted
    # the retraction is a -D record in paris' bucket
    paris = [s for s in table.splits() if s.partition == ("paris",)]
    assert paris and sum(f.row_count for s in paris for f in s.files) == 2
    snapshots = len(table.snapshots())
    table.write(move)  # the same batch again: idempotent
    assert _state(table) == {1: ("oslo", "ann", 11), 2: ("rome", "bob", 20)}
    assert len(table.snapshots()) == snapshots + 1


@pytest.mark.parametrize("producer", ["none", "lookup"])
def test_a_user_who_moves_back_on_a_deletion_vector_table_is_in_one_partition(
    catalog: Catalog, producer: str
) -> None:
    """On a deletion-vector table the -D a move writes into the old partition is compacted
    into a vector of the old file; the key index of the next write must read the files with
    their vectors, or it finds the user still in the old partition and a move back there
    leaves the newer partition's row in place (two rows)."""
    table = _table(
        catalog,
        "deduplicate",
        **{"deletion-vectors.enabled": "true", "changelog-producer": producer},
    )
    # (the old partition sorts first: the index found the user there, in its vector-deleted
    # row, before it found the live one)
    table.write(_batch([("+I", 1, "amsterdam", "ann", 10), ("+I", 2, "amsterdam", "bob", 20)]))
    table.write(_batch([("+I", 1, "oslo", "ann", 11)]))  # amsterdam's row: deleted by a vector
    table.write(_batch([("+I", 1, "amsterdam", "ann", 12)]))  # back: oslo's row must go
    assert _state(table) == {1: ("amsterdam", "ann", 12), 2: ("amsterdam", "bob", 20)}
    assert table.read().num_rows == 2


def test_first_row_keeps_the_first(catalog: Catalog) -> None:
    table = _table(catalog, "first-row")
    table.write(_batch([("+I", 1, "paris", "ann", 10)]))
    table.write(_batch([("+I", 1, "oslo", "ann", 11), ("+I", 2, "oslo", "cy", 5)]))
    table.flush_level0()  # first-row reads need level 0 flushed
    assert _state(table) == {1: ("paris", "ann", 10), 2: ("oslo", "cy", 5)}


@pytest.mark.parametrize("engine", ["partial-update", "aggregation"])
def test_merging_engines_merge_into_the_old_partition(catalog: Catalog, engine: str) -> None:
    table = _table(catalog, engine)
    table.write(_batch([("+I", 1, "paris", "ann", 10)]))
    table.write(_batch([("+I", 1, "oslo", None, 5)]))
    expected = 5 if engine == "partial-update" else 15
    assert _state(table) == {1: ("paris", "ann", expected)}
    assert table.read(filter=[("city", "=", "oslo")]).num_rows == 0


@pytest.mark.parametrize("engine", list(ENGINES))
def test_a_partition_overwrite_refuses_keys_that_live_in_a_kept_partition(
    catalog: Catalog, engine: str
) -> None:
    """A static partition overwrite replaces only its partitions: a written key that lives in
    another one would live twice (Paimon's commit refuses the retraction it would need there),
    so the write is refused before anything is written; keys of the replaced partitions, new
    keys and whole-table overwrites are fine."""
    table = _table(catalog, engine)
    table.write(_batch([("+I", 1, "paris", "ann", 10), ("+I", 2, "rome", "bob", 20)]))
    before = table.latest_snapshot()
    with pytest.raises(DataValidationError, match="live in partitions it does not replace"):
        table.write(_batch([("+I", 2, "paris", "bob", 21)]), overwrite=[{"city": "paris"}])
    assert table.latest_snapshot() == before
    assert _state(table) == {1: ("paris", "ann", 10), 2: ("rome", "bob", 20)}
    # the replaced partition's own keys and new keys
    table.write(
        _batch([("+I", 1, "paris", "ann", 11), ("+I", 3, "paris", "cy", 30)]),
        overwrite=[{"city": "paris"}],
    )
    assert _state(table) == {
        1: ("paris", "ann", 11),
        2: ("rome", "bob", 20),
        3: ("paris", "cy", 30),
    }
    # both partitions replaced: the key may change partition
    table.write(
        _batch([("+I", 2, "paris", "bob", 22)]), overwrite=[{"city": "paris"}, {"city": "rome"}]
    )
    assert _state(table) == {2: ("paris", "bob", 22)}
    table.write(_batch([("+I", 4, "oslo", "di", 40)]), overwrite=True)
    assert _state(table) == {4: ("oslo", "di", 40)}


def test_sequence_field_is_refused(catalog: Catalog) -> None:
    with pytest.raises(ConfigurationError, match="cross-partition"):
        _table(catalog, "deduplicate", **{"sequence.field": "score"})


_record = st.tuples(
    st.sampled_from(["+I", "+I", "+I", "-D"]),
    st.integers(0, 6),
    st.sampled_from(["a", "b", "c"]),
    st.one_of(st.none(), st.sampled_from(["x", "y"])),
    st.one_of(st.none(), st.integers(0, 9)),
)


@pytest.mark.parametrize("engine", sorted(ENGINES))
@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(batches=st.lists(st.lists(_record, min_size=1, max_size=12), min_size=1, max_size=4))
def test_matches_the_reference_model(tmp_path_factory, engine: str, batches) -> None:
    if engine != "deduplicate":  # deletes only make sense for deduplicate here
        batches = [[("+I", *r[1:]) for r in b] for b in batches]
    catalog = Catalog(str(tmp_path_factory.mktemp("wh")))
    catalog.create_database("db")
    table = _table(catalog, engine)
    for batch in batches:
        table.write(_batch(batch))
    if engine == "first-row":
        table.flush_level0()
    assert _state(table) == model(batches, engine)


def test_index_ttl_skips_old_keys_as_paimon_warns(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``cross-partition-upsert.index-ttl`` the bootstrap skips splits whose files are all
    older than the TTL: their keys are unknown to the index, so a move duplicates them."""
    import time

    table = _table(catalog, "deduplicate", **{"cross-partition-upsert.index-ttl": "1 min"})
    table.write(_batch([("+I", 1, "paris", "ann", 10)]))
    real = time.time
    with monkeypatch.context() as later:  # the next write runs two minutes later
        later.setattr(time, "time", lambda: real() + 120)
        table.write(_batch([("+I", 1, "oslo", "ann", 11)]))
    cities = sorted(r["city"] for r in table.read(columns=["user_id", "city"]).to_pylist())
    assert cities == ["oslo", "paris"]


def test_a_null_partition_value_is_a_partition_like_any_other(catalog: Catalog) -> None:
    table = _table(catalog, "deduplicate")
    table.write(_batch([("+I", 1, None, "ann", 10), ("+I", 2, "rome", "bob", 20)]))
    table.write(_batch([("+I", 1, "oslo", "ann", 11), ("+I", 2, None, "bob", 21)]))
    assert _state(table) == {1: ("oslo", "ann", 11), 2: (None, "bob", 21)}
