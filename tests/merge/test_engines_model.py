"""Hypothesis: every engine, through the public API, agrees with the per-record reference.

Random records (nulls, retractions, out-of-order and multi-field sequence values, empty sequence
groups) are written in one or several commits, so merges happen in the write buffer and again
across files on read; the result must equal the reference applied to each key's records in
Paimon's order.
"""

from __future__ import annotations

import itertools
import tempfile
from collections import defaultdict
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakeops import Catalog, LakeopsError
from tests.merge import reference as ref

pytestmark = pytest.mark.slow  # 150 examples per engine: about a minute on two cores

SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

small = st.one_of(st.none(), st.integers(-3, 3))
seqv = st.one_of(st.none(), st.integers(0, 3))


def _cuts(rows: list[dict], splits: list[int]) -> list[int]:
    return sorted({0, len(rows), *[s % (len(rows) + 1) for s in splits]})


def _run(
    schema: pa.Schema, pks: list[str], options: dict[str, str], rows: list[dict], splits: list[int]
) -> dict[Any, dict]:
    """Write ``rows`` (each with an 'rk' kind) in commits cut at ``splits``; read back."""
    with tempfile.TemporaryDirectory() as wh:
        catalog = Catalog(wh)
        catalog.create_database("db")
        table = catalog.create_table(
            "db.t",
            schema=schema,
            primary_keys=pks,
            options={"bucket": "2", "rowkind.field": "rk", **options},
        )
        cuts = _cuts(rows, splits)
        for lo, hi in itertools.pairwise(cuts):
            if hi > lo:
                table.write(pa.Table.from_pylist(rows[lo:hi], schema=schema))
        names = [n for n in schema.names if n != "rk"]
        return {r["k"]: r for r in table.read(columns=names).to_pylist()}


def _merge_level(items: list[tuple[int, str, dict]], merge, order):  # type: ignore[no-untyped-def]
    """Merge (seq, kind, row) records per key in Paimon's order: {key: (seq, kind, row)}."""
    by_key: dict[Any, list[tuple[int, str, dict]]] = defaultdict(list)
    for item in items:
        by_key[item[2]["k"]].append(item)
    out = {}
    for k, recs in by_key.items():
        recs = sorted(recs, key=lambda it: ((order(it[2]) if order else 0), it[0]))
        kind, row = merge([(kind, row) for _, kind, row in recs])
        out[k] = (recs[-1][0], kind, {**row, "rk": kind})
    return out


def _expected(rows: list[dict], merge, splits: list[int], order=None) -> dict[Any, dict]:  # type: ignore[no-untyped-def]
    """The LSM as Paimon runs it: each commit's records merge in the write buffer, then a read
    merges the per-commit results of every key (a single record passes through untouched)."""
    cuts = _cuts(rows, splits)
    per_commit: list[tuple[int, str, dict]] = []
    for lo, hi in itertools.pairwise(cuts):
        batch = [(i, rows[i]["rk"], rows[i]) for i in range(lo, hi)]
        per_commit.extend(_merge_level(batch, merge, order).values())
    final = _merge_level(per_commit, merge, order)
    return {
        k: {n: v for n, v in row.items() if n != "rk"}
        for k, (_, kind, row) in final.items()
        if kind not in ref.RETRACT
    }


def _records(draw, fields: dict[str, Any], kinds: list[str]) -> list[dict]:  # type: ignore[no-untyped-def]
    n = draw(st.integers(1, 30))
    rows = []
    for _ in range(n):
        row = {"k": draw(st.integers(0, 4)), "rk": draw(st.sampled_from(kinds))}
        row.update({f: draw(s) for f, s in fields.items()})
        rows.append(row)
    return rows


