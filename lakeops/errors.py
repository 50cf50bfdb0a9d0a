"""The one exception tree of lakeops.

Every error the library raises on purpose derives from :class:`LakeopsError`, so callers
(Airflow operators, Spark jobs, the CLI) can catch one type and print one clear line::

    LakeopsError
    ├── ConfigurationError          a table option, schema or argument is invalid
    │   └── UnsupportedFeatureError the table uses a Paimon feature lakeops does not serve yet
    ├── CatalogError                catalog-level problems
    │   ├── WarehouseNotFoundError
    │   │   └── BucketNotFoundError the object-store bucket of the warehouse does not exist
    │   ├── DatabaseNotFoundError
    │   ├── DatabaseAlreadyExistsError
    │   ├── DatabaseNotEmptyError
    │   ├── TableNotFoundError
    │   └── TableAlreadyExistsError
    ├── DataValidationError         input rows are rejected before anything is written
    ├── SnapshotNotFoundError       the snapshot asked for does not exist (never was, or expired)
    │   └── TagNotFoundError        … asked for by a tag name that does not exist
    ├── TagAlreadyExistsError       a tag of that name exists (for another snapshot)
    ├── PartitionNotFoundError      a partition named to drop holds no data
    ├── CommitError                 a commit could not be published
    │   ├── CommitConflictError     another writer won and retrying did not help
    │   │   └── StaleWriteError     another commit changed what the write was planned on
    │   ├── LockUnavailableError    the commit lock could not be reached or taken
    │   ├── MissingCommitFileError  a file the commit adds is gone (nothing published)
    │   └── CommitStateUnknownError whether the snapshot was published cannot be told
    ├── CorruptTableError           what is on storage cannot be read as a Paimon table
    │   ├── CorruptMetadataError    a snapshot, schema, manifest, tag, … file is bad
    │   │   └── MissingMetadataError    … or missing (also a FileNotFoundError)
    │   └── CorruptDataFileError    a data, changelog or index file is bad or disagrees
    │       └── MissingDataFileError    … or missing (also a FileNotFoundError)
    ├── StorageError                the storage service could not be used
    │   ├── StorageUnreachableError     its endpoint does not answer (refused, timed out)
    │   └── StorageAccessDeniedError    it refused the credentials
    ├── ClockSkewError              the local clock is ahead of the store's beyond a tolerance
    └── JobError                    a Spark job submitted by lakeops (spark-submit) failed
"""

from __future__ import annotations


class LakeopsError(Exception):
    """Base class of every error lakeops raises on purpose."""


class ConfigurationError(LakeopsError, ValueError):
    """A table option, schema definition or call argument is invalid."""


class UnsupportedFeatureError(ConfigurationError):
    """The table uses a Paimon feature that this version of lakeops does not serve."""


class CatalogError(LakeopsError):
    """A catalog operation failed."""


class WarehouseNotFoundError(CatalogError):
    """The warehouse path does not exist (or, on an object store, its bucket does not): a
    typo, or a warehouse not created yet — ``create_database`` creates it."""


class BucketNotFoundError(WarehouseNotFoundError):
    """The object-store bucket the warehouse URI names does not exist (or is not visible to
    these credentials): create it, or fix the bucket name."""


class DatabaseNotFoundError(CatalogError):
    """The named database does not exist in the warehouse."""


class DatabaseAlreadyExistsError(CatalogError):
    """The database exists and ``ignore_if_exists`` was false."""


class DatabaseNotEmptyError(CatalogError):
    """The database still holds tables and ``cascade`` was false."""


class TableNotFoundError(CatalogError):
    """The named table does not exist in the warehouse."""


class TableAlreadyExistsError(CatalogError):
    """The table exists and ``ignore_if_exists`` was false."""


class DataValidationError(LakeopsError, ValueError):
    """Input rows were rejected before anything was written (null keys, bad types, kinds)."""


class SnapshotNotFoundError(LakeopsError, LookupError):
    """The snapshot asked for (time travel, ``rollback_to``, ``commit_stats``, a changelog
    read) does not exist: it was never written, or expiry removed it (and, for a changelog read,
    its changelog was not kept). ``snapshot_id`` is the id asked for."""

    def __init__(self, message: str, *, snapshot_id: int | None = None) -> None:
        super().__init__(message)
        self.snapshot_id = snapshot_id


