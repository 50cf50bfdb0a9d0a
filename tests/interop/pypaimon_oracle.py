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

``changes --warehouse DIR --table db.name --out FILE.parquet [--from-snapshot N]
[--to-snapshot M]``
    Read the change records of snapshots ``N+1 .. M`` (default: from the earliest
    snapshot, i.e. INCLUDING the first snapshot's changes, up to the latest snapshot
    at start) with pypaimon's streaming read and ``with_include_row_kind(True)``,
    and write them to ``FILE.parquet`` with a ``_row_kind`` string column
    (``+I``/``-U``/``+U``/``-D``) first, then the table's columns. Rows are
    concatenated per snapshot in commit order; within a snapshot they come in
    pypaimon's split order (in practice sorted by primary key per bucket). An empty
    result still carries the schema. See ``cmd_changes`` for the pypaimon
    streaming-scan details (how the start snapshot is chosen, what is read for
    each changelog producer, and how the read is bounded).

``script [--warehouse DIR] --ops FILE.json [--keep-going --errors FILE.json]``
    Run a JSON list of operations in ONE process (each pypaimon start costs seconds), in
    order, stopping at the first failure. An op may name its own ``warehouse`` (default
    ``--warehouse``). With ``--keep-going`` a failure ends only the op's ``group`` (its
    later ops are skipped); the errors are written to ``--errors`` as ``{group: text}``
    and the command succeeds. Every op names its ``table`` ("db.name", or
    "db.name$branch_b" for a branch). Ops: ``create`` (``schema``: the create schema list,
    ``primary_keys``, ``partition_keys``, ``options`` as for ``create``); ``write``
    (``data``: a parquet file, one commit; ``overwrite``: absent, ``{}`` for the whole
    table or a static partition spec); ``alter`` (``changes`` as for ``alter``); ``tag``
    (``name``, optional ``snapshot_id``: default the latest); ``rollback`` (``to``: a
    snapshot id or a tag name); ``branch`` (``name``, optional ``tag``); ``read`` (``out``:
    a parquet file; optional ``snapshot_id``, ``tag`` or ``timestamp_millis``; optional
    ``columns``: a projection, system columns such as ``_ROW_ID`` included). A ``write`` may
    name ``write_cols`` (a column-subset write of a data-evolution table) or set
    ``postpone_fixed_bucket`` (a ``bucket = -2`` table's batch write into real buckets);
    ``update`` (``data``: a parquet file with ``_ROW_ID`` and the columns ``update_cols`` names, one
    commit) updates those columns of existing rows by row id; ``delete`` (``row_ids``, one
    commit) deletes rows of a data-evolution table by row id (deletion vectors).

Any failure prints the traceback to stderr and exits with status 1.

``serve``
    Answer requests until standard input ends, in one process (``tests/interop/oracle.py``
    keeps one per test process): each request is a line holding the JSON list of a
    subcommand's arguments; the reply is one line on standard output, the JSON object
    ``{"rc": exit status, "output": what the subcommand printed}``. Anything else printed
    goes to standard error.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import sys
import traceback
from collections.abc import AsyncGenerator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pypaimon import CatalogFactory, Schema
from pypaimon.schema.data_types import DataField, DataTypeParser, PyarrowFieldParser

CHANGES_TIMEOUT_S: float = 60.0
"""Upper bound for one ``changes`` streaming read before it is abandoned with an error."""

_CHANGES_POLL_S: float = 0.05
"""How often the ``changes`` driver checks whether the streaming scan has caught up."""

ROW_KIND_COLUMN: str = "_row_kind"


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
    primary_keys = _split_names(args.primary_keys)  # none: an append table
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


def _schema_change(change: dict[str, Any]) -> Any:
    """One pypaimon SchemaChange from its JSON form (``{"op": "rename", ...}``)."""
    from pypaimon.schema.schema_change import Move, SchemaChange

    op = change["op"]
    if op == "add":
        move = None
        if change.get("first"):
            move = Move.first(change["field"])
        elif change.get("after"):
            move = Move.after(change["field"], change["after"])
        dtype = DataTypeParser.parse_data_type(change["type"])
        return SchemaChange.add_column(change["field"], dtype, change.get("comment"), move)
    if op == "rename":
        return SchemaChange.rename_column(change["field"], change["new_name"])
    if op == "drop":
        return SchemaChange.drop_column(change["field"])
    if op == "type":
        dtype = DataTypeParser.parse_data_type(change["type"])
        return SchemaChange.update_column_type(change["field"], dtype)
    if op == "set":
        return SchemaChange.set_option(change["key"], change["value"])
    if op == "remove":
        return SchemaChange.remove_option(change["key"])
    raise ValueError(f"unknown schema change op {op!r}")


def cmd_alter(args: argparse.Namespace) -> None:
    """Apply schema changes (a JSON list) to the table."""
    changes = [_schema_change(c) for c in json.loads(args.changes)]
    _catalog(args.warehouse).alter_table(args.table, changes)


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


def _read_table(table: Any, out: str, columns: list[str] | None = None) -> None:
    """Read the whole merged ``table`` (``columns`` only, if given) into the parquet file
    ``out`` (schema kept if empty)."""
    read_builder = table.new_read_builder()
    if columns is not None:
        read_builder = read_builder.with_projection(list(columns))
    splits = read_builder.new_scan().plan().splits()
    result = read_builder.new_read().to_arrow(splits)
    if result is None:
        if columns is not None:
            raise ValueError("an empty projected read has no schema to write")
        schema = PyarrowFieldParser.from_paimon_schema(table.table_schema.fields)
        result = schema.empty_table()
    pq.write_table(result, out)


def _script_op(catalog: Any, op: dict[str, Any]) -> None:
    """Run one operation of a ``script`` (see the module docstring)."""
    kind = op["op"]
    name = op["table"]
    if kind == "create":
        fields = [
            DataField(i, col["name"], DataTypeParser.parse_data_type(col["type"]))
            for i, col in enumerate(op["schema"])
        ]
        schema = Schema(
            fields=fields,
            partition_keys=list(op.get("partition_keys", [])),
            primary_keys=list(op.get("primary_keys", [])),
            options={str(k): str(v) for k, v in op.get("options", {}).items()},
        )
        catalog.create_database(name.split(".", 1)[0], True)
        catalog.create_table(name, schema, False)
        return
    if kind == "alter":
        catalog.alter_table(name, [_schema_change(c) for c in op["changes"]])
        return
    table = catalog.get_table(name)
    if kind == "write":
        builder = table.new_batch_write_builder()
        if op.get("postpone_fixed_bucket"):  # a bucket = -2 table's batch write to real buckets
            builder = table.new_postpone_fixed_bucket_write_builder()
        if op.get("overwrite") is not None:
            builder = builder.overwrite(op["overwrite"])
        writer = builder.new_write()
        if op.get("write_cols") is not None:
            writer.with_write_type(list(op["write_cols"]))
        committer = builder.new_commit()
        try:
            writer.write_arrow(pq.read_table(op["data"]))
            committer.commit(writer.prepare_commit())
        finally:
            writer.close()
            committer.close()
    elif kind == "update":
        builder = table.new_batch_write_builder()
        update = builder.new_update().with_update_type(list(op["update_cols"]))
        messages = update.update_by_arrow_with_row_id(pq.read_table(op["data"]))
        committer = builder.new_commit()
        try:
            committer.commit(messages)
        finally:
            committer.close()
    elif kind == "delete":
        builder = table.new_batch_write_builder()
        messages = builder.new_update().delete_by_row_id([int(r) for r in op["row_ids"]])
        committer = builder.new_commit()
        try:
            committer.commit(messages)
        finally:
            committer.close()
    elif kind == "tag":
        table.create_tag(op["name"], op.get("snapshot_id"))
    elif kind == "rollback":
        table.rollback_to(op["to"])
    elif kind == "branch":
        catalog.create_branch(name, op["name"], op.get("tag"))
    elif kind == "consumer":
        from pypaimon.consumer.consumer import Consumer

        table.consumer_manager().reset_consumer(op["name"], Consumer(int(op["next_snapshot"])))
    elif kind == "read":
        if op.get("snapshot_id") is not None:
            table = table.copy({"scan.snapshot-id": str(op["snapshot_id"])})
        elif op.get("tag") is not None:
            table = table.copy({"scan.tag-name": str(op["tag"])})
        elif op.get("timestamp_millis") is not None:
            table = table.copy({"scan.timestamp-millis": str(op["timestamp_millis"])})
        _read_table(table, op["out"], op.get("columns"))
    else:
        raise ValueError(f"unknown script op {kind!r}")


def cmd_script(args: argparse.Namespace) -> None:
    """Run a JSON list of operations in order (see the module docstring)."""
    with open(args.ops, encoding="utf-8") as fh:
        ops = json.load(fh)
    if not isinstance(ops, list):
        raise ValueError("--ops must be a JSON list of operations")
    catalogs: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for index, op in enumerate(ops):
        group = str(op.get("group", ""))
        if group in errors:
            continue
        warehouse = op.get("warehouse", args.warehouse)
        if warehouse is None:
            raise ValueError(f"script op {index} names no warehouse and --warehouse is unset")
        if warehouse not in catalogs:
            catalogs[warehouse] = _catalog(warehouse)
        try:
            _script_op(catalogs[warehouse], op)
        except Exception as exc:
            if not args.keep_going:
                raise RuntimeError(f"script op {index} ({op.get('op')}) failed: {exc}") from exc
            errors[group] = f"op {index} ({op.get('op')}) failed:\n{traceback.format_exc()}"
    if args.keep_going:
        with open(args.errors, "w", encoding="utf-8") as fh:
            json.dump(errors, fh)


async def _next_plan(stream: AsyncGenerator[Any, None]) -> Any:
    """Await the next Plan of a streaming scan's ``stream()`` generator."""
    return await stream.__anext__()


async def _collect_change_plans(scan: Any, to_snapshot: int, timeout_s: float) -> list[Any]:
    """Collect the streaming scan's plans up to snapshot ``to_snapshot``, in commit order.

    ``AsyncStreamingTableScan.stream()`` never ends on its own: once no newer snapshot
    exists it ``await asyncio.sleep(poll)``s and polls again. Its only await point is
    that sleep, so whenever the pending ``__anext__`` has not completed, the scan is
    idle and ``scan.next_snapshot_id`` is the first snapshot it has not processed
    (scanned or skipped as having no changes). The scan has caught up once that id
    is past ``to_snapshot``, either after yielding the plan of ``to_snapshot`` or
    while idle after skipping it. Raises ``TimeoutError`` after ``timeout_s``.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    stream = scan.stream()
    plans: list[Any] = []
    pending: asyncio.Task[Any] | None = None
    try:
        while scan.next_snapshot_id <= to_snapshot:
            if loop.time() > deadline:
                raise TimeoutError(
                    f"streaming changelog scan did not reach snapshot {to_snapshot} within "
                    f"{timeout_s}s (next snapshot to scan: {scan.next_snapshot_id})"
                )
            if pending is None:
                pending = asyncio.ensure_future(_next_plan(stream))
            done, _ = await asyncio.wait({pending}, timeout=_CHANGES_POLL_S)
            if pending not in done:
                continue
            plan = pending.result()
            pending = None
            if plan.snapshot_id is None:
                raise RuntimeError("streaming scan yielded a full/diff plan, not a changelog plan")
            if plan.snapshot_id > to_snapshot:
                break
            plans.append(plan)
    finally:
        if pending is not None:
            pending.cancel()
            await asyncio.gather(pending, return_exceptions=True)
        await stream.aclose()
    return plans


def cmd_changes(args: argparse.Namespace) -> None:
    """Read the changelog of snapshots (from, to] with row kinds into a parquet file.

    pypaimon 2.1.0 streaming-scan behaviour this relies on (``AsyncStreamingTableScan``):

    * It honours NO ``scan.mode`` / ``scan.snapshot-id`` options. Left alone, its first
      plan is a FULL merged read of the latest snapshot whatever the changelog producer
      (deleted keys absent; each row tagged with its latest record's kind, e.g. ``+U``),
      and only later snapshots are read as changes. Setting its public
      ``next_snapshot_id`` attribute before iterating skips that initial full scan and
      starts the incremental scan at that snapshot: the earliest snapshot id for "from
      the beginning", ``N + 1`` for ``--from-snapshot N``.
    * When the gap from ``next_snapshot_id`` to the latest snapshot exceeds
      ``diff_threshold`` (10) it emits ONE "catch-up" plan (``snapshot_id`` None) of the
      data files added in between, read unmerged with every row tagged ``+I`` (even
      deletes), instead of per-snapshot changelogs; the threshold is raised here so that
      every snapshot is read as a changelog.
    * Per snapshot, ``changelog-producer`` ``input``/``lookup``/``full-compaction``
      read the snapshot's changelog files and skip snapshots without them (e.g.
      compactions); ``none`` reads the delta data files of APPEND snapshots only,
      i.e. the records as written (no ``-U`` before-images, no merge with older data).
    """
    if args.from_snapshot is not None and args.from_snapshot < 0:
        raise ValueError("--from-snapshot must be >= 0")
    table = _catalog(args.warehouse).get_table(args.table)
    snapshot_manager = table.snapshot_manager()
    latest = snapshot_manager.get_latest_snapshot()
    latest_id = latest.id if latest is not None else 0
    to_snapshot = latest_id if args.to_snapshot is None else args.to_snapshot
    if to_snapshot > latest_id:
        raise ValueError(f"--to-snapshot {to_snapshot} is after the latest snapshot {latest_id}")
    earliest_id = snapshot_manager.try_get_earliest_snapshot().id if latest is not None else 1
    start = earliest_id if args.from_snapshot is None else args.from_snapshot + 1
    if start < earliest_id:
        raise ValueError(
            f"changes after snapshot {args.from_snapshot} are partly expired: "
            f"earliest snapshot is {earliest_id}"
        )
    if args.from_snapshot is not None and args.from_snapshot > to_snapshot:
        raise ValueError(
            f"--from-snapshot {args.from_snapshot} is after --to-snapshot {to_snapshot}"
        )

    builder = table.new_stream_read_builder().with_include_row_kind(True)
    builder.with_poll_interval_ms(int(_CHANGES_POLL_S * 1000))
    table_read = builder.new_read()
    plans: list[Any] = []
    if start <= to_snapshot:
        scan = builder.new_streaming_scan()
        if not hasattr(scan, "_diff_threshold"):
            raise RuntimeError("pypaimon streaming scan has no _diff_threshold to disable")
        scan._diff_threshold = sys.maxsize
        scan.next_snapshot_id = start
        plans = asyncio.run(_collect_change_plans(scan, to_snapshot, CHANGES_TIMEOUT_S))

    tables = [table_read.to_arrow(plan.splits()) for plan in plans]
    tables = [t for t in tables if t is not None and t.num_rows > 0]
    if tables:
        result = pa.concat_tables(tables)
    else:
        schema = PyarrowFieldParser.from_paimon_schema(table.table_schema.fields)
        result = pa.schema([pa.field(ROW_KIND_COLUMN, pa.string()), *schema]).empty_table()
    if result.schema.names[0] != ROW_KIND_COLUMN:
        raise RuntimeError(f"expected {ROW_KIND_COLUMN} first, got {result.schema.names}")
    pq.write_table(result, args.out)


def build_parser() -> argparse.ArgumentParser:
    """Build the argparse parser for the subcommands."""
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

    alter = sub.add_parser("alter", help="apply schema changes")
    alter.add_argument("--warehouse", required=True)
    alter.add_argument("--table", required=True, help="db.name")
    alter.add_argument("--changes", required=True, help="JSON list of changes")
    alter.set_defaults(func=cmd_alter)

    read = sub.add_parser("read", help="read the merged table into a parquet file")
    read.add_argument("--warehouse", required=True)
    read.add_argument("--table", required=True, help="db.name")
    read.add_argument("--out", required=True, help="output parquet file")
    read.add_argument("--snapshot-id", type=int, default=None)
    read.set_defaults(func=cmd_read)

    changes = sub.add_parser("changes", help="read changelog rows with _row_kind into parquet")
    changes.add_argument("--warehouse", required=True)
    changes.add_argument("--table", required=True, help="db.name")
    changes.add_argument("--out", required=True, help="output parquet file")
    changes.add_argument(
        "--from-snapshot", type=int, default=None, help="exclusive; default: from the start"
    )
    changes.add_argument("--to-snapshot", type=int, default=None, help="inclusive; default: latest")
    changes.set_defaults(func=cmd_changes)

    script = sub.add_parser("script", help="run a JSON list of operations in one process")
    script.add_argument("--warehouse", default=None, help="default warehouse of the ops")
    script.add_argument("--ops", required=True, help="JSON file: a list of operations")
    script.add_argument("--keep-going", action="store_true", help="a failure ends its group")
    script.add_argument("--errors", default=None, help="JSON file for {group: error}")
    script.set_defaults(func=cmd_script)
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


def serve() -> int:
    """Run one subcommand per request line until standard input ends (see ``serve`` above)."""
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # native writes to fd 1 go to stderr
    for line in sys.stdin:
        output = io.StringIO()
        with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
            try:
                code = main(json.loads(line))
            except SystemExit as exc:  # argparse's usage errors
                code = exc.code if isinstance(exc.code, int) else 2
        replies.write(json.dumps({"rc": code, "output": output.getvalue()}) + "\n")
        replies.flush()
    return 0


def _exit_now(code: int) -> None:
    """Flush the standard streams and end the process without interpreter finalization.

    The oracle's work is done (its files written and closed) when ``main`` returns. What is
    left is finalization, where native threads of the oracle's libraries (pyarrow's C++ pools
    are the likely ones) can meet the interpreter's teardown: CI once saw a write end in
    "terminate called without an active exception" (exit -6). ``os._exit`` skips that
    teardown, so the exit status says what the subcommand did.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    _exit_now(serve() if sys.argv[1:] == ["serve"] else main())
