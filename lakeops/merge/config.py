"""Parsing and validating the ``fields.*`` options of aggregation and partial-update tables.

Every rule is checked when the table is created (and whenever it is opened), so a mistake is
reported with the option, the field and the fix — never discovered halfway through a write:

* unknown aggregate functions (there is no ``count``) and functions that do not fit the type;
* options naming fields the table does not have;
* partial-update: an aggregate function other than ``last_non_null_value`` on a field that no
  sequence group protects; a field in two groups; a primary-key field used as a sequence or
  protected field; ``partial-update.remove-record-on-delete`` together with ``ignore-delete`` or
  with sequence groups; ``partial-update.remove-record-on-sequence-group`` naming something other
  than a sequence field, or together with ``ignore-delete``;
* aggregation: ``aggregation.remove-record-on-delete`` together with ``fields.<f>.ignore-retract``.
"""

from __future__ import annotations

from dataclasses import dataclass

from lakeops.errors import ConfigurationError
from lakeops.format.schema import TableSchema
from lakeops.merge.aggregators import Aggregator, FieldAggOptions, create_aggregator
from lakeops.options import TableOptions
from lakeops.options.parsing import option_list
from lakeops.options.rows_merge import (
    AGGREGATION_REMOVE_RECORD_ON_DELETE,
    FIELD_DISTINCT,
    FIELD_IGNORE_RETRACT,
    FIELDS_DEFAULT_AGGREGATE_FUNCTION,
    PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE,
    PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP,
)

__all__ = ["MergeConfig", "SequenceGroup", "parse_merge_config"]

_SUFFIXES = (
    "aggregate-function",
    "ignore-retract",
    "list-agg-delimiter",
    "distinct",
    "nested-key",
    "sequence-group",
    "nested-key-null-strategy",
    "nested-sequence-field",
    "count-limit",
    "ts-field",
)
LAST_NON_NULL = "last_non_null_value"


@dataclass(frozen=True)
class SequenceGroup:
    """``fields.<s1>,<s2>.sequence-group = <f1>,<f2>``: ordering fields and protected fields."""

    sequence_fields: tuple[str, ...]
    protected: tuple[str, ...]


@dataclass(frozen=True)
class MergeConfig:
    """What the aggregation / partial-update engines need, parsed once."""

    aggregators: dict[str, Aggregator]
    groups: tuple[SequenceGroup, ...]
    remove_record_on_delete: bool
    remove_on_groups: tuple[str, ...]


def _field_options(schema: TableSchema) -> dict[tuple[str, str], str]:
    """``{(field, suffix): value}`` of every ``fields.<field>.<suffix>`` option."""
    out: dict[tuple[str, str], str] = {}
    for key, value in schema.options.items():
        if not key.startswith("fields.") or key == FIELDS_DEFAULT_AGGREGATE_FUNCTION.key:
            continue
        body = key[len("fields.") :]
        for suffix in _SUFFIXES:
            if body.endswith("." + suffix):
                out[(body[: -len(suffix) - 1], suffix)] = value
                break
    return out


def _agg_options(
    schema: TableSchema,
    fopts: dict[tuple[str, str], str],
    name: str,
) -> FieldAggOptions:
    o = schema.options
    return FieldAggOptions(
        ignore_retract=FIELD_IGNORE_RETRACT.get(o, key=f"fields.{name}.ignore-retract"),
        delimiter=fopts.get((name, "list-agg-delimiter"), ","),
        distinct=FIELD_DISTINCT.get(o, key=f"fields.{name}.distinct"),
        nested_key=option_list(fopts.get((name, "nested-key"))),
        ts_field=fopts.get((name, "ts-field")),
    )


def parse_merge_config(schema: TableSchema, options: TableOptions) -> MergeConfig:
    """Validate and parse the merge options of an aggregation or partial-update table."""
    fopts = _field_options(schema)
    _check_field_columns(schema.field_names, fopts)
    groups = _parse_groups(schema, fopts)
    if options.merge_engine == "aggregation" and groups:
        raise ConfigurationError(
            "sequence groups ('fields.<f>.sequence-group') belong to the "
            "partial-update engine; remove them or use partial-update"
        )
    aggregators = _aggregators(schema, options, fopts, groups)
    if options.merge_engine == "aggregation":
        return _aggregation_config(schema, aggregators)
    return _partial_update_config(schema, options, aggregators, groups)


def _check_field_columns(names: list[str], fopts: dict[tuple[str, str], str]) -> None:
    """Every ``fields.<f>.<suffix>`` option but a sequence group names an existing column."""
    for field, suffix in fopts:
        if suffix == "sequence-group":
            continue
        if field not in names:
            raise ConfigurationError(
                f"option 'fields.{field}.{suffix}' names unknown column "
                f"{field!r} (columns: {names})"
            )


