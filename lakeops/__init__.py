"""lakeops: Apache Paimon tables (primary-key and append tables) from Python.

Write, read, merge and compact tables in Paimon's own on-disk format, vectorised over Arrow::

    import pyarrow as pa
    from lakeops import Catalog

    catalog = Catalog("/tmp/warehouse")
    catalog.create_database("db", ignore_if_exists=True)
    table = catalog.create_table("db.orders", schema=pa.schema([...]), primary_keys=["id"],
                                 partition_keys=["dt"], options={"bucket": "4"})
    table.write(data)          # one commit, one snapshot
    table.read()               # merged latest state

``import lakeops`` is cheap: it loads the error classes only. Every other public name is imported
from its module the first time it is used (``lakeops.Catalog``, ``from lakeops import Table``;
PEP 562), so a program that never opens a table never pays for the readers, writers, compaction,
Avro and object-store clients behind it (``benchmarks/import.md``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from lakeops.errors import (
    BucketNotFoundError,
    CatalogError,
    ClockSkewError,
    CommitConflictError,
    CommitError,
    CommitStateUnknownError,
    ConfigurationError,
    CorruptDataFileError,
    CorruptMetadataError,
    CorruptTableError,
    DatabaseAlreadyExistsError,
    DatabaseNotEmptyError,
    DatabaseNotFoundError,
    DataValidationError,
    JobError,
    LakeopsError,
    LockUnavailableError,
    MissingCommitFileError,
    MissingDataFileError,
    MissingMetadataError,
    PartitionNotFoundError,
    SnapshotExpiredError,
    SnapshotNotFoundError,
    StaleWriteError,
    StorageAccessDeniedError,
    StorageError,
    StorageUnreachableError,
    TableAlreadyExistsError,
    TableNotFoundError,
    TagAlreadyExistsError,
    TagNotFoundError,
    UnsupportedFeatureError,
    WarehouseNotFoundError,
)

if TYPE_CHECKING:
    from lakeops.catalog import Catalog
    from lakeops.commit.stats import CommitStats
    from lakeops.compact.health import BucketHealth, TableHealth
    from lakeops.format.commit_message import CommitMessage
    from lakeops.format.snapshot import Snapshot
    from lakeops.maintenance.check import CheckReport, Problem
    from lakeops.maintenance.expire import ExpireResult
    from lakeops.maintenance.orphan import OrphanResult
    from lakeops.read.scan import Split
    from lakeops.store.tags import Tag
    from lakeops.table import AnyTable
    from lakeops.table.append import AppendTable
    from lakeops.table.modes import ChangeMode, CommitKind, WriteMode
    from lakeops.table.primary_key import Table
    from lakeops.table.scan import Scan
    from lakeops.write.append_write import AppendWrite
    from lakeops.write.table_write import TableWrite

#: public name -> the module that defines it, imported on first access (see ``__getattr__``)
_LAZY: dict[str, str] = {
    "AnyTable": "lakeops.table",
    "AppendTable": "lakeops.table.append",
    "AppendWrite": "lakeops.write.append_write",
    "BucketHealth": "lakeops.compact.health",
    "Catalog": "lakeops.catalog",
    "ChangeMode": "lakeops.table.modes",
    "CheckReport": "lakeops.maintenance.check",
    "CommitKind": "lakeops.table.modes",
    "CommitMessage": "lakeops.format.commit_message",
    "CommitStats": "lakeops.commit.stats",
    "ExpireResult": "lakeops.maintenance.expire",
    "OrphanResult": "lakeops.maintenance.orphan",
    "Problem": "lakeops.maintenance.check",
    "Scan": "lakeops.table.scan",
    "Snapshot": "lakeops.format.snapshot",
    "Split": "lakeops.read.scan",
    "Table": "lakeops.table.primary_key",
    "TableHealth": "lakeops.compact.health",
    "TableWrite": "lakeops.write.table_write",
    "Tag": "lakeops.store.tags",
    "WriteMode": "lakeops.table.modes",
}

__all__ = [
    "AnyTable",
    "AppendTable",
    "AppendWrite",
    "BucketHealth",
    "BucketNotFoundError",
    "Catalog",
    "CatalogError",
    "ChangeMode",
    "CheckReport",
    "ClockSkewError",
    "CommitConflictError",
    "CommitError",
    "CommitKind",
    "CommitMessage",
    "CommitStateUnknownError",
    "CommitStats",
    "ConfigurationError",
    "CorruptDataFileError",
    "CorruptMetadataError",
    "CorruptTableError",
    "DataValidationError",
    "DatabaseAlreadyExistsError",
    "DatabaseNotEmptyError",
    "DatabaseNotFoundError",
    "ExpireResult",
    "JobError",
    "LakeopsError",
    "LockUnavailableError",
    "MissingCommitFileError",
    "MissingDataFileError",
    "MissingMetadataError",
    "OrphanResult",
    "Problem",
    "Scan",
    "Snapshot",
    "SnapshotExpiredError",
    "SnapshotNotFoundError",
    "Split",
    "StaleWriteError",
    "StorageAccessDeniedError",
    "StorageError",
    "StorageUnreachableError",
    "Table",
    "TableAlreadyExistsError",
    "TableHealth",
    "TableNotFoundError",
    "TableWrite",
    "Tag",
    "PartitionNotFoundError",
    "TagAlreadyExistsError",
    "TagNotFoundError",
    "UnsupportedFeatureError",
    "WarehouseNotFoundError",
    "WriteMode",
]

__version__ = "0.1.0"

if not TYPE_CHECKING:  # type checkers see the imports above, not a catch-all ``__getattr__``

    def __getattr__(name: str) -> object:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value  # later look-ups find it without coming back here
        return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
