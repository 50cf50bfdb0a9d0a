"""Publishing table schemas: ``schema-0`` at creation and ``schema-N+1`` for a change.

A schema file is published like a snapshot: written with an exclusive create, so of two
concurrent changes exactly one wins and the other is re-validated against the winner and
tried again. Every option of the new schema is checked before anything is written.
"""

from __future__ import annotations

from collections.abc import Sequence

from lakeops.errors import CommitConflictError, UnsupportedFeatureError
from lakeops.format import paths
from lakeops.format.schema import TableSchema
from lakeops.format.schema_change import SchemaChange, apply_changes
from lakeops.kv.formats import check_writable
from lakeops.maintenance.expire import Retention
from lakeops.merge import create_merge_engine
from lakeops.options import TableOptions
from lakeops.options.auto_tag import AutoTagOptions
from lakeops.options.changelog import ChangelogOptions
from lakeops.options.combinations import check_combinations
from lakeops.options.compaction import CompactOptions
from lakeops.options.registry import check_create_options, check_option_values
from lakeops.options.rows_layout import manifest_format
from lakeops.store import TableStore
from lakeops.store.locations import partition_paths

__all__ = ["alter_schema", "validate_schema"]

#: how often a schema change is re-tried on top of a concurrent one before giving up
MAX_ATTEMPTS = 10


def validate_schema(
    schema: TableSchema, action: str = "create this table", before: TableSchema | None = None
) -> None:
    """Raise (ConfigurationError / UnsupportedFeatureError) unless every option and key of
    ``schema`` is one lakeops honours exactly (every typed value in its range first) and
    Paimon accepts (``before``: the schema an ALTER changes; see
    :func:`~lakeops.options.combinations.check_combinations`)."""
    check_option_values(schema.options)
    parsed = TableOptions.from_schema(schema)
    check_combinations(schema, before)
    check_writable(schema, action)  # Parquet layouts lakeops can write exactly
    create_merge_engine(parsed, schema)
    CompactOptions.from_schema(schema, parsed)
    ChangelogOptions.from_schema(schema)
    Retention.from_options(schema)
    _check_key_types(schema, parsed.sequence_fields)
    partition_paths(schema, parsed)  # partition types Paimon can name
    manifest_format(schema.options)  # manifest.format and manifest.compression
    AutoTagOptions.from_options(schema.options)  # tag period, formatter and delay


def _check_key_types(schema: TableSchema, sequence_fields: Sequence[str]) -> None:
    """Refuse a VARIANT, ARRAY, MAP, MULTISET or ROW column as a primary key or partition
    (Paimon's ``SchemaValidation`` refuses them), bucket key or sequence field (lakeops hashes
    and orders only values a BinaryRow holds)."""
    roles = (
        ("primary-key", schema.primary_keys),
        ("partition", schema.partition_keys),
        ("bucket-key", schema.bucket_keys),
        ("sequence.field", sequence_fields),
    )
    for role, names in roles:
        for name in names:
            if name in schema.field_names and not schema.field(name).type.keyable:
                raise UnsupportedFeatureError(
                    f"column {name!r} is {schema.field(name).type}, which cannot be a {role} "
                    "column (Paimon accepts only primitive types as keys and partitions); use a "
                    "primitive column"
                )


def alter_schema(store: TableStore, changes: Sequence[SchemaChange]) -> TableSchema:
    """Apply ``changes`` to the latest schema of the table in ``store`` and publish the result
    as the next ``schema-N`` (Paimon's field ids and ``highestFieldId``). Returns it.

    Raises before writing anything if Paimon would refuse a change, or if the new schema has an
    option lakeops cannot honour; :class:`CommitConflictError` if other changes kept winning.
    """
    for _ in range(MAX_ATTEMPTS):
        latest = store.latest_schema()
        has_snapshots = store.latest_snapshot_id() is not None
        new = apply_changes(latest, list(changes), has_snapshots)
        # options this change sets: unknown keys (did-you-mean) and refused values
        check_create_options(new.options, latest.options)
        validate_schema(new, "apply this schema change", latest)
        if store.file_io.publish_exclusive(
            store.path(paths.schema_path(new.id)), new.to_json().encode()
        ):
            return new
    raise CommitConflictError(
        f"could not publish a new schema of {store.root}: other schema changes kept "
        "winning; retry the change"
    )