def _aggregators(
    schema: TableSchema,
    options: TableOptions,
    fopts: dict[tuple[str, str], str],
    groups: tuple[SequenceGroup, ...],
) -> dict[str, Aggregator]:
    """The aggregate function of every value column that has one."""
    default = FIELDS_DEFAULT_AGGREGATE_FUNCTION.find(schema.options)
    pks = set(schema.primary_keys)
    protected = {f for g in groups for f in g.protected}
    seq_fields = {f for g in groups for f in g.sequence_fields} | set(options.sequence_fields)
    aggregators: dict[str, Aggregator] = {}
    for f in schema.fields:
        if f.name in pks:
            continue  # primary keys never aggregate
        explicit = fopts.get((f.name, "aggregate-function"))
        func: str | None
        if options.merge_engine == "aggregation":
            func = (
                "last_value"
                if f.name in options.sequence_fields
                else (explicit or default or LAST_NON_NULL)
            )
        else:
            if f.name in seq_fields:
                continue
            func = explicit or default
            if func is None:
                continue
            if func.strip().lower() != LAST_NON_NULL and f.name not in protected:
                raise ConfigurationError(
                    f"Must use sequence group for aggregation functions but not found for "
                    f"field {f.name!r} (function {func!r}); protect it with "
                    f"'fields.<sequence-field>.sequence-group' = '{f.name}' or use "
                    "'last_non_null_value'"
                )
        aggregators[f.name] = create_aggregator(
            func, f.name, f.type, _agg_options(schema, fopts, f.name)
        )
    return aggregators


def _aggregation_config(schema: TableSchema, aggregators: dict[str, Aggregator]) -> MergeConfig:
    """The aggregation engine's config: its aggregators and whether a ``-D`` removes the row."""
    remove = AGGREGATION_REMOVE_RECORD_ON_DELETE.get(schema.options)
    ignoring = [n for n, a in aggregators.items() if a.options.ignore_retract]
    if remove and ignoring:
        raise ConfigurationError(
            "'aggregation.remove-record-on-delete' conflicts with 'fields.<f>.ignore-retract'"
            f" (set for {ignoring}); keep only one of them"
        )
    return MergeConfig(aggregators, (), remove, ())


def _partial_update_config(
    schema: TableSchema,
    options: TableOptions,
    aggregators: dict[str, Aggregator],
    groups: tuple[SequenceGroup, ...],
) -> MergeConfig:
    """The partial-update engine's config: aggregators, sequence groups and how a ``-D``
    removes a row (whole, or by sequence group)."""
    o = schema.options
    remove = PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE.get(o)
    remove_groups = PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP.get(o)
    if remove and options.ignore_delete:
        raise ConfigurationError(
            "'partial-update.remove-record-on-delete' conflicts with "
            "'ignore-delete'; keep only one of them"
        )
    if remove and groups:
        raise ConfigurationError(
            "'partial-update.remove-record-on-delete' conflicts with "
            "sequence groups; use 'partial-update.remove-record-on-sequence-"
            "group' to delete rows by group"
        )
    if remove_groups:
        if options.ignore_delete:
            raise ConfigurationError(
                "'partial-update.remove-record-on-sequence-group' "
                "conflicts with 'ignore-delete'; keep only one of them"
            )
        all_seq = {f for g in groups for f in g.sequence_fields}
        bad = [f for f in remove_groups if f not in all_seq]
        if bad:
            raise ConfigurationError(
                f"'partial-update.remove-record-on-sequence-group' names {bad}, which are not "
                f"sequence fields of any sequence group (sequence fields: {sorted(all_seq)})"
            )
    return MergeConfig(aggregators, groups, remove, remove_groups)


def _parse_groups(
    schema: TableSchema,
    fopts: dict[tuple[str, str], str],
) -> tuple[SequenceGroup, ...]:
    names = schema.field_names
    pks = set(schema.primary_keys)
    groups = []
    owner: dict[str, str] = {}
    for (seq_text, suffix), value in sorted(fopts.items()):
        if suffix != "sequence-group":
            continue
        option = f"fields.{seq_text}.sequence-group"
        seq = option_list(seq_text)
        protected = option_list(value)
        if not seq or not protected:
            raise ConfigurationError(
                f"option {option!r} needs sequence fields in its key and "
                "protected fields in its value"
            )
        for f in seq + protected:
            if f not in names:
                raise ConfigurationError(
                    f"option {option!r} names unknown column {f!r} (columns: {names})"
                )
            if f in pks:
                raise ConfigurationError(
                    f"option {option!r} uses primary-key column {f!r}; "
                    "keys can be neither sequence nor protected fields"
                )
        for f in seq + protected:
            if f in owner and owner[f] != option:
                raise ConfigurationError(
                    f"Field {f!r} is defined repeatedly by multiple groups: {owner[f]!r} and "
                    f"{option!r}; a field may belong to only one sequence group"
                )
            owner[f] = option
        groups.append(SequenceGroup(seq, protected))
    return tuple(groups)
