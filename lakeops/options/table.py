"""A typed view of a table's Paimon options, parsed and validated once.

Options keep Paimon's names and defaults (see ``paimon-options.md``). Values are strings in the
schema file; :class:`TableOptions` parses them and raises :class:`ConfigurationError` naming the
option, the bad value and the fix. Options lakeops does not interpret are kept and written back
untouched, so Paimon's own readers still see them. Which options lakeops honours, ignores or
refuses (and the checks at create, write and read) is :mod:`lakeops.options.registry`;
:meth:`TableOptions.require_writable` and :meth:`TableOptions.require_readable` apply it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from lakeops.errors import ConfigurationError, UnsupportedFeatureError
from lakeops.format.schema import TableSchema
from lakeops.options import registry as option_registry
from lakeops.options.parsing import option_bool, option_list, parse_memory_size

__all__ = ["MERGE_ENGINES", "TableOptions"]

MERGE_ENGINES = ("deduplicate", "partial-update", "aggregation", "first-row")
#: engines whose merge functions this version implements
IMPLEMENTED_ENGINES = MERGE_ENGINES


@dataclass(frozen=True)
class TableOptions:
    """The options lakeops interprets, with Paimon's defaults."""

    bucket: int
    merge_engine: str
    sequence_fields: tuple[str, ...]
    sequence_descending: bool
    rowkind_field: str | None
    ignore_delete: bool
    ignore_update_before: bool
    target_file_size: int
    write_buffer_size: int
    deletion_vectors: bool
    partition_default_name: str
    #: ``partition.legacy-name`` (Paimon 1.0+, default true; 0.9 always names as if true)
    partition_legacy_name: bool
    manifest_merge_min_count: int

    @classmethod
    def from_schema(cls, schema: TableSchema) -> TableOptions:
        """Parse and validate the options of ``schema`` against its fields."""
        o = schema.options
        names = schema.field_names
        try:
            bucket = int(o.get("bucket", "-1"))
        except ValueError:
            raise ConfigurationError(
                f"option 'bucket' must be an integer, got {o['bucket']!r}"
            ) from None
        if bucket == 0 or bucket < -2:
            raise ConfigurationError(
                f"option 'bucket' = {bucket} is invalid: use a positive bucket count such as "
                "'4' (or -1 for dynamic bucket mode)"
            )
        engine = o.get("merge-engine", "deduplicate").strip().lower()
        if engine not in MERGE_ENGINES:
            raise ConfigurationError(
                f"option 'merge-engine' = {engine!r} is unknown; choose one "
                f"of {', '.join(MERGE_ENGINES)}"
            )
        seq = option_list(o.get("sequence.field"))
        for f in seq:
            if f not in names:
                raise ConfigurationError(
                    f"option 'sequence.field' names unknown column {f!r} (columns: {names})"
                )
            if f in schema.primary_keys:
                raise ConfigurationError(
                    f"option 'sequence.field' names primary-key column "
                    f"{f!r}; a sequence field must be a value column"
                )
        order = o.get("sequence.field.sort-order", "ascending").strip().lower()
        if order not in ("ascending", "descending"):
            raise ConfigurationError(
                "option 'sequence.field.sort-order' must be 'ascending' or "
                f"'descending', got {order!r}"
            )
        rowkind = o.get("rowkind.field")
        if rowkind is not None:
            if rowkind not in names:
                raise ConfigurationError(
                    f"option 'rowkind.field' names unknown column {rowkind!r} (columns: {names})"
                )
            if not schema.field(rowkind).type.is_string:
                raise ConfigurationError(
                    f"option 'rowkind.field' column {rowkind!r} must be a "
                    "STRING column holding '+I', '-U', '+U' or '-D'"
                )
        if not schema.primary_keys:
            _check_append_buckets(schema, bucket)
        elif bucket == -1 and o.get("bucket-key"):
            raise ConfigurationError(
                "option 'bucket-key' cannot be used in dynamic bucket mode (bucket = -1), where "
                "keys are placed by the trimmed primary key; remove it or set a bucket count"
            )
        if bucket == -1 and schema.cross_partition_update and seq:
            raise ConfigurationError(
                "option 'sequence.field' cannot be used when the primary key does not contain "
                "every partition field (cross-partition upsert, as in Paimon)"
            )
        for k in schema.bucket_keys if schema.primary_keys else ():
            if k not in schema.trimmed_primary_keys:
                raise ConfigurationError(
                    f"option 'bucket-key' column {k!r} must be a primary-key column that is not "
                    f"a partition column (allowed: {schema.trimmed_primary_keys})"
                )
        target = parse_memory_size(o.get("target-file-size", "128 mb"), "target-file-size")
        buffer = parse_memory_size(o.get("write-buffer-size", "256 mb"), "write-buffer-size")
        if target <= 0 or buffer <= 0:
            raise ConfigurationError(
                "options 'target-file-size' and 'write-buffer-size' must be positive"
            )
        try:
            merge_min = int(o.get("manifest.merge-min-count", "30"))
        except ValueError as exc:
            raise ConfigurationError(f"integer option has a bad value: {exc}") from None
        return cls(
            bucket=bucket,
            merge_engine=engine,
            sequence_fields=seq,
            sequence_descending=order == "descending",
            rowkind_field=rowkind,
            ignore_delete=option_bool(
                o,
                "ignore-delete",
                False,
                "first-row.ignore-delete",
                "deduplicate.ignore-delete",
                "partial-update.ignore-delete",
            ),
            ignore_update_before=option_bool(o, "ignore-update-before", False),
            target_file_size=target,
            write_buffer_size=buffer,
            deletion_vectors=option_bool(o, "deletion-vectors.enabled", False),
            partition_default_name=o.get("partition.default-name", "__DEFAULT_PARTITION__"),
            partition_legacy_name=option_bool(o, "partition.legacy-name", True),
            manifest_merge_min_count=max(merge_min, 1),
        )

    def require_supported(self) -> None:
        """Raise :class:`UnsupportedFeatureError` for modes this version cannot write/read."""
        if self.bucket == -2:
            raise UnsupportedFeatureError(
                "postpone bucket mode (bucket = -2) is not supported yet; create the table with "
                "a fixed bucket count (e.g. options={'bucket': '4'}) or dynamic buckets (-1)"
            )
        if self.merge_engine not in IMPLEMENTED_ENGINES:
            raise UnsupportedFeatureError(
                f"merge-engine {self.merge_engine!r} is not supported yet (supported: "
                f"{', '.join(IMPLEMENTED_ENGINES)})"
            )

    @staticmethod
    def require_writable(schema: TableSchema, action: str, table: str = "table") -> None:
        """Refuse to ``action`` a table whose options lakeops cannot honour exactly (or does
        not know, or whose values lie outside their ranges, as another engine may have set
        them); see :func:`lakeops.options.registry.check_writable` and
        :mod:`lakeops.options.values`."""
        from lakeops.options.auto_tag import AutoTagOptions
        from lakeops.options.values import check_option_values  # (it imports this module)

        options: Mapping[str, str] = schema.options
        if not schema.primary_keys:
            # an append table's deletion vectors are applied on read; lakeops' appends add no
            # vectors and carry the index forward, its compactions refuse files with vectors
            options = {k: v for k, v in options.items() if k != "deletion-vectors.enabled"}
        option_registry.check_writable(options, action, table)
        try:
            check_option_values(schema.options)
            AutoTagOptions.from_options(schema.options)  # its enumerations and the delay
        except ConfigurationError as exc:
            raise ConfigurationError(f"lakeops refuses to {action} {table}: {exc}") from None

    @staticmethod
    def require_readable(schema: TableSchema, table: str = "table") -> None:
        """Refuse to read a table whose options would make the result wrong."""
        option_registry.check_readable(schema.options, table)

    @property
    def skips_level0_in_batch_reads(self) -> bool:
        """First-row tables and deletion-vector tables hide level 0 from batch scans."""
        return self.merge_engine == "first-row" or self.deletion_vectors


def _check_append_buckets(schema: TableSchema, bucket: int) -> None:
    """Paimon's bucket rules for a table without a primary key: ``bucket = -1`` (unaware, the
    default) takes no ``bucket-key``; a bucket count needs ``bucket-key`` columns of the table
    that are not partition columns."""
    keys = schema.bucket_keys
    if bucket == -1:
        if keys:
            raise ConfigurationError(
                "option 'bucket-key' cannot be used with bucket = -1 (an unaware-bucket append "
                "table places rows in no bucket by key); remove it or set a bucket count"
            )
        return
    if bucket > 0 and not keys:
        raise ConfigurationError(
            f"a table without a primary key and bucket = {bucket} needs option 'bucket-key' "
            "(the columns whose hash picks each row's bucket), e.g. {'bucket-key': 'id'}; or "
            "leave 'bucket' unset for an unaware-bucket append table"
        )
    for k in keys:
        if k not in schema.field_names:
            raise ConfigurationError(
                f"option 'bucket-key' names unknown column {k!r} (columns: {schema.field_names})"
            )
        if k in schema.partition_keys:
            raise ConfigurationError(
                f"option 'bucket-key' column {k!r} is a partition column; bucket keys must be "
                "other columns"
            )
