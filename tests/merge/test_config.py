"""Every merge configuration mistake is refused at create time, naming option, field and fix."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from lakeops import Catalog, ConfigurationError

SCHEMA = pa.schema(
    [
        ("k", pa.int32()),
        ("a", pa.int32()),
        ("b", pa.int32()),
        ("g1", pa.int32()),
        ("g2", pa.int32()),
        ("s", pa.string()),
        ("arr", pa.list_(pa.struct([("id", pa.int32())]))),
    ]
)
PU = {"merge-engine": "partial-update"}
AGG = {"merge-engine": "aggregation"}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {**AGG, "fields.a.aggregate-function": "count"},
            "Use unsupported aggregation: count or spell aggregate function incorrectly!",
        ),
        ({**AGG, "fields.a.aggregate-function": "avg"}, "'fields.a.aggregate-function'"),
        ({**AGG, "fields.default-aggregate-function": "count"}, "count"),
        ({**AGG, "fields.zz.aggregate-function": "sum"}, "unknown column 'zz'"),
        ({**AGG, "fields.s.aggregate-function": "sum"}, "does not support type STRING"),
        ({**AGG, "fields.a.aggregate-function": "listagg"}, "does not support type INT"),
        (
            {
                **AGG,
                "fields.arr.aggregate-function": "nested_update",
                "fields.arr.nested-key": "nope",
            },
            "nested-key",
        ),
        (
            {
                **AGG,
                "aggregation.remove-record-on-delete": "true",
                "fields.a.ignore-retract": "true",
            },
            "conflicts with 'fields.<f>.ignore-retract'",
        ),
        ({**AGG, "fields.g1.sequence-group": "a"}, "belong to the partial-update engine"),
        ({**PU, "fields.a.aggregate-function": "sum"}, "Must use sequence group"),
        (
            {**PU, "fields.default-aggregate-function": "sum", "fields.g1.sequence-group": "a"},
            "Must use sequence group",
        ),
        (
            {**PU, "fields.g1.sequence-group": "a,b", "fields.g2.sequence-group": "b"},
            "defined repeatedly by multiple groups",
        ),
        ({**PU, "fields.k.sequence-group": "a"}, "primary-key column 'k'"),
        ({**PU, "fields.g1.sequence-group": "k"}, "primary-key column 'k'"),
        ({**PU, "fields.g1.sequence-group": "zz"}, "unknown column 'zz'"),
        ({**PU, "fields.zz.sequence-group": "a"}, "unknown column 'zz'"),
        (
            {**PU, "partial-update.remove-record-on-delete": "true", "ignore-delete": "true"},
            "conflicts with 'ignore-delete'",
        ),
        (
            {
                **PU,
                "partial-update.remove-record-on-delete": "true",
                "fields.g1.sequence-group": "a",
            },
            "conflicts with sequence groups",
        ),
        (
            {
                **PU,
                "fields.g1.sequence-group": "a",
                "partial-update.remove-record-on-sequence-group": "a",
            },
            "not sequence fields",
        ),
        (
            {
                **PU,
                "fields.g1.sequence-group": "a",
                "ignore-delete": "true",
                "partial-update.remove-record-on-sequence-group": "g1",
            },
            "conflicts with 'ignore-delete'",
        ),
        ({"merge-engine": "first-row", "sequence.field": "a"}, "cannot be used with merge-engine"),
        # Paimon's SchemaValidation.validateSequenceField: Java cannot open such a table
        (
            {**AGG, "sequence.field": "a", "fields.a.aggregate-function": "max"},
            "aggregates sequence field 'a'",
        ),
        ({"sequence.field": "a,a"}, "more than once"),
    ],
)
def test_rejected_at_create(catalog: Catalog, warehouse: Path, options: dict, message: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        catalog.create_table(
            "db.bad", schema=SCHEMA, primary_keys=["k"], options={"bucket": "1", **options}
        )
    assert message in str(info.value)
    assert not (warehouse / "db.db" / "bad").exists()


@pytest.mark.parametrize(
    "options",
    [
        {**PU, "fields.g1.sequence-group": "a", "fields.a.aggregate-function": "sum"},
        {**PU, "fields.default-aggregate-function": "last_non_null_value"},
        {
            **PU,
            "fields.g1,g2.sequence-group": "a,b",
            "partial-update.remove-record-on-sequence-group": "g2",
        },
        {**AGG, "fields.a.aggregate-function": "SUM", "fields.k.aggregate-function": "max"},
    ],
)
def test_accepted(catalog: Catalog, options: dict) -> None:
    catalog.create_table(
        "db.ok", schema=SCHEMA, primary_keys=["k"], options={"bucket": "1", **options}
    )
