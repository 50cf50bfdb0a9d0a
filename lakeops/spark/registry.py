"""A warehouse's tables by name in Spark SQL: :func:`register_tables`.

PySpark 4 has Python data sources but no Python catalog plugin (a ``lakeops.db.orders`` name
needs a JVM ``CatalogPlugin``), and a temporary view cannot have a dotted name. So each table is
registered in Spark's session catalog as an **external** table ``db.orders`` ``USING lakeops``
at the table's path: ``spark.table("db.orders")`` and ``spark.sql("… FROM db.orders")`` then
read through the ``lakeops`` data source, with filters pushed into its reader.

Spark hands a catalog table's options to a Python data source when it creates the table, but
not when it scans it; so the table's location travels in the registered schema instead, as
metadata of its first column (:data:`LOCATION_METADATA`), which Spark keeps with the table and
gives the reader (:func:`registered_location`). That metadata can be read by anyone who can see
the schema, so storage options holding a credential are refused: give object-store credentials
through the environment (e.g. ``AWS_ACCESS_KEY_ID``) when registering by name.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql.types import StructField, StructType

from lakeops.catalog import Catalog
from lakeops.errors import ConfigurationError, TableAlreadyExistsError
from lakeops.redact import is_secret_key
from lakeops.spark.options import LOCATION_METADATA, registered_location
from lakeops.spark.types import spark_schema

__all__ = ["LOCATION_METADATA", "register_tables", "registered_location"]


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _secret_keys(options: Mapping[str, Any], prefix: str = "") -> list[str]:
    found = []
    for key, value in options.items():
        if is_secret_key(str(key)):
            found.append(prefix + str(key))
        if isinstance(value, Mapping):
            found += _secret_keys(value, f"{prefix}{key}.")
    return found


def _registered_by_us(spark: Any, name: str) -> bool:
    return bool(registered_location(spark.table(name).schema))


def register_tables(
    spark: Any,
    warehouse: str,
    *,
    databases: Sequence[str] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    catalog_options: Mapping[str, str] | None = None,
) -> list[str]:
    """Make every table of ``warehouse`` (of ``databases`` only, when given) readable by name:
    ``spark.table("db.orders")``, ``spark.sql("SELECT … FROM db.orders WHERE …")``. Returns the
    names registered, ``db.table``, sorted.

    Each database is created in Spark's session catalog if missing, and each table registered
    there as an external table ``USING lakeops`` with the table's current columns; dropping it
    from Spark (``DROP TABLE db.orders``) leaves the lakeops table untouched. Calling this
    again re-registers the tables (new tables appear, a changed schema is picked up); a Spark
    table or view of the same name that this function did not register is refused
    (:class:`~lakeops.errors.TableAlreadyExistsError`), before anything is registered.

    Reads by name read the latest snapshot, one input partition per split; filters on
    partition and other columns prune partitions, buckets and files as with
    ``spark.read.format("lakeops")``. Spark's Python data sources get no column pruning: every
    column is read (``lakeops.spark.read(…, columns=…)`` reads only some). With Spark's
    default in-memory catalog the registrations last for the session; with a Hive metastore
    they persist there (so credentials are refused in ``storage_options``)."""
    from lakeops.spark.api import register

    secret = _secret_keys(storage_options or {})
    if secret:
        raise ConfigurationError(
            f"storage options {secret} hold credentials; register_tables stores the storage "
            "options with each table's schema in Spark's catalog, where anyone who reads the "
            "schema sees them: give credentials through the environment instead (e.g. "
            "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY)"
        )
    register(spark)
    if "://" not in warehouse:  # a local path: the same table whatever directory reads it
        warehouse = os.path.abspath(warehouse)
    catalog = Catalog(
        warehouse, storage_options=dict(storage_options or {}), options=dict(catalog_options or {})
    )
    plan: list[tuple[str, str, StructType]] = []
    for database in databases if databases is not None else catalog.list_databases():
        for name in catalog.list_tables(database):
            table = catalog.get_table(f"{database}.{name}")
            location = json.dumps(
                {
                    "path": table.root,
                    "storage_options": json.dumps(dict(storage_options or {})),
                    "catalog_options": json.dumps(dict(catalog_options or {})),
                }
            )
            fields = spark_schema(table.arrow_schema).fields
            first = fields[0]
            metadata = {**(first.metadata or {}), LOCATION_METADATA: location}
            schema = StructType(
                [StructField(first.name, first.dataType, first.nullable, metadata), *fields[1:]]
            )
            plan.append((database, name, schema))
    taken = [
        f"{d}.{n}"
        for d, n, _ in plan
        if spark.catalog.tableExists(f"{_quote(d)}.{_quote(n)}")
        and not _registered_by_us(spark, f"{_quote(d)}.{_quote(n)}")
    ]
    if taken:
        raise TableAlreadyExistsError(
            f"Spark's session catalog already has {taken}, which register_tables did not "
            "register; drop them from Spark or register another warehouse's databases"
        )
    for database in sorted({d for d, _, _ in plan}):
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {_quote(database)}")
    for database, name, schema in plan:
        qualified = f"{_quote(database)}.{_quote(name)}"
        # external (a path is given): dropping the Spark entry leaves the files alone
        spark.sql(f"DROP TABLE IF EXISTS {qualified}")
        spark.catalog.createTable(qualified, path=_path(schema), source="lakeops", schema=schema)
    return sorted(f"{d}.{n}" for d, n, _ in plan)


def _path(schema: StructType) -> str:
    return registered_location(schema)["path"]
