"""The changelog options of a table (Paimon's names and defaults)."""

from __future__ import annotations

from dataclasses import dataclass

from lakeops.errors import ConfigurationError
from lakeops.format.schema import TableSchema
from lakeops.options.rows_write import (
    CHANGELOG_PRODUCER,
    CHANGELOG_ROW_DEDUPLICATE,
    CHANGELOG_ROW_DEDUPLICATE_IGNORE_FIELDS,
    FULL_COMPACTION_DELTA_COMMITS,
    LOOKUP_CACHE_MAX_MEMORY_SIZE,
    PRODUCERS,
)

__all__ = ["PRODUCERS", "ChangelogOptions"]


@dataclass(frozen=True)
class ChangelogOptions:
    """``changelog-producer`` and the options that shape its output."""

    producer: str
    row_deduplicate: bool
    ignore_fields: tuple[str, ...]
    full_compaction_delta_commits: int
    lookup_cache_bytes: int

    @classmethod
    def from_schema(cls, schema: TableSchema) -> ChangelogOptions:
        o = schema.options
        producer = CHANGELOG_PRODUCER.get(o)
        ignore = CHANGELOG_ROW_DEDUPLICATE_IGNORE_FIELDS.get(o)
        unknown = [f for f in ignore if f not in schema.field_names]
        if unknown:
            raise ConfigurationError(
                "option 'changelog-producer.row-deduplicate-ignore-fields' names unknown "
                f"column(s) {unknown} (columns: {schema.field_names})"
            )
        return cls(
            producer=producer,
            row_deduplicate=CHANGELOG_ROW_DEDUPLICATE.get(o),
            ignore_fields=ignore,
            full_compaction_delta_commits=FULL_COMPACTION_DELTA_COMMITS.get(o),
            lookup_cache_bytes=LOOKUP_CACHE_MAX_MEMORY_SIZE.get(o),
        )
