"""The changelog options of a table (Paimon's names and defaults)."""

from __future__ import annotations

from dataclasses import dataclass

from lakeops.errors import ConfigurationError
from lakeops.format.schema import TableSchema
from lakeops.options import TableOptions
from lakeops.options.parsing import option_bool, option_list, parse_memory_size

__all__ = ["PRODUCERS", "ChangelogOptions"]

PRODUCERS = ("none", "input", "lookup", "full-compaction")


@dataclass(frozen=True)
class ChangelogOptions:
    """``changelog-producer`` and the options that shape its output."""

    producer: str
    row_deduplicate: bool
    ignore_fields: tuple[str, ...]
    full_compaction_delta_commits: int
    lookup_cache_bytes: int

    @classmethod
    def from_schema(cls, schema: TableSchema, table: TableOptions) -> ChangelogOptions:
        o = schema.options
        producer = o.get("changelog-producer", "none").strip().lower()
        if producer not in PRODUCERS:
            raise ConfigurationError(
                f"option 'changelog-producer' = {producer!r} is unknown; "
                f"choose one of {', '.join(PRODUCERS)}"
            )
        ignore = option_list(o.get("changelog-producer.row-deduplicate-ignore-fields"))
        unknown = [f for f in ignore if f not in schema.field_names]
        if unknown:
            raise ConfigurationError(
                "option 'changelog-producer.row-deduplicate-ignore-fields' names unknown "
                f"column(s) {unknown} (columns: {schema.field_names})"
            )
        try:
            delta = int(o.get("full-compaction.delta-commits", "1"))
        except ValueError:
            raise ConfigurationError(
                "option 'full-compaction.delta-commits' must be an integer"
            ) from None
        return cls(
            producer=producer,
            row_deduplicate=option_bool(o, "changelog-producer.row-deduplicate", False),
            ignore_fields=ignore,
            full_compaction_delta_commits=max(delta, 1),
            lookup_cache_bytes=parse_memory_size(
                o.get("lookup.cache-max-memory-size", "256 mb"), "lookup.cache-max-memory-size"
            ),
        )
