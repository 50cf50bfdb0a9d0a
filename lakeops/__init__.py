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
"""

from lakeops.catalog import AnyTable, Catalog
from lakeops.commit.stats import CommitStats
from lakeops.compact.health import BucketHealth, TableHealth
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
from lakeops.format.commit_message import CommitMessage
from lakeops.format.snapshot import Snapshot
from lakeops.maintenance.check import CheckReport, Problem
from lakeops.maintenance.expire import ExpireResult
from lakeops.maintenance.orphan import OrphanResult
from lakeops.read.scan import Split
from lakeops.store.tags import Tag
from lakeops.table.append import AppendTable
from lakeops.table.modes import ChangeMode, CommitKind, WriteMode
from lakeops.table.primary_key import Table
from lakeops.table.scan import Scan
from lakeops.write.append_write import AppendWrite
from lakeops.write.table_write import TableWrite

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