class SnapshotExpiredError(SnapshotNotFoundError):
    """The snapshot a read asked for, or planned on, was expired (snapshot expiry removed it and
    the files only it referenced). The table is healthy — nothing needs restoring or rolling
    back: read again (the latest snapshot, or one still retained). ``snapshot_id`` is the
    expired snapshot's id."""


class TagNotFoundError(SnapshotNotFoundError):
    """The tag asked for (``read(tag=…)``, ``rollback_to(tag=…)``, ``delete_tag``) does not
    exist. ``tag`` is its name."""

    def __init__(self, message: str, *, tag: str) -> None:
        super().__init__(message)
        self.tag = tag


class TagAlreadyExistsError(LakeopsError):
    """A tag of that name already exists and tags another snapshot; tags are never moved
    silently — delete it first."""


class PartitionNotFoundError(LakeopsError, LookupError):
    """A partition named (``drop_partitions``) matches no partition holding data; nothing was
    changed."""


class CommitError(LakeopsError):
    """A commit could not be published; nothing of it became visible."""


class CommitStateUnknownError(CommitError):
    """Publishing a snapshot failed in a way that leaves open whether it became visible (a lost
    response, a failed check read). Nothing was cleaned up: the files it may reference are kept
    (``remove_orphan_files`` removes them later if the snapshot was not published). Read the
    table to find out; never retry blindly on an append-only workload."""


class LockUnavailableError(CommitError):
    """The commit lock (catalog options ``lock.*``) could not be reached or taken in time;
    nothing was published, and every file the failed write or commit wrote was removed."""


class MissingCommitFileError(CommitError):
    """A data, changelog or index file that the commit adds (or a manifest it wrote) no longer
    exists — deleted while the commit was prepared, e.g. by a forced ``remove_orphan_files``.
    Nothing was published: the table still reads as before, and the write must run again.
    ``paths`` are the missing files, relative to the table directory where they lie below it."""

    def __init__(self, message: str, *, paths: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.paths = paths


class CommitConflictError(CommitError):
    """Another writer kept winning the race for the next snapshot and retries ran out."""


class StaleWriteError(CommitConflictError):
    """Another commit changed what a write was planned on (the key index of a dynamic-bucket
    partition it adds keys to, or any data of a cross-partition-update table) after the write
    read it; nothing was committed and the write must run again on the new snapshot."""


class CorruptTableError(LakeopsError):
    """What is on storage cannot be read as a Paimon table (missing or malformed files).

    ``path`` is the file at fault, relative to the table directory, where one is known."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class CorruptMetadataError(CorruptTableError):
    """A metadata file (snapshot, schema, manifest list, manifest, index manifest, tag,
    consumer) is missing, malformed, larger than lakeops reads, or nested too deeply."""


class MissingMetadataError(CorruptMetadataError, FileNotFoundError):
    """A metadata file that the table references does not exist (during maintenance this may
    be a race with expiry, hence also a :class:`FileNotFoundError`)."""


class CorruptDataFileError(CorruptTableError):
    """A data, changelog or index file that a snapshot references cannot be read, or disagrees
    with its manifest entry (file size, row count)."""


class MissingDataFileError(CorruptDataFileError, FileNotFoundError):
    """A data, changelog or index file that a snapshot references does not exist."""


class StorageError(LakeopsError):
    """The storage service (an object store's endpoint) could not be used; ``endpoint`` is the
    address that failed, never a credential."""

    def __init__(self, message: str, *, endpoint: str | None = None) -> None:
        super().__init__(message)
        self.endpoint = endpoint


class StorageUnreachableError(StorageError):
    """The storage endpoint does not answer: the connection was refused or timed out (a wrong
    endpoint URL or port, a server that is down, a network in between)."""


class StorageAccessDeniedError(StorageError, PermissionError):
    """The storage service refused the credentials (an unknown access key, a wrong secret, or
    no permission on the bucket); also a :class:`PermissionError`, as the storage library's
    own error was."""


class ClockSkewError(LakeopsError):
    """This machine's clock is ahead of the store's by more than the tolerance, so file ages
    computed here would be too large (orphan cleanup could delete the files of a commit still
    in progress); fix the clock (NTP) or run the operation on a machine with a correct one."""


class JobError(LakeopsError):
    """A Spark job submitted by lakeops (``spark-submit``) exited with an error."""


#: every class of the tree (the one list; ``lakeops`` re-exports it)
__all__ = sorted(
    name
    for name, value in list(globals().items())
    if isinstance(value, type) and issubclass(value, LakeopsError)
)
