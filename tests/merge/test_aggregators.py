"""Aggregate functions through the public API: one commit per record, merged on read."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lakeops import Catalog, DataValidationError
from lakeops.errors import ConfigurationError, UnsupportedFeatureError
from lakeops.merge import roaring64


def _table(
    catalog: Catalog, value_type: pa.DataType, function: str, nullable: bool = True, **extra: str
):
    schema = pa.schema(
        [("k", pa.int32()), pa.field("v", value_type, nullable), ("rk", pa.string())]
    )
    options = {
        "bucket": "1",
        "rowkind.field": "rk",
        "merge-engine": "aggregation",
        "fields.v.aggregate-function": function,
        **extra,
    }
    return catalog.create_table("db.t", schema=schema, primary_keys=["k"], options=options)


def _apply(table, records: list[tuple[str, object]], one_commit: bool = False) -> object:
    schema = table.arrow_schema
    rows = [{"k": 1, "v": v, "rk": kind} for kind, v in records]
    if one_commit:
        table.write(pa.Table.from_pylist(rows, schema=schema))
    else:
        for row in rows:
            table.write(pa.Table.from_pylist([row], schema=schema))
    result = table.read(columns=["v"]).column("v").to_pylist()
    return result[0] if result else "absent"


@pytest.mark.parametrize("one_commit", [False, True])
def test_listagg_delimiter_and_distinct(catalog: Catalog, one_commit: bool) -> None:
    t = _table(catalog, pa.string(), "listagg", **{"fields.v.list-agg-delimiter": ";"})
    assert (
        _apply(t, [("+I", "a"), ("+I", None), ("+I", "b;c"), ("+I", "a")], one_commit) == "a;b;c;a"
    )


def test_listagg_distinct(catalog: Catalog) -> None:
    t = _table(catalog, pa.string(), "listagg", **{"fields.v.distinct": "true"})
    assert _apply(t, [("+I", "a,b"), ("+I", "b,c"), ("+I", "a")], True) == "a,b,c"


@pytest.mark.parametrize("one_commit", [False, True])
def test_listagg_skips_blank_strings(catalog: Catalog, one_commit: bool) -> None:
    """Paimon 2.0 (apache/paimon#8480; pypaimon 2.1 alike): NULL, empty and whitespace-only
    inputs are skipped, a blank accumulator gives way to the next input; U+00A0 is not
    whitespace to Java."""
    t = _table(catalog, pa.string(), "listagg")
    records = [("+I", " "), ("+I", "a"), ("+I", ""), ("+I", "\t\n"), ("+I", None)]
    records += [("+I", "\u3000"), ("+I", "\u00a0"), ("+I", "b")]
    assert _apply(t, records, one_commit) == "a,\u00a0,b"


@pytest.mark.parametrize("one_commit", [False, True])
def test_listagg_of_blank_strings_only_is_null(catalog: Catalog, one_commit: bool) -> None:
    t = _table(catalog, pa.string(), "listagg")
    assert _apply(t, [("+I", " "), ("+I", "")], one_commit) is None


def test_listagg_distinct_skips_blank_tokens(catalog: Catalog) -> None:
    t = _table(catalog, pa.string(), "listagg", **{"fields.v.distinct": "true"})
    assert _apply(t, [("+I", " "), ("+I", "a,b"), ("+I", "b, ,c"), ("+I", "a")], True) == "a,b,c"


@pytest.mark.parametrize("one_commit", [False, True])
def test_collect_concat_distinct_and_retract(catalog: Catalog, one_commit: bool) -> None:
    t = _table(catalog, pa.list_(pa.int32()), "collect")
    assert _apply(t, [("+I", [1, 2]), ("+I", [2, 3]), ("-U", [2]), ("+I", None)], one_commit) == [
        1,
        2,
        3,
    ]


def test_collect_distinct(catalog: Catalog) -> None:
    t = _table(catalog, pa.list_(pa.string()), "collect", **{"fields.v.distinct": "true"})
    assert _apply(t, [("+I", ["a", "b"]), ("+I", ["b", "c", "a"])], True) == ["a", "b", "c"]


@pytest.mark.parametrize("one_commit", [False, True])
def test_merge_map_later_wins_and_retract_removes(catalog: Catalog, one_commit: bool) -> None:
    t = _table(catalog, pa.map_(pa.string(), pa.int32()), "merge_map")
    result = _apply(
        t,
        [("+I", [("a", 1), ("b", 2)]), ("+I", [("b", 3), ("c", 4)]), ("-U", [("a", 0)])],
        one_commit,
    )
    assert dict(result) == {"b": 3, "c": 4}


ROW = pa.struct([("id", pa.int32()), ("name", pa.string())])


@pytest.mark.parametrize("one_commit", [False, True])
def test_nested_update_by_key(catalog: Catalog, one_commit: bool) -> None:
    t = _table(catalog, pa.list_(ROW), "nested_update", **{"fields.v.nested-key": "id"})
    result = _apply(
        t,
        [
            ("+I", [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]),
            ("+I", [{"id": 2, "name": "B"}, {"id": 3, "name": "c"}]),
            ("-D", [{"id": 1, "name": None}]),
        ],
        one_commit,
    )
    assert sorted(result, key=lambda r: r["id"]) == [{"id": 2, "name": "B"}, {"id": 3, "name": "c"}]


def test_nested_update_without_key_appends(catalog: Catalog) -> None:
    t = _table(catalog, pa.list_(ROW), "nested_update")
    result = _apply(t, [("+I", [{"id": 1, "name": "a"}]), ("+I", [{"id": 1, "name": "a"}])])
    assert result == [{"id": 1, "name": "a"}, {"id": 1, "name": "a"}]


def test_roaring_bitmaps_union(catalog: Catalog) -> None:
    roaring = pytest.importorskip("pyroaring")
    t = _table(catalog, pa.binary(), "rbm32")
    parts = [roaring.BitMap([1, 2]), roaring.BitMap([2, 70000]), roaring.BitMap([5])]
    result = _apply(t, [("+I", bytes(b.serialize())) for b in parts])
    assert set(roaring.BitMap.deserialize(result)) == {1, 2, 5, 70000}


def test_roaring64_bitmaps_union(catalog: Catalog) -> None:
    roaring = pytest.importorskip("pyroaring")
    t = _table(catalog, pa.binary(), "rbm64")
    parts = [roaring.BitMap64([1, 2**40]), roaring.BitMap64([3])]
    result = _apply(t, [("+I", bytes(b.serialize())) for b in parts], one_commit=True)
    assert roaring64.layout(result) == "java"  # Java Paimon's layout, whatever came in
    assert roaring64.values_of(result).tolist() == [1, 3, 2**40]


def test_hll_and_theta_sketch_unions(catalog: Catalog) -> None:
    ds = pytest.importorskip("datasketches")

    def hll(values: range) -> bytes:
        s = ds.hll_sketch(12)
        for v in values:
            s.update(v)
        return bytes(s.serialize_compact())

    t = _table(catalog, pa.binary(), "hll_sketch")
    result = _apply(t, [("+I", hll(range(0, 600))), ("+I", hll(range(400, 1000)))])
    assert abs(ds.hll_sketch.deserialize(result).get_estimate() - 1000) < 50

    def theta(values: range) -> bytes:
        s = ds.update_theta_sketch()
        for v in values:
            s.update(v)
        return bytes(s.compact().serialize())

    schema = pa.schema([("k", pa.int32()), ("v", pa.binary()), ("rk", pa.string())])
    t2 = catalog.create_table(
        "db.theta",
        schema=schema,
        primary_keys=["k"],
        options={
            "bucket": "1",
            "rowkind.field": "rk",
            "merge-engine": "aggregation",
            "fields.v.aggregate-function": "theta_sketch",
        },
    )
    result = _apply(t2, [("+I", theta(range(0, 300))), ("+I", theta(range(200, 500)))])
    assert ds.compact_theta_sketch.deserialize(result).get_estimate() == 500


@pytest.mark.parametrize(
    ("function", "records", "expected"),
    [
        ("bool_and", [("+I", True), ("+I", None), ("+I", False)], False),
        ("bool_or", [("+I", None), ("+I", False), ("+I", True)], True),
        ("bool_and", [("+I", None), ("+I", None)], None),
    ],
)
def test_booleans(catalog: Catalog, function: str, records: list, expected: object) -> None:
    assert _apply(_table(catalog, pa.bool_(), function), records, True) == expected


def test_sum_overflow_is_an_error(catalog: Catalog) -> None:
    t = _table(catalog, pa.int32(), "sum")
    with pytest.raises(DataValidationError, match="overflows"):
        _apply(t, [("+I", 2**31 - 1), ("+I", 1)])


def test_sum_retract_and_decimal(catalog: Catalog) -> None:
    from decimal import Decimal

    t = _table(catalog, pa.decimal128(10, 2), "sum")
    assert _apply(
        t, [("+I", Decimal("1.25")), ("+I", Decimal("2.50")), ("-U", Decimal("0.75"))], True
    ) == Decimal("3.00")


def test_product_retraction_divides_towards_zero(catalog: Catalog) -> None:
    t = _table(catalog, pa.int64(), "product")
    assert _apply(t, [("+I", 7), ("+I", -3), ("-U", 2)], True) == -10


def test_ignore_retract(catalog: Catalog) -> None:
    t = _table(catalog, pa.int32(), "max", **{"fields.v.ignore-retract": "true"})
    assert _apply(t, [("+I", 5), ("-U", 9), ("+I", 3)], True) == 5


def test_retraction_on_max_is_refused_before_writing(catalog: Catalog) -> None:
    t = _table(catalog, pa.int32(), "max")
    t.write(pa.Table.from_pylist([{"k": 1, "v": 5, "rk": "+I"}], schema=t.arrow_schema))
    with pytest.raises(DataValidationError, match="'max' does not support retraction"):
        t.write(pa.Table.from_pylist([{"k": 1, "v": 5, "rk": "-U"}], schema=t.arrow_schema))
    assert len(t.snapshots()) == 1


@pytest.mark.parametrize("nullable", [True, False])
@pytest.mark.parametrize("one_commit", [False, True])
def test_remove_record_on_delete_restarts_from_the_delete_record(
    catalog: Catalog, nullable: bool, one_commit: bool
) -> None:
    # Paimon (1.4.1+) AggregateMergeFunction.initRow copies every field of the -D record, so the
    # sum goes on from the -D value: +I 5, +I 3, -D 1, +I 2 -> 1 + 2
    t = _table(
        catalog,
        pa.int64(),
        "sum",
        nullable=nullable,
        **{"aggregation.remove-record-on-delete": "true"},
    )
    assert _apply(t, [("+I", 5), ("+I", 3), ("-D", 1), ("+I", 2)], one_commit) == 3


@pytest.mark.parametrize("one_commit", [False, True])
def test_not_null_column_survives_a_trailing_delete_and_compaction(
    catalog: Catalog, one_commit: bool
) -> None:
    # the deleted key keeps the -D record's NOT NULL value in the files (no writer crash)
    t = _table(
        catalog,
        pa.int64(),
        "sum",
        nullable=False,
        **{"aggregation.remove-record-on-delete": "true"},
    )
    assert _apply(t, [("+I", 5), ("-D", 4)], one_commit) == "absent"
    t.compact(full=True)
    assert t.read().num_rows == 0
    t.write(pa.Table.from_pylist([{"k": 1, "v": 7, "rk": "+I"}], schema=t.arrow_schema))
    assert t.read(columns=["v"]).column("v").to_pylist() == [7]


@pytest.mark.parametrize(
    ("records", "expected"),
    [
        # an add before the -D set first_value's flag: the -D value stays
        ([("+I", 5), ("-D", 9), ("+I", 2)], 9),
        # no add before the -D: the first add after it replaces the -D value
        ([("-D", 9), ("+I", 2), ("+I", 3)], 2),
        ([("+I", 4), ("-D", 9)], "absent"),
    ],
)
def test_first_value_after_remove_on_delete(catalog: Catalog, records, expected) -> None:
    t = _table(
        catalog, pa.int32(), "first_value", **{"aggregation.remove-record-on-delete": "true"}
    )
    assert _apply(t, records, True) == expected


def test_remove_record_on_delete_deletes_the_row(catalog: Catalog) -> None:
    t = _table(catalog, pa.int64(), "sum", **{"aggregation.remove-record-on-delete": "true"})
    assert _apply(t, [("+I", 5), ("-D", 5)], True) == "absent"


def test_first_value_keeps_the_first_across_commits(catalog: Catalog) -> None:
    t = _table(catalog, pa.int32(), "first_value")
    assert _apply(t, [("+I", None), ("+I", 2), ("+I", 3)]) is None


KT_ROW = pa.struct([("v", pa.string()), ("ts", pa.string())])


@pytest.mark.parametrize("one_commit", [False, True])
def test_merge_map_with_keytime_per_key_latest(catalog: Catalog, one_commit: bool) -> None:
    t = _table(catalog, pa.map_(pa.string(), KT_ROW), "merge_map_with_keytime")
    r = [
        ("+I", [("p", {"v": "iPhone", "ts": "100"}), ("c", {"v": "Black", "ts": "100"})]),
        ("+I", [("p", {"v": "iPad", "ts": "200"}), ("q", {"v": "999", "ts": "200"})]),
        # "50" > "100" as strings (Paimon compares with String.compareTo)
        ("+I", [("c", {"v": "White", "ts": "50"}), ("q", None), ("p", {"v": "x", "ts": None})]),
        ("+I", [("p", {"v": "same", "ts": "200"})]),  # not strictly newer: kept
    ]
    assert dict(_apply(t, r, one_commit)) == {
        "p": {"v": "iPad", "ts": "200"},
        "c": {"v": "White", "ts": "50"},
    }


def test_merge_map_with_keytime_first_map_is_taken_as_is(catalog: Catalog) -> None:
    # agg(null, m) == m: a null-timestamp entry of the first map survives until replaced
    t = _table(catalog, pa.map_(pa.string(), KT_ROW), "merge_map_with_keytime")
    r = [("+I", [("a", {"v": "1", "ts": None}), ("b", {"v": "2", "ts": None})])]
    r.append(("+I", [("a", {"v": "3", "ts": "0"})]))
    assert dict(_apply(t, r, True)) == {"a": {"v": "3", "ts": "0"}, "b": {"v": "2", "ts": None}}


@pytest.mark.parametrize(
    ("value_type", "extra", "error", "match"),
    [
        (pa.map_(pa.string(), pa.string()), {}, ConfigurationError, "must be ROW"),
        (
            pa.map_(pa.string(), pa.struct([("ts", pa.string())])),
            {},
            ConfigurationError,
            "at least 2 fields",
        ),
        (
            pa.map_(pa.string(), KT_ROW),
            {"fields.v.ts-field": "nope"},
            ConfigurationError,
            "'nope' not found",
        ),
        (
            pa.map_(pa.string(), pa.struct([("v", pa.string()), ("ts", pa.int64())])),
            {},
            UnsupportedFeatureError,
            "CHAR/VARCHAR",
        ),
    ],
)
def test_merge_map_with_keytime_refuses_bad_types(
    catalog: Catalog, value_type, extra, error, match
) -> None:
    with pytest.raises(error, match=match):
        _table(catalog, value_type, "merge_map_with_keytime", **extra)


def test_merge_map_with_keytime_ts_field_option(catalog: Catalog) -> None:
    row = pa.struct([("ts", pa.string()), ("v", pa.string())])
    t = _table(
        catalog, pa.map_(pa.string(), row), "merge_map_with_keytime", **{"fields.v.ts-field": "ts"}
    )
    r = [("+I", [("a", {"ts": "2", "v": "new"})]), ("+I", [("a", {"ts": "1", "v": "old"})])]
    assert dict(_apply(t, r, True)) == {"a": {"ts": "2", "v": "new"}}


def test_lone_rbm64_value_of_older_lakeops_is_rewritten_in_java_layout(
    catalog: Catalog, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key with a single value in the portable layout (as lakeops wrote before it wrote Java's)
    has nothing to be united with; the compaction that rewrites its file still writes it in
    Java's layout, so no value is left behind that Java Paimon cannot read. The older writer is
    played by a write that skips the restating step."""
    import pyarrow.parquet as pq

    from lakeops.merge.aggregation import AggregationEngine

    roaring = pytest.importorskip("pyroaring")
    t = _table(catalog, pa.binary(), "rbm64")
    older = bytes(roaring.BitMap64([7, 2**33]).serialize())
    assert roaring64.layout(older) == "portable"

    def stored() -> list[bytes]:
        files = sorted(p for p in tmp_path.rglob("*.parquet") if "bucket-" in str(p))
        return [v for f in files for v in pq.read_table(f).column("v").to_pylist() if v]

    with monkeypatch.context() as m:
        m.setattr(AggregationEngine, "restate", lambda _self, records: records)
        rows = [{"k": 1, "v": older, "rk": "+I"}, {"k": 2, "v": None, "rk": "+I"}]
        t.write(pa.Table.from_pylist(rows, schema=t.arrow_schema))
    assert [roaring64.layout(v) for v in stored()] == ["portable"]
    t.write(pa.Table.from_pylist([{"k": 3, "v": None, "rk": "+I"}], schema=t.arrow_schema))
    t.compact(full=True)
    # one file at the highest level after a full compaction: a read merges nothing, so it
    # returns the bytes as stored
    merged = [v for v in t.read(columns=["v"]).column("v").to_pylist() if v is not None]
    assert [roaring64.layout(v) for v in merged] == ["java"]
    assert roaring64.values_of(merged[0]).tolist() == [7, 2**33]


def test_portable_mask_tells_layouts_apart_over_a_whole_array() -> None:
    roaring = pytest.importorskip("pyroaring")
    older = bytes(roaring.BitMap64([1, 2**40]).serialize())
    java = roaring64.to_java(older)
    empty_portable, empty_java = bytes(8), b"\x00"
    values = pa.array([older, java, None, empty_portable, empty_java, older], type=pa.binary())
    mask = roaring64.portable_mask(values)
    assert mask.tolist() == [
        roaring64.layout(v) == "portable" if v else False for v in values.to_pylist()
    ]
    assert mask.tolist() == [True, False, False, True, False, True]
    out = roaring64.to_java_array(values)
    assert [v is None or roaring64.layout(v) == "java" for v in out.to_pylist()] == [True] * 6


@pytest.mark.parametrize(
    ("function", "layout"),
    [
        ("rbm32", "32-bit roaring bitmap"),
        ("rbm64", "Roaring64Bitmap layout"),
        ("hll_sketch", "HLL sketch"),
        ("theta_sketch", "theta sketch"),
    ],
)
def test_an_unreadable_state_names_the_table_field_and_layout(
    catalog: Catalog, function: str, layout: str
) -> None:
    """A stored state no aggregate can read (bytes of some other layout in a shared table) is
    the project's error naming the table's directory, the field, the function and the layout
    it expected — never a bare ValueError from the native library, and nothing merged."""
    pytest.importorskip("pyroaring" if function.startswith("rbm") else "datasketches")
    t = _table(catalog, pa.binary(), function)
    with pytest.raises(DataValidationError) as caught:
        _apply(t, [("+I", b"\x07not-a-state-of-any-kind"), ("+I", b"\x07not-a-state-either")])
    message = str(caught.value)
    assert message.startswith(f"table {t.root}: field 'v'"), message
    assert f"aggregate function '{function}'" in message
    assert layout.lower() in message.lower(), message
