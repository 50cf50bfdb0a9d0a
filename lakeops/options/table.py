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
from lakeops.options.rows_files import (
    DATA_EVOLUTION_ENABLED,
    DELETION_VECTORS_BITMAP64,
    DELETION_VECTORS_ENABLED,
    DELETION_VECTORS_MERGE_ON_READ,
    DV_INDEX_FILE_TARGET_SIZE,
    ROW_TRACKING_ENABLED,
)
from lakeops.options.rows_layout import (
    BUCKET,
    BUCKET_KEY,
    PARTITION_DEFAULT_NAME,
    PARTITION_LEGACY_NAME,
)
from lakeops.options.rows_merge import (
    IGNORE_DELETE,
    IGNORE_UPDATE_BEFORE,
    MERGE_ENGINE,
    MERGE_ENGINES,
    ROWKIND_FIELD,
    SEQUENCE_FIELD,
    SEQUENCE_FIELD_SORT_ORDER,
)
from lakeops.options.rows_retention import MANIFEST_MERGE_MIN_COUNT
from lakeops.options.rows_write import TARGET_FILE_SIZE, WRITE_BUFFER_SIZE

__all__ = ["MERGE_ENGINES", "TableOptions"]

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
    #: ``deletion-vectors.bitmap64``: vectors written in the 64-bit layout
    deletion_vectors_bitmap64: bool = False
    #: ``deletion-vectors.merge-on-read``: batch reads of level 0 too
    deletion_vectors_merge_on_read: bool = False
    #: ``deletion-vector.index-file.target-size``: where rewritten append-table index files roll
    dv_index_file_target_size: int = 2 << 20

    @classmethod
    def from_schema(cls, schema: TableSchema) -> TableOptions:
        """Parse and validate the options of ``schema`` against its fields."""
        o = schema.options
        names = schema.field_names
        bucket = BUCKET.get(o)
        engine = MERGE_ENGINE.get(o)
        seq = SEQUENCE_FIELD.get(o)
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
            if o.get(f"fields.{f}.aggregate-function") is not None:
                raise ConfigurationError(
                    f"option 'fields.{f}.aggregate-function' aggregates sequence field {f!r}; "
                    "a sequence field orders the records and is not aggregated (Paimon refuses "
                    "such a table): remove the option"
                )
        if len(set(seq)) != len(seq):
            raise ConfigurationError(
                f"option 'sequence.field' names a column more than once ({list(seq)}): name "
                "each once, as Paimon requires"
            )
        order = SEQUENCE_FIELD_SORT_ORDER.get(o)
        rowkind = ROWKIND_FIELD.find(o)
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
        _check_row_tracking(schema, bucket)
        if not schema.primary_keys:
            _check_append_buckets(schema, bucket)
        elif bucket == -1 and BUCKET_KEY.find(o, blank_is_unset=True):
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
        return cls(
            bucket=bucket,
            merge_engine=engine,
            sequence_fields=seq,
            sequence_descending=order == "descending",
            rowkind_field=rowkind,
            ignore_delete=IGNORE_DELETE.get(o),
            ignore_update_before=IGNORE_UPDATE_BEFORE.get(o),
            target_file_size=TARGET_FILE_SIZE.get(o, primary_key=bool(schema.primary_keys)),
            write_buffer_size=WRITE_BUFFER_SIZE.get(o),
            deletion_vectors=DELETION_VECTORS_ENABLED.get(o),
            partition_default_name=PARTITION_DEFAULT_NAME.get(o),
            partition_legacy_name=PARTITION_LEGACY_NAME.get(o),
            # 0 merges at every commit like 1 (Paimon's ManifestFileMerger)
            manifest_merge_min_count=max(MANIFEST_MERGE_MIN_COUNT.get(o), 1),
            deletion_vectors_bitmap64=DELETION_VECTORS_BITMAP64.get(o),
            deletion_vectors_merge_on_read=DELETION_VECTORS_MERGE_ON_READ.get(o),
            dv_index_file_target_size=DV_INDEX_FILE_TARGET_SIZE.get(o),
        )

    def require_supported(self) -> None:
        """Raise :class:`UnsupportedFeatureError` for modes this version cannot write/read."""
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
        the ranges of :mod:`lakeops.options.option`'s rows."""
        from lakeops.options.auto_tag import AutoTagOptions

        options: Mapping[str, str] = schema.options
        if not schema.primary_keys:
            # an append table's deletion vectors are applied on read; lakeops' appends add no
            # vectors and carry the index forward, its compactions refuse files with vectors
            options = {k: v for k, v in options.items() if k != DELETION_VECTORS_ENABLED.key}
        option_registry.check_writable(options, action, table)
        TableOptions.require_exact_key_values(schema, action, table)
        try:
            option_registry.check_option_values(schema.options)
            AutoTagOptions.from_options(schema.options)  # its enumerations and the delay
        except ConfigurationError as exc:
            raise ConfigurationError(f"lakeops refuses to {action} {table}: {exc}") from None

    @staticmethod
    def require_exact_key_values(schema: TableSchema, action: str, table: str = "table") -> None:
        """Refuse to ``action`` a table with a primary, partition or bucket key of TIMESTAMP or
        TIMESTAMP_LTZ with precision 7-9 in a process without pandas: writes, compactions and
        lookups take key values into Python, and pyarrow turns a nanosecond timestamp into a
        Python value (pandas' ``Timestamp``) only with pandas."""
        keys = dict.fromkeys([*schema.primary_keys, *schema.partition_keys, *schema.bucket_keys])
        nanosecond_keys = [
            f.name
            for f in schema.fields
            if f.name in keys
            and f.type.root in ("TIMESTAMP", "TIMESTAMP_LTZ")
            and (f.type.precision or 0) > 6
        ]
        if not nanosecond_keys:
            return
        try:  # as pyarrow finds it (only for such tables)
            import pandas  # noqa: F401
        except ImportError:
            raise UnsupportedFeatureError(
                f"lakeops refuses to {action} {table}: its key column(s) {nanosecond_keys} hold "
                "nanosecond timestamps, which pyarrow hands to Python only through pandas; "
                "install pandas (pip install 'lakeops[pandas]') and run it again"
            ) from None

    @staticmethod
    def require_readable(schema: TableSchema, table: str = "table") -> None:
        """Refuse to read a table whose options would make the result wrong."""
        option_registry.check_readable(schema.options, table)

    @property
    def skips_level0_in_batch_reads(self) -> bool:
        """First-row tables and deletion-vector tables hide level 0 from batch scans (unless
        ``deletion-vectors.merge-on-read``)."""
        return self.merge_engine == "first-row" or (
            self.deletion_vectors and not self.deletion_vectors_merge_on_read
        )


def _check_row_tracking(schema: TableSchema, bucket: int) -> None:
    """Paimon's rules for row tracking (``SchemaValidation.validateRowTracking``): only on a
    table without a primary key and with ``bucket = -1``; data evolution only with it."""
    o = schema.options
    tracked = ROW_TRACKING_ENABLED.get(o)
    if tracked and schema.primary_keys:
        raise ConfigurationError(
            "option 'row-tracking.enabled' cannot be used on a table with a primary key; "
            "remove it or the primary key"
        )
    if tracked and bucket != -1:
        raise ConfigurationError(
            f"option 'row-tracking.enabled' needs bucket = -1 (this table has bucket = "
            f"{bucket}); remove 'bucket' or row tracking"
        )
    if DATA_EVOLUTION_ENABLED.get(o) and not tracked:
        raise ConfigurationError(
            "option 'data-evolution.enabled' needs 'row-tracking.enabled' = 'true'; set it too"
        )


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
    if bucket == -2:
        raise ConfigurationError(
            "bucket = -2 (postpone buckets) needs a primary key, as in Paimon; give the table "
            "a primary key, or leave 'bucket' unset for an unaware-bucket append table"
        )
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