# ---------------------------------------------------------------- aggregation
nonzero = st.one_of(st.none(), st.integers(1, 3), st.integers(-3, -1))  # product divides
AGG_ALL = {
    "s": ("sum", pa.int64(), small),
    "p": ("product", pa.int64(), nonzero),
    "mn": ("min", pa.int32(), small),
    "mx": ("max", pa.int32(), small),
    "lv": ("last_value", pa.int32(), small),
    "ln": ("last_non_null_value", pa.int32(), small),
    "fv": ("first_value", pa.int32(), small),
    "fn": ("first_non_null_value", pa.int32(), small),
    "la": (
        "listagg",
        pa.string(),
        st.one_of(st.none(), st.sampled_from(["a", "b", "c", "", " \t"])),
    ),
    "ba": ("bool_and", pa.bool_(), st.one_of(st.none(), st.booleans())),
    "bo": ("bool_or", pa.bool_(), st.one_of(st.none(), st.booleans())),
}
AGG_RETRACTABLE = {f: AGG_ALL[f] for f in ("s", "p", "lv", "ln")}


@SETTINGS
@given(
    data=st.data(),
    retractions=st.booleans(),
    remove_on_delete=st.booleans(),
    splits=st.lists(st.integers(0, 40), max_size=3),
)
def test_aggregation_matches_reference(data, retractions, remove_on_delete, splits) -> None:
    spec = AGG_RETRACTABLE if retractions else AGG_ALL
    kinds = ["+I", "+U", "-U", "-D"] if retractions else ["+I", "+U"]
    rows = _records(data.draw, {f: s for f, (_, _, s) in spec.items()}, kinds)
    schema = pa.schema(
        [("k", pa.int32())] + [(f, t) for f, (_, t, _) in spec.items()] + [("rk", pa.string())]
    )
    options = {"merge-engine": "aggregation"}
    options.update({f"fields.{f}.aggregate-function": fn for f, (fn, _, _) in spec.items()})
    if remove_on_delete:
        options["aggregation.remove-record-on-delete"] = "true"
    aggs = {f: ref.Agg(fn) for f, (fn, _, _) in spec.items()}
    aggs["rk"] = ref.Agg("last_non_null_value")
    expected = _expected(
        rows, lambda recs: ref.aggregation(recs, ["k"], aggs, remove_on_delete), splits
    )
    assert _run(schema, ["k"], options, rows, splits) == expected


@SETTINGS
@given(data=st.data(), splits=st.lists(st.integers(0, 40), max_size=3))
def test_aggregation_remove_on_delete_with_every_function(data, splits) -> None:
    # a -D re-initialises (initRow), it does not retract: functions without retraction work
    rows = _records(data.draw, {f: s for f, (_, _, s) in AGG_ALL.items()}, ["+I", "+U", "-D"])
    schema = pa.schema(
        [("k", pa.int32())] + [(f, t) for f, (_, t, _) in AGG_ALL.items()] + [("rk", pa.string())]
    )
    options = {"merge-engine": "aggregation", "aggregation.remove-record-on-delete": "true"}
    options.update({f"fields.{f}.aggregate-function": fn for f, (fn, _, _) in AGG_ALL.items()})
    aggs = {f: ref.Agg(fn) for f, (fn, _, _) in AGG_ALL.items()}
    aggs["rk"] = ref.Agg("last_non_null_value")
    expected = _expected(rows, lambda recs: ref.aggregation(recs, ["k"], aggs, True), splits)
    assert _run(schema, ["k"], options, rows, splits) == expected


notnull = st.integers(-3, 3)


@SETTINGS
@given(
    data=st.data(),
    engine=st.sampled_from(["aggregation", "partial-update"]),
    splits=st.lists(st.integers(0, 40), max_size=3),
)
def test_remove_on_delete_with_not_null_columns(data, engine, splits) -> None:
    rows = _records(data.draw, {"a": notnull, "b": notnull, "c": small}, ["+I", "+U", "-U", "-D"])
    schema = pa.schema(
        [
            ("k", pa.int32()),
            pa.field("a", pa.int64(), nullable=False),
            pa.field("b", pa.int32(), nullable=False),
            ("c", pa.int32()),
            ("rk", pa.string()),
        ]
    )
    fields = ["k", "a", "b", "c", "rk"]
    options = {"merge-engine": engine, f"{engine}.remove-record-on-delete": "true"}
    if engine == "aggregation":
        # NOT NULL columns need functions whose retraction keeps them non-null
        options["fields.a.aggregate-function"] = "sum"
        options["fields.b.aggregate-function"] = "sum"
        options["fields.c.aggregate-function"] = "last_value"
        aggs = {"a": ref.Agg("sum"), "b": ref.Agg("sum"), "c": ref.Agg("last_value")}
        aggs["rk"] = ref.Agg("last_non_null_value")

        def merge(recs):  # type: ignore[no-untyped-def]
            return ref.aggregation(recs, ["k"], aggs, True)
    else:

        def merge(recs):  # type: ignore[no-untyped-def]
            return ref.partial_update(recs, fields, ["k"], [], {}, remove_on_delete=True)

    expected = _expected(rows, merge, splits)
    assert _run(schema, ["k"], options, rows, splits) == expected


