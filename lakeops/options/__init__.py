"""The one owner of table options: one :class:`~lakeops.options.option.Option` row per key
(key, default, form, range, status; the rows by theme in the ``rows_*`` modules, looked up by
:mod:`lakeops.options.registry`), and the families that read a table's options through them,
parsed once: the table-wide :class:`TableOptions` and one family per concern (compaction,
changelog, dynamic buckets, commit retries, automatic tags, append tables)."""

from lakeops.options.table import MERGE_ENGINES, TableOptions

__all__ = ["MERGE_ENGINES", "TableOptions"]
