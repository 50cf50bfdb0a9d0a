"""The filesystem catalog: ``<warehouse>/<db>.db/<table>``, exactly as Paimon lays it out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lakeops.errors import (
    BucketNotFoundError,
    CatalogError,
    ConfigurationError,
    DatabaseAlreadyExistsError,
    DatabaseNotEmptyError,
    DatabaseNotFoundError,
    TableAlreadyExistsError,
    TableNotFoundError,
    WarehouseNotFoundError,
)
from lakeops.format import paths
from lakeops.format.identifiers import check_identifier, parse_identifier
from lakeops.format.schema import TableSchema
from lakeops.format.schema_change import SchemaChange
from lakeops.io.file_io import FileIO, join
from lakeops.options.registry import check_create_options
from lakeops.store import TableStore

if TYPE_CHECKING:
    from lakeops.table import AnyTable

# The table classes, their readers and writers, Iceberg metadata and the system tables are
# imported where a table is opened or created, so ``from lakeops import Catalog`` stays cheap.

__all__ = ["Catalog", "new_table_schema"]

_DB_SUFFIX = ".db"
_DB_MARKER = ".lakeops-database"


def _columns(names: str | Sequence[str] | None) -> list[str]:
    """Key columns as given to :meth:`Catalog.create_table`: a list of names, one name alone,
    or None for none (a name is one column, not its characters)."""
    if names is None:
        return []
    return [names] if isinstance(names, str) else list(names)


def new_table_schema(
    schema: pa.Schema,
    primary_keys: str | Sequence[str] | None = (),
    partition_keys: str | Sequence[str] | None = None,
    options: Mapping[str, object] | None = None,
    comment: str | None = None,
) -> TableSchema:
    """The schema :meth:`Catalog.create_table` writes for these arguments, validated exactly as
    it validates them (unknown option keys, options lakeops cannot honour, keys, types),
    without touching storage."""
    from lakeops.table.schema_commit import validate_schema

    opts = {str(k): str(v) for k, v in (options or {}).items()}
    primary_keys, partition_keys = _columns(primary_keys), _columns(partition_keys)
    # unknown keys (did-you-mean) and options lakeops cannot honour, before anything else
    # an append table serves deletion vectors (reads apply them; see TableOptions)
    checked = (
        opts if primary_keys else {k: v for k, v in opts.items() if k != "deletion-vectors.enabled"}
    )
    check_create_options(checked)
    table_schema = TableSchema.from_arrow(schema, primary_keys, partition_keys, opts, comment)
    validate_schema(table_schema)  # every option is validated before anything is written
    return table_schema


class Catalog:
    """A Paimon filesystem catalog rooted at a warehouse path or URI.

    Args:
        warehouse: local path or fsspec URI (``file:///…``, ``s3://bucket/wh`` …).
        storage_options: options for the storage client (endpoint, credentials…); kept in
            memory only.
        options: catalog options — the commit lock: ``lock.enabled``, ``lock.type``
            (``sqlite`` | ``postgres``), ``lock.sqlite.path``, ``lock.postgres.dsn``,
            ``lock.expire-time-ms``, ``lock.acquire-timeout-ms``.

    Example:
        >>> catalog = Catalog("/tmp/wh")                                  # doctest: +SKIP
        >>> catalog.create_database("db", ignore_if_exists=True)          # doctest: +SKIP
        >>> table = catalog.create_table("db.orders", schema=schema,     # doctest: +SKIP
        ...     primary_keys=["id"], options={"bucket": "4"})
    """

    def __init__(
        self,
        warehouse: str,
        *,
        storage_options: dict[str, Any] | None = None,
        options: dict[str, str] | None = None,
    ) -> None:
        self.file_io = FileIO(str(warehouse), storage_options, options)
        self.warehouse = self.file_io.root

    def __repr__(self) -> str:
        return f"Catalog({self.file_io!r})"

    def _db_path(self, database: str) -> str:
        return join(self.warehouse, check_identifier("database", database) + _DB_SUFFIX)

    def _table_path(self, identifier: str) -> str:
        db, name = parse_identifier(identifier)
        return join(self._db_path(db), name)

    def _uri(self) -> str:
        fio = self.file_io
        return self.warehouse if fio.is_local else f"{fio.protocol}://{self.warehouse}"

    def _warehouse_exists(self) -> bool:
        """Whether the warehouse exists: its directory, or on an object store (which has no
        directories, so a new warehouse is an empty prefix) its bucket."""
        fio = self.file_io
        if fio.is_object_store:
            return fio.bucket_exists(self._bucket())
        return fio.is_dir(self.warehouse)

    def _bucket(self) -> str:
        return self.warehouse.split("/", 1)[0]

    def _not_found(self, error: CatalogError) -> CatalogError:
        """``error``, or a :class:`WarehouseNotFoundError` when the warehouse itself is
        missing (a mistyped path must not look like an empty warehouse)."""
        if self._warehouse_exists():
            return error
        if self.file_io.is_object_store:
            return BucketNotFoundError(
                f"bucket {self._bucket()!r} of warehouse {self._uri()} does not exist at "
                f"{self.file_io.endpoint}: check the bucket name in the warehouse URI and the "
                "endpoint, or create the bucket first"
            )
        return WarehouseNotFoundError(
            f"warehouse {self._uri()} does not exist: check the path; a new warehouse is "
            "created by catalog.create_database"
        )

    def _require_warehouse(self) -> None:
        if not self._warehouse_exists():
            raise self._not_found(CatalogError("unreachable"))

    # ---------------------------------------------------------------- databases
    def list_databases(self, *, pattern: str | None = None) -> list[str]:
        """Names of the databases in the warehouse, those matching ``pattern`` only when given
        (shell-style, case-sensitive: ``"sales_*"``, ``"db?"``). A warehouse that does not
        exist is a :class:`~lakeops.errors.WarehouseNotFoundError`."""
        self._require_warehouse()
        names = sorted(
            n[: -len(_DB_SUFFIX)]
            for n in self.file_io.list_names(self.warehouse)
            if n.endswith(_DB_SUFFIX)
        )
        return [n for n in names if pattern is None or fnmatchcase(n, pattern)]

    def database_exists(self, database: str) -> bool:
        path = self._db_path(database)
        return self.file_io.is_dir(path) or self.file_io.exists(join(path, _DB_MARKER))

    def create_database(self, database: str, *, ignore_if_exists: bool = False) -> None:
        """Create ``<warehouse>/<database>.db``."""
        if self.database_exists(database):
            if ignore_if_exists:
                return
            raise DatabaseAlreadyExistsError(f"database {database!r} already exists")
        self.file_io.mkdirs(self._db_path(database))
        if not self.file_io.is_local:  # object stores have no empty directories
            self.file_io.write_bytes(join(self._db_path(database), _DB_MARKER), b"")

    def drop_database(
        self, database: str, *, ignore_if_not_exists: bool = False, cascade: bool = False
    ) -> None:
        """Drop ``<warehouse>/<database>.db``, as Paimon's filesystem catalog: a database that
        still holds tables is a :class:`~lakeops.errors.DatabaseNotEmptyError` unless
        ``cascade`` (then every table is dropped, see :meth:`drop_table`)."""
        if not self.database_exists(database):
            if ignore_if_not_exists:
                return
            raise self._not_found(DatabaseNotFoundError(f"database {database!r} does not exist"))
        tables = self.list_tables(database)
        if tables and not cascade:
            raise DatabaseNotEmptyError(
                f"database {database!r} still holds {len(tables)} table(s) ({', '.join(tables[:5])}"
                f"{', …' if len(tables) > 5 else ''}); drop them first or pass cascade=True"
            )
        for name in tables:
            self.drop_table(f"{database}.{name}", ignore_if_not_exists=True)
        self.file_io.delete_tree(self._db_path(database))

    # ------------------------------------------------------------------- tables
    def list_tables(self, database: str, *, pattern: str | None = None) -> list[str]:
        """Names of the tables of a database (directories holding a schema), those matching
        ``pattern`` only when given (shell-style, case-sensitive: ``"orders_*"``)."""
        if not self.database_exists(database):
            raise self._not_found(DatabaseNotFoundError(f"database {database!r} does not exist"))
        db_path = self._db_path(database)
        return sorted(
            n
            for n in self.file_io.list_names(db_path)
            if (pattern is None or fnmatchcase(n, pattern))
            and self.file_io.list_names(join(db_path, n, paths.SCHEMA_DIR))
        )

    def drop_table(self, identifier: str, *, ignore_if_not_exists: bool = False) -> None:
        """Drop a table: its directory and everything in it (snapshots, tags, branches, data),
        as Paimon's filesystem catalog. The snapshots go first and the schemas last, so a drop
        that stops half-way leaves a table that reads as empty (never one whose snapshots name
        missing files) and is finished by dropping it again. Readers and writers of the table
        fail from then on."""
        if not self.table_exists(identifier):
            if ignore_if_not_exists:
                return
            raise self._not_found(TableNotFoundError(f"table {identifier!r} does not exist"))
        root = self._table_path(identifier)
        fio = self.file_io
        fio.delete_tree(join(root, paths.SNAPSHOT_DIR))
        for name in fio.list_names(root):
            if name != paths.SCHEMA_DIR:
                fio.delete_tree(join(root, name))
        fio.delete_tree(root)

    def rename_table(self, identifier: str, new_identifier: str) -> AnyTable:
        """Rename a table (to another database too) by renaming its directory, as Paimon's
        filesystem catalog, and return it under the new name. Refused
        (:class:`~lakeops.errors.UnsupportedFeatureError`) on object stores, which cannot
        rename a directory atomically. Tables opened under the old name fail from then on."""
        db, _ = parse_identifier(new_identifier)
        if not self.table_exists(identifier):
            raise self._not_found(TableNotFoundError(f"table {identifier!r} does not exist"))
        if not self.database_exists(db):
            raise DatabaseNotFoundError(
                f"database {db!r} does not exist; call catalog.create_database({db!r}) first"
            )
        target = self._table_path(new_identifier)
        if self.table_exists(new_identifier) or self.file_io.exists(target):
            raise TableAlreadyExistsError(
                f"cannot rename {identifier!r} to {new_identifier!r}: {new_identifier!r} "
                "already exists"
            )
        self.file_io.rename_dir(self._table_path(identifier), target)
        return self.get_table(new_identifier)

    def table_exists(self, identifier: str) -> bool:
        return bool(self.file_io.list_names(join(self._table_path(identifier), paths.SCHEMA_DIR)))

    def create_table(
        self,
        identifier: str,
        *,
        schema: pa.Schema,
        primary_keys: str | Sequence[str] | None = (),
        partition_keys: str | Sequence[str] | None = None,
        options: Mapping[str, object] | None = None,
        comment: str | None = None,
        ignore_if_exists: bool = False,
    ) -> AnyTable:
        """Create a table and return it: a primary-key :class:`~lakeops.Table`, or without
        ``primary_keys`` an :class:`~lakeops.table.append.AppendTable` (unaware bucket,
        ``bucket = -1``, by default; ``bucket = N`` needs ``bucket-key``).

        Every option and key is validated before anything is written: an unknown option key is
        a :class:`~lakeops.errors.ConfigurationError` naming the closest known keys, and an
        option or value lakeops cannot honour exactly (``file.format`` = ``lance``,
        ``postpone.merge-on-read`` = ``true``, external data paths …; see
        :mod:`lakeops.options.registry`) an :class:`~lakeops.errors.UnsupportedFeatureError`.
        Primary-key columns become NOT NULL. ``options`` values are strings, as in Paimon
        (``{"bucket": "4"}``). ``primary_keys`` and ``partition_keys`` are lists of column
        names; a single name is one column (``primary_keys="id"``), None none.
        """
        db, _ = parse_identifier(identifier)
        if not self.database_exists(db):
            raise DatabaseNotFoundError(
                f"database {db!r} does not exist; call catalog.create_database({db!r}) first"
            )
        if self.table_exists(identifier):
            if ignore_if_exists:
                return self.get_table(identifier)
            raise TableAlreadyExistsError(f"table {identifier!r} already exists")
        from lakeops.maintenance.iceberg import check_iceberg_schema

        table_schema = new_table_schema(schema, primary_keys, partition_keys, options, comment)
        check_iceberg_schema(table_schema, f"cannot create table {identifier!r}")
        self.file_io.check_commit_ready()  # an unreachable commit lock, before any directory
        root = self._table_path(identifier)
        published = self.file_io.publish_exclusive(
            join(root, paths.schema_path(0)), table_schema.to_json().encode()
        )
        if not published and not ignore_if_exists:
            raise TableAlreadyExistsError(f"table {identifier!r} already exists")
        return self.get_table(identifier)

    def alter_table(
        self, identifier: str, changes: SchemaChange | Sequence[SchemaChange]
    ) -> AnyTable:
        """Apply Paimon schema changes to a table as one new ``schema-N`` (see
        :meth:`Table.alter`) and return the table under its new schema."""
        table = self.get_table(identifier)
        table.alter(changes)
        return table

    def get_table(self, identifier: str) -> AnyTable:
        """Open an existing table: a :class:`~lakeops.Table` when it has a primary key, else an
        :class:`~lakeops.table.append.AppendTable`; ``'db.table$branch_<name>'`` opens that
        branch of it (:meth:`~lakeops.Table.branch`)."""
        from lakeops.table import AppendTable, Table

        if isinstance(identifier, str) and "$branch_" in identifier:
            base, _, name = identifier.partition("$branch_")
            if "$" not in name:  # Paimon's spelling of a branch: 'db.table$branch_<name>'
                return self.get_table(base).branch(name)
        if isinstance(identifier, str) and "$" in identifier:
            raise ConfigurationError(
                f"{identifier!r} names a metadata table: read it with "
                f"catalog.metadata_table({identifier!r})"
            )
        if not self.table_exists(identifier):
            raise self._not_found(
                TableNotFoundError(f"table {identifier!r} does not exist in {self._uri()}")
            )
        root = self._table_path(identifier)
        if TableStore(self.file_io, root).latest_schema().primary_keys:
            return Table(identifier, self.file_io, root)
        return AppendTable(identifier, self.file_io, root)

    def metadata_table(self, identifier: str, *, snapshot_id: int | None = None) -> pa.Table:
        """A Paimon system table by Paimon's spelling, ``'db.table$name'`` (``$snapshots``,
        ``$schemas``, ``$options``, ``$files``, ``$manifests``, ``$partitions``,
        ``$buckets``, ``$tags``, ``$consumers``, ``$audit_log``, ``$binlog``, ``$ro``), as an
        Arrow table with Paimon's columns; see
        :meth:`Table.metadata_table`. Only the metadata is read, so it serves any table of
        the warehouse."""
        from lakeops.table.system_tables import metadata_table, split_system_table

        table, name = split_system_table(identifier)
        if name is None:
            raise ConfigurationError(
                f"{identifier!r} names no metadata table: write 'database.table$name', e.g. "
                f"'{identifier}$snapshots'"
            )
        if not self.table_exists(table):
            raise self._not_found(TableNotFoundError(f"table {table!r} does not exist"))
        store = TableStore(self.file_io, self._table_path(table))
        if name in ("audit_log", "binlog", "ro") and not store.latest_schema().primary_keys:
            # an append table's audit log, binlog and ro are its rows, read as the table reads them
            return self.get_table(table).metadata_table(name, snapshot_id=snapshot_id)
        return metadata_table(store, name, snapshot_id=snapshot_id)
