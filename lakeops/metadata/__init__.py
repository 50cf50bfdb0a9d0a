"""Paimon's system tables (``db.t$snapshots``, ``$files`` …) of a table as Arrow tables; see
:mod:`lakeops.metadata.system_tables`."""

from lakeops.metadata.system_tables import (
    AUDIT_LOG_ROW_KIND,
    SYSTEM_TABLE_SEPARATOR,
    SYSTEM_TABLES,
    metadata_table,
    split_system_table,
    system_table_schema,
)

__all__ = [
    "AUDIT_LOG_ROW_KIND",
    "SYSTEM_TABLES",
    "SYSTEM_TABLE_SEPARATOR",
    "metadata_table",
    "split_system_table",
    "system_table_schema",
]
