"""pypaimon 2.1.0 oracle CLI for lakeops interoperability tests.

Run ONLY with the oracle interpreter (``.venv-oracle/bin/python``), which has
``pypaimon==2.1.0`` and the old pyarrow it pins. Nothing in ``lakeops`` imports
this file; ``tests/interop/oracle.py`` drives it through ``subprocess``.

Subcommands (all work on a filesystem catalog rooted at ``--warehouse``):

``create --warehouse DIR --table db.name --schema FILE.json --primary-keys a,b
[--partition-keys x,y] [--options JSON]``
    Create database ``db`` (ignored if it exists) and primary-key table
    ``db.name`` (error if the table exists). ``FILE.json`` is a JSON list of
    ``{"name": str, "type": str}`` objects in column order, where ``type`` is a
    Paimon SQL type string as stored in Paimon schema files, e.g. ``"BIGINT"``,
    ``"STRING NOT NULL"``, ``"DECIMAL(10, 2)"``, ``"TIMESTAMP(6)"``,
    ``"TIMESTAMP_LTZ(3)"``, ``"DATE"``, ``"BOOLEAN"``, ``"BYTES"``. Field ids are
    assigned 0..n-1 in list order. ``--options`` is a JSON object of string
    table options (``{"bucket": "4"}``). As in Paimon, primary-key columns are
    forced NOT NULL unless ``primary-key.nullable`` is set.

``write --warehouse DIR --table db.name --data FILE.parquet``
    Read the parquet file and write all of its rows with one batch write
    builder, producing exactly ONE commit (snapshot), or none for 0 rows.

``read --warehouse DIR --table db.name --out FILE.parquet [--snapshot-id N]``
    Read the whole merged table (latest snapshot, or snapshot ``N`` via the
    ``scan.snapshot-id`` dynamic option) and write it to ``FILE.parquet``. An
    empty result still produces a parquet file carrying the table's schema.

Any failure prints the traceback to stderr and exits with status 1.
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from typing import Any

import pyarrow.parquet as pq
from pypaimon import CatalogFactory, Schema
from pypaimon.schema.data_types import DataField, DataTypeParser, PyarrowFieldParser


def _split_names(value: str | None) -> list[str]:
    """Split a comma-separated column list, dropping empty entries."""
    if not value:
        return []
    return [part.strip() for part in value.split(",") if part.strip()]


def _catalog(warehouse: str) -> Any:
    """Open a pypaimon filesystem catalog at ``warehouse``."""
    return CatalogFactory.create({"warehouse": warehouse})


def cmd_create(args: argparse.Namespace) -> None:
    """Create the database (if needed) and the primary-key table."""
    with open(args.schema, encoding="utf-8") as fh:
        columns = json.load(fh)
    if not isinstance(columns, list) or not columns:
        raise ValueError("schema file must be a non-empty JSON list of {name, type}")
    fields = [
        DataField(i, col["name"], DataTypeParser.parse_data_type(col["type"]))
        for i, col in enumerate(columns)
    ]
    options = json.loads(args.options) if args.options else {}
    if not isinstance(options, dict):
        raise ValueError("--options must be a JSON object")
    options = {str(k): str(v) for k, v in options.items()}
    primary_keys = _split_names(args.primary_keys)
    if not primary_keys:
        raise ValueError("--primary-keys must name at least one column")
    schema = Schema(
        fields=fields,
        partition_keys=_split_names(args.partition_keys),
        primary_keys=primary_keys,
        options=options,
    )
    catalog = _catalog(args.warehouse)
    database = args.table.split(".", 1)[0]
    catalog.create_database(database, True)
    catalog.create_table(args.table, schema, False)


def cmd_write(args: argparse.Namespace) -> None:
    """Write the parquet file's rows to the table as one batch commit."""
    data = pq.read_table(args.data)
    table = _catalog(args.warehouse).get_table(args.table)
    builder = table.new_batch_write_builder()
    writer = builder.new_write()
    committer = builder.new_commit()
    try:
        writer.write_arrow(data)
        messages = writer.prepare_commit()
        committer.commit(messages)
    finally:
        writer.close()
        committer.close()


def cmd_read(args: argparse.Namespace) -> None:
    """Read the merged table (optionally at a snapshot) into a parquet file."""
    table = _catalog(args.warehouse).get_table(args.table)
    if args.snapshot_id is not None:
        table = table.copy({"scan.snapshot-id": str(args.snapshot_id)})
    read_builder = table.new_read_builder()
    splits = read_builder.new_scan().plan().splits()
    result = read_builder.new_read().to_arrow(splits)
    if result is None:
        schema = PyarrowFieldParser.from_paimon_schema(table.table_schema.fields)
        result = schema.empty_table()
    pq.write_table(result, args.out)


def build_parser() -> argparse.ArgumentParser:
    """Build the argparse parser for the three subcommands."""
    parser = argparse.ArgumentParser(description="pypaimon 2.1.0 oracle for lakeops tests")
    sub = parser.add_subparsers(dest="command", required=True)

    create = sub.add_parser("create", help="create a primary-key table")
    create.add_argument("--warehouse", required=True)
    create.add_argument("--table", required=True, help="db.name")
    create.add_argument("--schema", required=True, help="JSON list of {name, type}")
    create.add_argument("--primary-keys", required=True, help="comma-separated")
    create.add_argument("--partition-keys", default="", help="comma-separated")
    create.add_argument("--options", default=None, help="JSON object of table options")
    create.set_defaults(func=cmd_create)

    write = sub.add_parser("write", help="write a parquet file as one commit")
    write.add_argument("--warehouse", required=True)
    write.add_argument("--table", required=True, help="db.name")
    write.add_argument("--data", required=True, help="parquet file")
    write.set_defaults(func=cmd_write)

    read = sub.add_parser("read", help="read the merged table into a parquet file")
    read.add_argument("--warehouse", required=True)
    read.add_argument("--table", required=True, help="db.name")
    read.add_argument("--out", required=True, help="output parquet file")
    read.add_argument("--snapshot-id", type=int, default=None)
    read.set_defaults(func=cmd_read)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand; return 0 on success, 1 (traceback on stderr) on failure."""
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except Exception:
        traceback.print_exc(file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
