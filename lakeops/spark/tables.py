"""The table a set of Spark data-source options names (``path``, or ``warehouse`` + ``table``;
storage and catalog options) — a primary-key :class:`~lakeops.Table` or an
:class:`~lakeops.table.append.AppendTable` (no primary key) — creating it on a first write,
and how many buckets a Spark task writes at once."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pyarrow as pa
from pyspark.sql.types import StructType

from lakeops.catalog import Catalog, new_table_schema
from lakeops.errors import (
    ConfigurationError,
    TableAlreadyExistsError,
)
from lakeops.format import paths
from lakeops.io.file_io import FileIO, join
from lakeops.parallel import check_parallelism
from lakeops.read.scan import Split
from lakeops.spark.options import (
    TableOptions,
    split_write_options,
)
from lakeops.spark.types import as_nullable, spark_arrow_schema
from lakeops.store import TableStore
from lakeops.table import AnyTable
from lakeops.table.append import AppendTable
from lakeops.table.primary_key import Table

__all__ = ["AnyTable", "ensure_table", "open_table", "read_split", "task_parallelism"]


def task_parallelism(requested: str | None) -> int:
    """How many buckets one Spark task writes at once: the task's CPUs (``spark.task.cpus``;
    1 outside a task), lowered to ``requested`` (the ``parallelism`` write option) when that is
    smaller — never more, so a task does not oversubscribe the slots its executor gave it."""
    from pyspark import TaskContext

    context = TaskContext.get()
    slots = max(int(context.cpus()), 1) if context is not None else 1
    if requested is None:
        return slots
    return min(check_parallelism(int(requested)) or slots, slots)


def _location(options: dict[str, str]) -> tuple[FileIO, dict[str, Any], dict[str, str]]:
    """The table directory's FileIO, with the storage and catalog options it was built from."""
    storage = json.loads(
        options.get("storage_options_secret") or options.get("storage_options") or "{}"
    )
    catalog_options = json.loads(
        options.get("catalog_options_secret") or options.get("catalog_options") or "{}"
    )
    path = options.get("path")
    if not path:
        warehouse, identifier = options.get("warehouse"), options.get("table")
        if not warehouse or not identifier or "." not in identifier:
            raise ConfigurationError(
                "lakeops data source needs .load('<warehouse>/<db>.db/"
                "<table>') or options warehouse=… and table=db.table (a table registered "
                "by name with lakeops.spark.register_tables is read-only in Spark SQL: "
                "write it with lakeops.spark.write or the data source by path)"
            )
        db, name = identifier.split(".", 1)
        path = f"{warehouse.rstrip('/')}/{db}.db/{name}"
    return FileIO(path, storage, catalog_options), storage, catalog_options


def open_table(options: dict[str, str]) -> AnyTable:
    """The table the data-source options name: a :class:`~lakeops.Table` when its schema has a
    primary key, else an :class:`~lakeops.table.append.AppendTable` (as
    :meth:`lakeops.Catalog.get_table` opens it)."""
    fio, _, _ = _location(options)
    db_dir, name = fio.root.rsplit("/", 1)
    identifier = f"{db_dir.rsplit('/', 1)[-1].removesuffix('.db')}.{name}"
    if TableStore(fio, fio.root).latest_schema().primary_keys:
        return Table(identifier, fio, fio.root)
    return AppendTable(identifier, fio, fio.root)


def ensure_table(options: dict[str, str], schema: StructType) -> AnyTable:
    """The table a write goes to, created from the DataFrame's ``schema`` when the path holds
    none (with the ``primary-key``, ``partition`` and table options among ``options``,
    validated by :meth:`lakeops.Catalog.create_table`). Without ``primary-key`` the new table
    is an append table, as Paimon's Spark writer creates one (unaware bucket unless ``bucket``
    and ``bucket-key`` are given). For an existing table those options must match what the
    table has: they define a table, they do not change one."""
    spec = split_write_options(options, schema.fieldNames())
    fio, storage, catalog_options = _location(options)
    if not fio.list_names(join(fio.root, paths.SCHEMA_DIR)):
        db_dir, name = fio.root.rsplit("/", 1)
        warehouse, db_name = db_dir.rsplit("/", 1) if "/" in db_dir else ("", db_dir)
        if not db_name.endswith(".db") or not warehouse:
            raise ConfigurationError(
                f"no table at {fio.root}, and the path is not <warehouse>/<database>.db/<table>, "
                "so a write cannot create one there"
            )
        catalog = Catalog(warehouse, storage_options=storage, options=catalog_options)
        arrow_schema = as_nullable(spark_arrow_schema(schema))
        # validated before the database directory is made: a refused write leaves nothing
        primary_keys = spec.primary_keys or []
        new_table_schema(arrow_schema, primary_keys, spec.partition_keys, spec.options)
        catalog.create_database(db_name.removesuffix(".db"), ignore_if_exists=True)
        # another writer may create it first: then check it is the table this write means
        with contextlib.suppress(TableAlreadyExistsError):
            catalog.create_table(
                f"{db_name.removesuffix('.db')}.{name}",
                schema=arrow_schema,
                primary_keys=primary_keys,
                partition_keys=spec.partition_keys,
                options=spec.options,
            )
    table = open_table(options)
    _check_matches(table, spec)
    return table


def _check_matches(table: AnyTable, spec: TableOptions) -> None:
    """Refuse table-defining write options that differ from what the existing table has."""
    schema = table.schema
    wrong = []
    if spec.primary_keys is not None and spec.primary_keys != list(schema.primary_keys):
        wrong.append(f"primary-key {spec.primary_keys} (the table has {schema.primary_keys})")
    if spec.partition_keys is not None and spec.partition_keys != list(schema.partition_keys):
        wrong.append(f"partition {spec.partition_keys} (the table has {schema.partition_keys})")
    for key, value in spec.options.items():
        have = schema.options.get(key)
        if have != value:
            wrong.append(f"{key}={value!r} (the table has {have!r})")
    if wrong:
        raise ConfigurationError(
            f"table {table.identifier} exists and the write options define it differently: "
            + "; ".join(wrong)
            + ". Table options configure a table the write creates; change an existing one "
            "with Table.alter (or drop the options from the write)"
        )


def read_split(table: AnyTable, split: Split, columns: list[str]) -> pa.Table:
    """The rows of one split of :meth:`splits` (merged for a primary-key table; every row of
    its files, in order, for an append table), ``columns`` only, typed as the table has them."""
    rows = table.split_reader().read(split, columns)
    return rows.cast(pa.schema([table.arrow_schema.field(c) for c in columns]))