# ------------------------------------------------------------- partial-update
@SETTINGS
@given(
    data=st.data(), remove_on_delete=st.booleans(), splits=st.lists(st.integers(0, 40), max_size=3)
)
def test_partial_update_without_groups(data, remove_on_delete, splits) -> None:
    kinds = ["+I", "+U", "-D", "-U"] if remove_on_delete else ["+I", "+U"]
    rows = _records(data.draw, {"a": small, "b": small, "c": small}, kinds)
    schema = pa.schema(
        [
            ("k", pa.int32()),
            ("a", pa.int32()),
            ("b", pa.int32()),
            ("c", pa.int32()),
            ("rk", pa.string()),
        ]
    )
    options = {"merge-engine": "partial-update"}
    if remove_on_delete:
        options["partial-update.remove-record-on-delete"] = "true"
    fields = ["k", "a", "b", "c", "rk"]
    expected = _expected(
        rows,
        lambda recs: ref.partial_update(
            recs, fields, ["k"], [], {}, remove_on_delete=remove_on_delete
        ),
        splits,
    )
    assert _run(schema, ["k"], options, rows, splits) == expected


GROUP_AGGS = ["none", "sum", "last_non_null_value", "first_value", "max"]


@SETTINGS
@given(
    data=st.data(),
    d_agg=st.sampled_from(GROUP_AGGS),
    retractions=st.booleans(),
    remove_group=st.booleans(),
    default_lnn=st.booleans(),
    splits=st.lists(st.integers(0, 40), max_size=3),
)
def test_partial_update_with_sequence_groups(
    data, d_agg, retractions, remove_group, default_lnn, splits
) -> None:
    if retractions and d_agg in ("first_value", "max"):
        d_agg = "sum"  # functions without retraction are covered by the error test below
    kinds = ["+I", "+U", "-U", "-D"] if retractions else ["+I", "+U"]
    rows = _records(
        data.draw,
        {
            "a": small,
            "b": small,
            "s1": seqv,
            "c": small,
            "d": small,
            "s2": seqv,
            "s3": seqv,
            "e": small,
        },
        kinds,
    )
    fields = ["k", "a", "b", "s1", "c", "d", "s2", "s3", "e", "rk"]
    schema = pa.schema(
        [("k", pa.int32())] + [(f, pa.int32()) for f in fields[1:-1]] + [("rk", pa.string())]
    )
    options = {
        "merge-engine": "partial-update",
        "fields.s1.sequence-group": "a,b",
        "fields.s2,s3.sequence-group": "c,d",
    }
    aggs: dict[str, ref.Agg] = {}
    if d_agg != "none":
        options["fields.d.aggregate-function"] = d_agg
        aggs["d"] = ref.Agg(d_agg)
    if default_lnn:
        options["fields.default-aggregate-function"] = "last_non_null_value"
        for f in ("a", "b", "c", "e", "rk"):
            aggs[f] = ref.Agg("last_non_null_value")
        if d_agg == "none":
            aggs["d"] = ref.Agg("last_non_null_value")
    remove_groups = ("s1",) if remove_group and retractions else ()
    if remove_groups:
        options["partial-update.remove-record-on-sequence-group"] = "s1"
    expected = _expected(
        rows,
        lambda recs: ref.partial_update(
            recs,
            fields,
            ["k"],
            [(["s1"], ["a", "b"]), (["s2", "s3"], ["c", "d"])],
            aggs,
            remove_groups=remove_groups,
        ),
        splits,
    )
    assert _run(schema, ["k"], options, rows, splits) == expected


