"""A table's options, parsed once: the table-wide :class:`TableOptions` and one family per
concern (compaction, changelog, dynamic buckets)."""

from lakeops.options.table import MERGE_ENGINES, TableOptions

__all__ = ["MERGE_ENGINES", "TableOptions"]
