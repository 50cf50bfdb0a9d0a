"""The public face of a table: :class:`Table` (with a primary key;
:mod:`lakeops.table.primary_key`) and :class:`AppendTable` (without; :mod:`lakeops.table.append`),
over what both share (:mod:`lakeops.table.base`): writes, commits, compaction, reads (one
:class:`Scan`, :mod:`lakeops.table.scan`), snapshots, tags, schema changes
(:mod:`lakeops.table.schema_commit`), maintenance and Paimon's system tables
(:mod:`lakeops.table.system_tables`)."""

from __future__ import annotations

from typing import TypeAlias

from lakeops.errors import UnsupportedFeatureError
from lakeops.table.append import AppendTable
from lakeops.table.primary_key import Table
from lakeops.table.scan import Scan

__all__ = ["AnyTable", "AppendTable", "Scan", "Table", "primary_key_table"]

#: what a catalog opens: a primary-key table or an append table (no primary key)
AnyTable: TypeAlias = Table | AppendTable


def primary_key_table(table: AnyTable, method: str) -> Table:
    """``table`` itself if it has a primary key; for an append table an
    :class:`~lakeops.errors.UnsupportedFeatureError` naming ``method`` (which only a
    primary-key table has: sorted runs and levels, lookups by key, level-0 flushes)."""
    if isinstance(table, Table):
        return table
    raise UnsupportedFeatureError(
        f"{method} is for primary-key tables; {table.identifier!r} is an append table (no "
        "primary key): nothing was read or written"
    )