def test_group_aggregate_without_retraction_support_rejects_retractions() -> None:
    schema = pa.schema(
        [("k", pa.int32()), ("g", pa.int32()), ("d", pa.int32()), ("rk", pa.string())]
    )
    rows = [{"k": 1, "g": 1, "d": 1, "rk": "+I"}, {"k": 1, "g": 2, "d": 2, "rk": "-U"}]
    with pytest.raises(LakeopsError, match="'first_value' does not support retraction"):
        _run(
            schema,
            ["k"],
            {
                "merge-engine": "partial-update",
                "fields.g.sequence-group": "d",
                "fields.d.aggregate-function": "first_value",
            },
            rows,
            [],
        )


# --------------------------------------------------- deduplicate / first-row
@SETTINGS
@given(
    data=st.data(),
    splits=st.lists(st.integers(0, 40), max_size=3),
    two_seq=st.booleans(),
    descending=st.booleans(),
)
def test_deduplicate_with_multi_field_sequence(data, splits, two_seq, descending) -> None:
    rows = _records(data.draw, {"v": small, "t1": seqv, "t2": seqv}, ["+I", "+U", "-U", "-D"])
    schema = pa.schema(
        [
            ("k", pa.int32()),
            ("v", pa.int32()),
            ("t1", pa.int32()),
            ("t2", pa.int32()),
            ("rk", pa.string()),
        ]
    )
    seq = ["t1", "t2"] if two_seq else ["t1"]
    options = {"sequence.field": ",".join(seq)}
    if descending:
        options["sequence.field.sort-order"] = "descending"

    def order(r: dict) -> tuple:
        # Paimon's comparator: a NULL sequence value is the smallest in both orders; the sort
        # order inverts only the comparison of two values
        sign = -1 if descending else 1
        return tuple((0, 0) if r[f] is None else (1, sign * r[f]) for f in seq)

    expected = _expected(rows, ref.dedup, splits, order)
    assert _run(schema, ["k"], options, rows, splits) == expected


# ------------------------------------------------------- merge_map_with_keytime
MMK_ROW = pa.struct([("v", pa.string()), ("ts", pa.string())])
# "\ue000" sorts above "\U0001f600" in Java (UTF-16) but below it in code-point order
ts_values = st.one_of(st.none(), st.sampled_from(["1", "10", "2", "\ue000", "\U0001f600"]))
mmk_rows = st.one_of(
    st.none(), st.fixed_dictionaries({"v": st.sampled_from(["a", "b", None]), "ts": ts_values})
)
mmk_maps = st.one_of(
    st.none(),
    st.dictionaries(st.sampled_from(["x", "y", "z"]), mmk_rows, max_size=3).map(
        lambda d: list(d.items())
    ),
)


def _as_dicts(result: dict[Any, dict]) -> dict[Any, dict]:
    return {k: {**r, "m": None if r["m"] is None else dict(r["m"])} for k, r in result.items()}


@SETTINGS
@given(data=st.data(), splits=st.lists(st.integers(0, 40), max_size=3))
def test_merge_map_with_keytime_matches_reference(data, splits) -> None:
    rows = _records(data.draw, {"m": mmk_maps}, ["+I", "+U"])
    schema = pa.schema(
        [("k", pa.int32()), ("m", pa.map_(pa.string(), MMK_ROW)), ("rk", pa.string())]
    )
    options = {
        "merge-engine": "aggregation",
        "fields.m.aggregate-function": "merge_map_with_keytime",
    }
    aggs = {"m": ref.Agg("merge_map_with_keytime"), "rk": ref.Agg("last_non_null_value")}
    expected = _expected(rows, lambda recs: ref.aggregation(recs, ["k"], aggs), splits)
    assert _as_dicts(_run(schema, ["k"], options, rows, splits)) == _as_dicts(expected)
