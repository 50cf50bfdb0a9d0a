"""lakeops: Apache Paimon primary-key tables from Python.

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

from lakeops.catalog import Catalog
from lakeops.errors import (
    CatalogError,
    CommitConflictError,
    CommitError,
    CommitStateUnknownError,
    ConfigurationError,
    CorruptDataFileError,
    CorruptMetadataError,
    CorruptTableError,
    DatabaseAlreadyExistsError,
    DatabaseNotFoundError,
    DataValidationError,
    LakeopsError,
    StaleWriteError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedFeatureError,
)
from lakeops.spec.commit_message import CommitMessage
from lakeops.spec.snapshot import Snapshot
from lakeops.table import Table

__all__ = [
    "Catalog",
    "CatalogError",
    "CommitConflictError",
    "CommitError",
    "CommitMessage",
    "CommitStateUnknownError",
    "ConfigurationError",
    "CorruptDataFileError",
    "CorruptMetadataError",
    "CorruptTableError",
    "DataValidationError",
    "DatabaseAlreadyExistsError",
    "DatabaseNotFoundError",
    "LakeopsError",
    "Snapshot",
    "StaleWriteError",
    "Table",
    "TableAlreadyExistsError",
    "TableNotFoundError",
    "UnsupportedFeatureError",
]

__version__ = "0.1.0"
