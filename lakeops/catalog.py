"""The filesystem catalog: ``<warehouse>/<db>.db/<table>``, exactly as Paimon lays it out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from lakeops.errors import (
    DatabaseAlreadyExistsError,
    DatabaseNotFoundError,
    TableAlreadyExistsError,
    TableNotFoundError,
)
from lakeops.io.file_io import FileIO, join
from lakeops.option_registry import check_create_options
from lakeops.schema_commit import validate_schema
from lakeops.spec import paths
from lakeops.spec.identifiers import check_identifier, parse_identifier
from lakeops.spec.schema import TableSchema
from lakeops.spec.schema_change import SchemaChange
from lakeops.table import Table

__all__ = ["Catalog", "new_table_schema"]

_DB_SUFFIX = ".db"
_DB_MARKER = ".lakeops-database"


def new_table_schema(
    schema: pa.Schema,
    primary_keys: Sequence[str],
    partition_keys: Sequence[str] | None = None,
    options: Mapping[str, object] | None = None,
    comment: str | None = None,
) -> TableSchema:
    """The schema :meth:`Catalog.create_table` writes for these arguments, validated exactly as
    it validates them (unknown option keys, options lakeops cannot honour, keys, types),
    without touching storage."""
    opts = {str(k): str(v) for k, v in (options or {}).items()}
    # unknown keys (did-you-mean) and options lakeops cannot honour, before anything else
    check_create_options(opts)
    table_schema = TableSchema.from_arrow(
        schema, list(primary_keys), list(partition_keys or []), opts, comment
    )
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

    # ---------------------------------------------------------------- databases
    def list_databases(self) -> list[str]:
        """Names of the databases in the warehouse."""
        return sorted(
            n[: -len(_DB_SUFFIX)]
            for n in self.file_io.list_names(self.warehouse)
            if n.endswith(_DB_SUFFIX)
        )

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

    # ------------------------------------------------------------------- tables
    def list_tables(self, database: str) -> list[str]:
        """Names of the tables of a database (directories holding a schema)."""
        if not self.database_exists(database):
            raise DatabaseNotFoundError(f"database {database!r} does not exist")
        db_path = self._db_path(database)
        return sorted(
            n
            for n in self.file_io.list_names(db_path)
            if self.file_io.list_names(join(db_path, n, paths.SCHEMA_DIR))
        )

    def table_exists(self, identifier: str) -> bool:
        return bool(self.file_io.list_names(join(self._table_path(identifier), paths.SCHEMA_DIR)))

    def create_table(
        self,
        identifier: str,
        *,
        schema: pa.Schema,
        primary_keys: Sequence[str],
        partition_keys: Sequence[str] | None = None,
        options: Mapping[str, object] | None = None,
        comment: str | None = None,
        ignore_if_exists: bool = False,
    ) -> Table:
        """Create a primary-key table and return it.

        Every option and key is validated before anything is written: an unknown option key is
        a :class:`~lakeops.errors.ConfigurationError` naming the closest known keys, and an
        option or value lakeops cannot honour exactly (``file.format`` = ``orc``, ``bucket`` =
        -2, external data paths …; see :mod:`lakeops.option_registry`) an
        :class:`~lakeops.errors.UnsupportedFeatureError`. Primary-key columns
        become NOT NULL. ``options`` values are strings, as in Paimon (``{"bucket": "4"}``).
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
        table_schema = new_table_schema(schema, primary_keys, partition_keys, options, comment)
        self.file_io.check_commit_ready()  # an unreachable commit lock, before any directory
        root = self._table_path(identifier)
        published = self.file_io.publish_exclusive(
            join(root, paths.schema_path(0)), table_schema.to_json().encode()
        )
        if not published and not ignore_if_exists:
            raise TableAlreadyExistsError(f"table {identifier!r} already exists")
        return self.get_table(identifier)

    def alter_table(self, identifier: str, changes: SchemaChange | Sequence[SchemaChange]) -> Table:
        """Apply Paimon schema changes to a table as one new ``schema-N`` (see
        :meth:`Table.alter`) and return the table under its new schema."""
        table = self.get_table(identifier)
        table.alter(changes)
        return table

    def get_table(self, identifier: str) -> Table:
        """Open an existing table."""
        if not self.table_exists(identifier):
            raise TableNotFoundError(f"table {identifier!r} does not exist in {self.warehouse}")
        return Table(identifier, self.file_io, self._table_path(identifier))
