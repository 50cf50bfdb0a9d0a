"""The rows of merging: the merge engine, retractions, sequence fields, row kinds, and the
aggregation and partial-update options (``fields.<field>.…`` patterns among them)."""

from __future__ import annotations

from typing import Any

from lakeops.options.option import BOOL, LIST, STRING, Option, enum, honoured, refused, rng
from lakeops.options.rules import REMOVE, TRUE_REFUSED

__all__ = [
    "AGGREGATION_REMOVE_RECORD_ON_DELETE",
    "FIELDS_DEFAULT_AGGREGATE_FUNCTION",
    "FIELD_DISTINCT",
    "FIELD_IGNORE_RETRACT",
    "IGNORE_DELETE",
    "IGNORE_UPDATE_BEFORE",
    "MERGE_ENGINE",
    "MERGE_ENGINES",
    "PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE",
    "PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP",
    "ROWKIND_FIELD",
    "ROWS",
    "SEQUENCE_FIELD",
    "SEQUENCE_FIELD_SORT_ORDER",
]

MERGE_ENGINES = ("deduplicate", "partial-update", "aggregation", "first-row")
MERGE_ENGINE = honoured("deduplicate, partial-update, aggregation, first-row").row(
    "merge-engine", enum(*MERGE_ENGINES), "deduplicate"
)
_RETRACTIONS = honoured("dropping retractions")
#: the engine-specific keys are Paimon's older spellings of 'ignore-delete'
IGNORE_DELETE = _RETRACTIONS.row(
    "ignore-delete",
    BOOL,
    False,
    rng(),
    fallbacks=(
        "first-row.ignore-delete",
        "deduplicate.ignore-delete",
        "partial-update.ignore-delete",
    ),
)
_ENGINE_IGNORE_DELETE = tuple(
    _RETRACTIONS.row(k, BOOL, False, rng())
    for k in (
        "first-row.ignore-delete",
        "deduplicate.ignore-delete",
        "partial-update.ignore-delete",
    )
)
IGNORE_UPDATE_BEFORE = _RETRACTIONS.row("ignore-update-before", BOOL, False, rng())
_SEQUENCE = honoured("sequence fields and their order")
SEQUENCE_FIELD = _SEQUENCE.row("sequence.field", LIST, ())
SEQUENCE_FIELD_SORT_ORDER = _SEQUENCE.row(
    "sequence.field.sort-order", enum("ascending", "descending"), "ascending"
)
_SNAPSHOT_ORDERING = honoured(
    "records are ordered by sequence number / sequence.field, not by snapshot id",
    refuse_value=TRUE_REFUSED,
    fix="remove it",
).row("sequence.snapshot-ordering", BOOL, False, rng())
ROWKIND_FIELD = honoured("row kind taken from a STRING column").row("rowkind.field", STRING)
_AGG = honoured("aggregation and partial-update merge options")
AGGREGATION_REMOVE_RECORD_ON_DELETE = _AGG.row(
    "aggregation.remove-record-on-delete", BOOL, False, rng()
)
PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE = _AGG.row(
    "partial-update.remove-record-on-delete", BOOL, False, rng()
)
PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP = _AGG.row(
    "partial-update.remove-record-on-sequence-group", LIST, ()
)
FIELDS_DEFAULT_AGGREGATE_FUNCTION = _AGG.row("fields.default-aggregate-function", STRING)
#: pattern rows: read with ``key=f"fields.{name}.ignore-retract"``
FIELD_IGNORE_RETRACT = _AGG.row("fields.<field>.ignore-retract", BOOL, False, rng())
FIELD_DISTINCT = _AGG.row("fields.<field>.distinct", BOOL, False, rng())
_FIELD_PATTERNS = (
    _AGG.row("fields.<field>.aggregate-function", STRING),
    FIELD_IGNORE_RETRACT,
    _AGG.row("fields.<field>.list-agg-delimiter", STRING),
    FIELD_DISTINCT,
    _AGG.row("fields.<field>.nested-key", LIST, ()),
    _AGG.row("fields.<fields>.sequence-group", LIST, ()),
    _AGG.row("fields.<field>.ts-field", STRING),
)
_NOT_IMPLEMENTED = refused("this aggregate option is not implemented by lakeops", REMOVE).rows(
    "fields.<field>.nested-key-null-strategy",
    "fields.<field>.nested-sequence-field",
    "fields.<field>.count-limit",
    "fields.<field>.map.storage-layout",
)
_DEFAULT_VALUE = refused(
    "Paimon fills NULLs of this column with a default value when reading; lakeops does not",
    REMOVE,
    reads_wrong=True,
).rows("fields.<field>.default-value")
_AUTO_PADDING = refused(
    "sequence-field padding (Paimon < 0.9) is not implemented",
    REMOVE,
).rows("sequence.auto-padding")

ROWS: tuple[Option[Any], ...] = (
    MERGE_ENGINE,
    IGNORE_DELETE,
    *_ENGINE_IGNORE_DELETE,
    IGNORE_UPDATE_BEFORE,
    SEQUENCE_FIELD,
    SEQUENCE_FIELD_SORT_ORDER,
    _SNAPSHOT_ORDERING,
    ROWKIND_FIELD,
    AGGREGATION_REMOVE_RECORD_ON_DELETE,
    PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE,
    PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP,
    FIELDS_DEFAULT_AGGREGATE_FUNCTION,
    *_FIELD_PATTERNS,
    *_NOT_IMPLEMENTED,
    *_DEFAULT_VALUE,
    *_AUTO_PADDING,
)
