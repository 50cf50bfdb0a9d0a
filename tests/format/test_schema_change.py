"""Schema changes against Paimon 0.9's SchemaManager.commitChanges rules, written out as the
expected ``schema-N`` JSON (field ids, ``highestFieldId``, positions) and the refusals."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from lakeops.errors import ConfigurationError, UnsupportedFeatureError
from lakeops.format.schema import TableSchema
from lakeops.format.schema_change import (
    AddColumn,
    DropColumn,
    Position,
    RemoveOption,
    RenameColumn,
    SetOption,
    UpdateColumnComment,
    UpdateColumnNullability,
    UpdateColumnPosition,
    UpdateColumnType,
    UpdateComment,
    apply_changes,
    is_implicit_cast,
)
from lakeops.format.types import DataType

BASE: dict[str, Any] = {
    "version": 3,
    "id": 4,
    "fields": [
        {"id": 0, "name": "dt", "type": "STRING NOT NULL"},
        {"id": 1, "name": "k", "type": "INT NOT NULL"},
        {"id": 2, "name": "v", "type": "INT"},
        {"id": 5, "name": "s", "type": "STRING"},
    ],
    "highestFieldId": 6,  # a dropped field once had id 6
    "partitionKeys": ["dt"],
    "primaryKeys": ["dt", "k"],
    "options": {"bucket": "2", "fields.v.aggregate-function": "sum"},
    "comment": None,
    "timeMillis": 1700000000000,
}


def _base(**over: Any) -> TableSchema:
    return TableSchema.from_json(json.dumps({**BASE, **over}))


def _doc(schema: TableSchema) -> dict[str, Any]:
    doc = json.loads(schema.to_json())
    doc.pop("timeMillis")
    return doc


def _expect(fields: list[dict[str, Any]], highest: int, **over: Any) -> dict[str, Any]:
    doc = {k: v for k, v in BASE.items() if k != "timeMillis"}
    return {**doc, "id": 5, "fields": fields, "highestFieldId": highest, **over}


F = {f["name"]: f for f in BASE["fields"]}
T = DataType.parse


def _apply(*changes: Any, has_snapshots: bool = True, base: TableSchema | None = None):
    return apply_changes(base or _base(), list(changes), has_snapshots)


# ------------------------------------------------------------------ add column
@pytest.mark.parametrize(
    ("position", "order"),
    [
        (Position.LAST, ["dt", "k", "v", "s", "n"]),
        (Position.FIRST, ["n", "dt", "k", "v", "s"]),
        (Position.after("k"), ["dt", "k", "n", "v", "s"]),
        (Position.after("s"), ["dt", "k", "v", "s", "n"]),
    ],
)
def test_add_column_takes_the_next_id_at_its_position(position: Position, order) -> None:
    new = {"id": 7, "name": "n", "type": "BIGINT", "description": "new one"}
    out = _apply(AddColumn("n", T("BIGINT"), "new one", position))
    fields = [new if n == "n" else F[n] for n in order]
    assert _doc(out) == _expect(fields, 7)
    assert out.time_millis > BASE["timeMillis"]


def test_add_nested_column_numbers_nested_fields_after_it_inner_first() -> None:
    # ReassignFieldId: the column takes ++highest, then nested ROW fields in post-order
    row_type = {
        "type": "ROW",
        "fields": [
            {"id": 0, "name": "a", "type": "INT"},
            {
                "id": 0,
                "name": "b",
                "type": {
                    "type": "ROW",
                    "fields": [
                        {"id": 0, "name": "c", "type": "INT"},
                        {"id": 0, "name": "d", "type": "STRING"},
                    ],
                },
            },
            {
                "id": 0,
                "name": "e",
                "type": {
                    "type": "MAP",
                    "key": "STRING NOT NULL",
                    "value": {"type": "ROW", "fields": [{"id": 0, "name": "x", "type": "INT"}]},
                },
            },
        ],
    }
    out = _apply(AddColumn("r", T(row_type)))
    expected_type = {
        "type": "ROW",
        "fields": [
            {"id": 8, "name": "a", "type": "INT"},
            {
                "id": 11,
                "name": "b",
                "type": {
                    "type": "ROW",
                    "fields": [
                        {"id": 9, "name": "c", "type": "INT"},
                        {"id": 10, "name": "d", "type": "STRING"},
                    ],
                },
            },
            {
                "id": 13,
                "name": "e",
                "type": {
                    "type": "MAP",
                    "key": "STRING NOT NULL",
                    "value": {"type": "ROW", "fields": [{"id": 12, "name": "x", "type": "INT"}]},
                },
            },
        ],
    }
    fields = [*BASE["fields"], {"id": 7, "name": "r", "type": expected_type}]
    assert _doc(out) == _expect(fields, 13)


def test_drop_and_re_add_is_a_new_field() -> None:
    out = _apply(DropColumn("s"), AddColumn("s", T("INT")))
    fields = [F["dt"], F["k"], F["v"], {"id": 7, "name": "s", "type": "INT"}]
    assert _doc(out) == _expect(fields, 7)


def test_rename_then_add_the_old_name() -> None:
    out = _apply(RenameColumn("s", "s2"), AddColumn("s", T("STRING")))
    fields = [F["dt"], F["k"], F["v"], {**F["s"], "name": "s2"}]
    fields.append({"id": 7, "name": "s", "type": "STRING"})
    assert _doc(out) == _expect(fields, 7)


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        (AddColumn("v", T("INT")), ConfigurationError, "already exists"),
        (AddColumn("n", T("INT NOT NULL")), ConfigurationError, "NOT NULL"),
        (AddColumn("n", T("INT"), position=Position.after("zz")), ConfigurationError, "zz"),
        (AddColumn("n", T("INT"), position=Position.before("v")), ConfigurationError, "before"),
        (RenameColumn("k", "k2"), UnsupportedFeatureError, r"primary key \[k\]"),
        (RenameColumn("dt", "d"), UnsupportedFeatureError, r"partition key \[dt\]"),
        (RenameColumn("s", "v"), ConfigurationError, "already exists"),
        (RenameColumn("zz", "y"), ConfigurationError, "does not exist"),
        (DropColumn("k"), UnsupportedFeatureError, r"primary key \[k\]"),
        (DropColumn("dt"), UnsupportedFeatureError, r"partition key \[dt\]"),
        (DropColumn("zz"), ConfigurationError, "does not exist"),
        # fields.v.aggregate-function still names v (Paimon's SchemaValidation)
        (DropColumn("v"), ConfigurationError, "Field v can not be found"),
        (RenameColumn("v", "w"), ConfigurationError, "Field v can not be found"),
        (UpdateColumnType("dt", T("STRING")), UnsupportedFeatureError, "partition column"),
        (UpdateColumnType("k", T("BIGINT")), UnsupportedFeatureError, "primary-key"),
        (UpdateColumnType("v", T("SMALLINT")), UnsupportedFeatureError, "without loosing"),
        (UpdateColumnType("s", T("INT")), UnsupportedFeatureError, "without loosing"),
        (UpdateColumnType("v", T("BIGINT NOT NULL")), UnsupportedFeatureError, "loosing"),
        (UpdateColumnNullability("k", True), UnsupportedFeatureError, "primary key"),
        (UpdateColumnNullability("v", False), UnsupportedFeatureError, "NOT NULL"),
        (UpdateColumnPosition("dt", Position.FIRST), ConfigurationError, "move itself"),
        (UpdateColumnPosition("s", Position.LAST), ConfigurationError, "move itself"),
        (UpdateColumnPosition("v", Position.after("v")), ConfigurationError, "move itself"),
        (UpdateColumnPosition("v", Position.after("zz")), ConfigurationError, "Reference"),
        (UpdateColumnPosition("zz", Position.FIRST), ConfigurationError, "not found"),
    ],
)
def test_refusals(change: Any, error: type[Exception], match: str) -> None:
    base = _base()
    with pytest.raises(error, match=match):
        _apply(change, base=base)
    assert _doc(base) == {k: v for k, v in BASE.items() if k != "timeMillis"}


def test_drop_all_fields_is_refused() -> None:
    # only reachable when no key protects a column (a schema with no primary key)
    base = _base(partitionKeys=[], primaryKeys=[], options={})
    with pytest.raises(ConfigurationError, match="Cannot drop all fields"):
        _apply(*(DropColumn(n) for n in ("dt", "k", "v", "s")), base=base)


def test_bucket_key_column_type_is_refused() -> None:
    base = _base(options={"bucket": "2", "bucket-key": "v"})
    with pytest.raises(UnsupportedFeatureError, match="bucket-key"):
        _apply(UpdateColumnType("v", T("BIGINT")), base=base)


# ----------------------------------------------------------------- update type
@pytest.mark.parametrize(
    ("column", "new", "keep", "result"),
    [
        ("v", "BIGINT", False, "BIGINT"),
        ("v", "DOUBLE", False, "DOUBLE"),
        ("v", "DECIMAL(10, 0)", False, "DECIMAL(10, 0)"),
        ("s", "STRING NOT NULL", True, "STRING"),
    ],
)
def test_update_column_type_keeps_the_id(column: str, new: str, keep: bool, result: str) -> None:
    out = _apply(UpdateColumnType(column, T(new), keep_nullability=keep))
    fields = [{**f, "type": result} if f["name"] == column else f for f in BASE["fields"]]
    assert _doc(out) == _expect(fields, 6)


@pytest.mark.parametrize(
    ("src", "dst", "ok"),
    [
        ("TINYINT", "SMALLINT", True),
        ("SMALLINT", "INT", True),
        ("INT", "BIGINT", True),
        ("TINYINT", "BIGINT", True),
        ("BIGINT", "INT", False),
        ("INT", "FLOAT", True),
        ("BIGINT", "DOUBLE", True),
        ("FLOAT", "DOUBLE", True),
        ("DOUBLE", "FLOAT", False),
        ("DECIMAL(10, 2)", "DOUBLE", False),  # Arrow does not round as Java does
        ("DECIMAL(10, 2)", "FLOAT", False),
        ("DOUBLE", "DECIMAL(38, 10)", False),
        ("DECIMAL(10, 2)", "DECIMAL(12, 2)", True),
        ("DECIMAL(10, 2)", "DECIMAL(11, 3)", True),
        ("DECIMAL(10, 2)", "DECIMAL(10, 3)", False),
        ("DECIMAL(10, 2)", "DECIMAL(9, 2)", False),
        ("INT", "DECIMAL(10, 0)", True),
        ("INT", "DECIMAL(11, 2)", False),
        ("BIGINT", "DECIMAL(19, 0)", True),
        ("CHAR(5)", "VARCHAR(5)", True),
        ("CHAR(5)", "STRING", True),
        ("VARCHAR(10)", "VARCHAR(5)", False),
        ("STRING", "VARCHAR(10)", False),
        ("CHAR(5)", "CHAR(6)", False),
        ("BINARY(4)", "BYTES", True),
        ("VARBINARY(4)", "VARBINARY(3)", False),
        ("TIMESTAMP(3)", "TIMESTAMP(6)", True),
        ("TIME(0)", "TIME(3)", True),
        ("TIME(3)", "TIME(0)", False),
        ("TIME(3)", "TIMESTAMP(3)", False),
        ("TIMESTAMP(6)", "TIMESTAMP(3)", False),
        ("TIMESTAMP(3)", "TIMESTAMP(6) WITH LOCAL TIME ZONE", False),
        ("TIMESTAMP(3) WITH LOCAL TIME ZONE", "TIMESTAMP(9) WITH LOCAL TIME ZONE", True),
        ("TIMESTAMP(3)", "DATE", False),
        ("DATE", "TIMESTAMP(3)", False),
        ("INT", "STRING", False),
        ("BOOLEAN", "INT", False),
        ("INT NOT NULL", "INT", True),
        ("INT", "INT NOT NULL", False),
        ("INT NOT NULL", "BIGINT NOT NULL", True),
    ],
)
def test_is_implicit_cast(src: str, dst: str, ok: bool) -> None:
    assert is_implicit_cast(T(src), T(dst)) is ok


def test_nested_types_only_change_top_level_nullability() -> None:
    a = T({"type": "ARRAY NOT NULL", "element": "INT"})
    assert is_implicit_cast(a, T({"type": "ARRAY", "element": "INT"}))
    assert not is_implicit_cast(a, T({"type": "ARRAY", "element": "BIGINT"}))


# ------------------------------------------------- nullability, comments, moves
def test_nullability_and_comments() -> None:
    out = _apply(
        UpdateColumnNullability("s", False),  # allowed while the table has no data
        UpdateColumnComment("v", "the value"),
        UpdateComment("a table"),
        has_snapshots=False,
    )
    fields = [
        F["dt"],
        F["k"],
        {**F["v"], "description": "the value"},
        {**F["s"], "type": "STRING NOT NULL"},
    ]
    assert _doc(out) == _expect(fields, 6, comment="a table")
    back = apply_changes(out, [UpdateColumnNullability("s", True)], True)
    assert back.field("s").type.nullable and back.id == 6


@pytest.mark.parametrize(
    ("name", "position", "order"),
    [
        ("s", Position.FIRST, ["s", "dt", "k", "v"]),
        ("dt", Position.LAST, ["k", "v", "s", "dt"]),
        ("dt", Position.after("v"), ["k", "v", "dt", "s"]),
        ("s", Position.after("dt"), ["dt", "s", "k", "v"]),
        ("dt", Position.before("s"), ["k", "v", "dt", "s"]),
        ("s", Position.before("k"), ["dt", "s", "k", "v"]),
        ("dt", Position.after("s"), ["k", "v", "s", "dt"]),
    ],
)
def test_move_column(name: str, position: Position, order: list[str]) -> None:
    out = _apply(UpdateColumnPosition(name, position))
    assert _doc(out) == _expect([F[n] for n in order], 6)


# --------------------------------------------------------------------- options
def test_options_set_and_remove() -> None:
    out = _apply(
        SetOption("snapshot.num-retained.max", "5"), RemoveOption("fields.v.aggregate-function")
    )
    assert out.options == {"bucket": "2", "snapshot.num-retained.max": "5"}
    assert out.id == 5 and out.fields == _base().fields


@pytest.mark.parametrize(
    "key",
    [
        "merge-engine",
        "sequence.field",
        "bucket-key",
        "rowkind.field",
        "ignore-delete",
        "partial-update.remove-record-on-delete",
        "force-lookup",
        "primary-key",
        "partition",
    ],
)
def test_immutable_options_with_snapshots(key: str) -> None:
    with pytest.raises(UnsupportedFeatureError, match=f"Change '{key}' is not supported"):
        _apply(SetOption(key, "x"))
    with pytest.raises(UnsupportedFeatureError, match=f"Change '{key}' is not supported"):
        _apply(RemoveOption(key))


def test_immutable_options_before_the_first_snapshot() -> None:
    out = _apply(SetOption("merge-engine", "aggregation"), has_snapshots=False)
    assert out.options["merge-engine"] == "aggregation"


@pytest.mark.parametrize(
    ("old", "new", "match"),
    [
        ("2", "-1", "to -1"),
        ("-1", "2", "when it is -1"),
    ],
)
def test_bucket_changes_with_snapshots(old: str, new: str, match: str) -> None:
    base = _base(options={"bucket": old})
    with pytest.raises(UnsupportedFeatureError, match=match):
        _apply(SetOption("bucket", new), base=base)
    with pytest.raises(UnsupportedFeatureError, match="reset bucket"):
        _apply(RemoveOption("bucket"), base=base)
    assert _apply(SetOption("bucket", new), base=base, has_snapshots=False).options == {
        "bucket": new
    }


def test_another_fixed_bucket_count_with_snapshots_is_allowed() -> None:
    """Paimon's ``checkAlterTableOption`` refuses only -1 on either side: a fixed count may
    change with data in the table (the partitions are rescaled afterwards)."""
    base = _base(options={"bucket": "2"})
    assert _apply(SetOption("bucket", "5"), base=base).options == {"bucket": "5"}


def test_sequence_field_must_survive() -> None:
    base = _base(options={"bucket": "2", "sequence.field": "s"})
    with pytest.raises(ConfigurationError, match=r"'sequence\.field' names column 's'"):
        _apply(DropColumn("s"), base=base)


def test_deletion_vector_mode_switches_only_when_modifiable() -> None:
    """Paimon's SchemaManager: deletion-vectors.enabled may change value only with
    deletion-vectors.modifiable = true (snapshots or not); setting the same value is fine."""
    for has_snapshots in (True, False):
        with pytest.raises(UnsupportedFeatureError, match=r"deletion-vectors\.modifiable"):
            _apply(SetOption("deletion-vectors.enabled", "true"), has_snapshots=has_snapshots)
    assert (
        _apply(SetOption("deletion-vectors.enabled", "false")).options["deletion-vectors.enabled"]
        == "false"
    )
    out = _apply(
        SetOption("deletion-vectors.modifiable", "true"),
        SetOption("deletion-vectors.enabled", "true"),
    )
    assert out.options["deletion-vectors.enabled"] == "true"
    locked = dataclasses.replace(
        out, options={**out.options, "deletion-vectors.modifiable": "false"}
    )
    with pytest.raises(UnsupportedFeatureError, match="from true to false"):
        _apply(RemoveOption("deletion-vectors.enabled"), base=locked)


# ---------------------------------------------------------------- nested fields
NESTED_BASE = {
    **BASE,
    "fields": [
        *BASE["fields"],
        {
            "id": 7,
            "name": "r",
            "type": {
                "type": "ROW",
                "fields": [
                    {"id": 8, "name": "a", "type": "INT"},
                    {
                        "id": 9,
                        "name": "inner",
                        "type": {"type": "ROW", "fields": [{"id": 10, "name": "x", "type": "INT"}]},
                    },
                ],
            },
        },
        {
            "id": 11,
            "name": "arr",
            "type": {
                "type": "ARRAY",
                "element": {"type": "ROW", "fields": [{"id": 12, "name": "e", "type": "INT"}]},
            },
        },
    ],
    "highestFieldId": 12,
}


def _nested() -> TableSchema:
    return TableSchema.from_json(json.dumps(NESTED_BASE))


def _row_fields(schema: TableSchema, name: str) -> list[tuple[int, str, str]]:
    t = schema.field(name).type
    t = t.element if t.root == "ARRAY" and t.element is not None else t
    return [(i, n, str(ft)) for i, n, ft in t.fields]


def test_nested_changes_follow_paimons_field_id_rules() -> None:
    out = _apply(
        AddColumn(("r", "b"), T("STRING"), position=Position.after("a")),  # id 13
        AddColumn(("r", "inner", "y"), T("BIGINT"), position=Position.FIRST),  # id 14
        RenameColumn(("r", "a"), "a2"),
        UpdateColumnType(("r", "a2"), T("BIGINT")),
        DropColumn(("r", "inner", "x")),
        AddColumn(("arr", "element", "f"), T("STRING")),  # id 15, through the ARRAY
        base=_nested(),
    )
    assert _row_fields(out, "r")[:2] == [(8, "a2", "BIGINT"), (13, "b", "STRING")]
    inner = out.field("r").type.fields[2]
    assert (inner[0], inner[1]) == (9, "inner")
    assert [(i, n, str(t)) for i, n, t in inner[2].fields] == [(14, "y", "BIGINT")]
    assert _row_fields(out, "arr") == [(12, "e", "INT"), (15, "f", "STRING")]
    assert out.highest_field_id == 15
    # a nested ROW column added whole numbers its fields after it, inner first (as top level)
    deep = T({"type": "ROW", "fields": [{"id": 0, "name": "q", "type": "INT"}]})
    again = _apply(AddColumn(("r", "deep"), deep), base=out)
    assert again.highest_field_id == 17
    assert again.field("r").type.fields[-1][0] == 16
    assert again.field("r").type.fields[-1][2].fields[0][0] == 17


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        (AddColumn(("r", "a"), T("INT")), ConfigurationError, "'r.a' already exists"),
        (AddColumn(("r", "n"), T("INT NOT NULL")), ConfigurationError, "NOT NULL"),
        (AddColumn(("r", "zz", "n"), T("INT")), ConfigurationError, "'r.zz.n' does not exist"),
        (AddColumn(("v", "n"), T("INT")), ConfigurationError, "reaches a INT, not a ROW"),
        (AddColumn(("arr", "e"), T("INT")), ConfigurationError, "reaches a ARRAY"),
        (RenameColumn(("r", "a"), "inner"), ConfigurationError, "already exists beside it"),
        (DropColumn(("r", "inner", "x")), ConfigurationError, "last field of its ROW"),
        (UpdateColumnType(("r", "a"), T("SMALLINT")), UnsupportedFeatureError, "widening"),
        (UpdateColumnNullability(("r", "a"), False), UnsupportedFeatureError, "'r.a' NOT NULL"),
        (DropColumn(()), ConfigurationError, "non-empty name or a path"),
    ],
)
def test_nested_refusals(change: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        _apply(change, base=_nested())


def _described(doc: Any) -> dict[str, str]:
    """Every field's description in a schema document, by the field's id (any depth)."""
    found: dict[str, str] = {}
    if isinstance(doc, dict):
        if "id" in doc and "description" in doc:
            found[str(doc["id"])] = doc["description"]
        for value in doc.values():
            found |= _described(value)
    elif isinstance(doc, list):
        for value in doc:
            found |= _described(value)
    return found


def test_comments_of_nested_fields_are_kept_and_set() -> None:
    """A schema Paimon wrote with comments on nested fields keeps them through lakeops' changes
    (they used to be dropped from the next schema file), and a nested field's comment can be
    set or cleared as Paimon 1.x does (by the field's path)."""
    doc = json.loads(json.dumps(NESTED_BASE))
    doc["fields"][-2]["type"]["fields"][0]["description"] = "the a"  # r.a, id 8
    doc["fields"][-2]["type"]["fields"][1]["type"]["fields"][0]["description"] = "deep"  # id 10
    doc["fields"][-1]["type"]["element"]["fields"][0]["description"] = "in arrays"  # id 12
    base = TableSchema.from_json(json.dumps(doc))
    kept = _apply(AddColumn("n", T("INT")), RenameColumn(("r", "a"), "a2"), base=base)
    assert _described(_doc(kept)) == {"8": "the a", "10": "deep", "12": "in arrays"}
    changed = _apply(
        UpdateColumnComment(("r", "inner", "x"), "deeper"),
        UpdateColumnComment(("r", "a"), None),
        UpdateColumnComment(("arr", "element", "e"), "e's"),
        AddColumn(("r", "b"), T("STRING"), comment="new b"),  # id 13
        base=base,
    )
    assert _described(_doc(changed)) == {"10": "deeper", "12": "e's", "13": "new b"}
    assert base.field("r").type == _nested().field("r").type  # comments are not identity


def test_a_one_name_path_is_the_column() -> None:
    assert _doc(_apply(RenameColumn(("s",), "w"))) == _doc(_apply(RenameColumn("s", "w")))
