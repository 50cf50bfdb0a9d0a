"""Spark job entry points, for ``spark-submit`` and Airflow operators.

::

    python -m lakeops.spark.jobs write   --table PATH --source DATA [--format parquet|csv|json]
                                          [--mode append|overwrite]
                                          [--via python|auto|native]
                                          [--commit-user USER] [--watermark MILLIS]
    python -m lakeops.spark.jobs compact --table PATH [--full] [--partitions JSON]
    python -m lakeops.spark.jobs flush   --table PATH [--partitions JSON]  # level-0 flush
    python -m lakeops.spark.jobs expire  --table PATH [--retain-min N] [--retain-max N]
                                          [--time-retained "1 h"]
    python -m lakeops.spark.jobs orphans --table PATH [--older-than-hours 24] [--force]
    python -m lakeops.spark.jobs rescale --table PATH [--bucket N] [--partitions JSON]

Every job serves primary-key and append tables (no primary key) alike, except ``flush``,
which an append table refuses (its files are all at level 0; ``compact`` runs Paimon's
small-file compaction of append tables, see :mod:`lakeops.spark.compaction`).

The table is named as the CLI names it, ``--warehouse W --table db.table`` (``--warehouse``
defaults to ``LAKEOPS_WAREHOUSE``), or by its path, ``--table <warehouse>/<db>.db/<table>``.

With ``spark-submit``, pass this file as the application (``spark-submit [options]
$(python -c 'import lakeops.spark.jobs as j; print(j.__file__)') compact --table …``); its master
and configuration then come from ``spark-submit``.

Partitions (``write --mode overwrite`` overwrites only these; ``compact``/``flush`` touch only
these) are a JSON list of specs, ``--partitions '[{"dt": "2024-01-01", "region": "eu"}]'``:
values are strings (any text: ``,``, ``=``, quotes, non-ASCII, empty), numbers, booleans or
``null`` (NULL), and round-trip exactly (:func:`encode_partitions` writes them). The older
``--partition k=v[,k2=v2]`` (repeatable) is still read where it is unambiguous: every
``,``-separated piece is one ``key=value`` with exactly one ``=``, each key once; anything else
(a value holding ``,`` or ``=``) is refused — use ``--partitions``.

``--parallelism N``: for ``write``, the most buckets one Spark task writes at once (default and
cap: the task's ``spark.task.cpus``, so executors are never oversubscribed); for ``compact`` and
``flush``, the most buckets one task compacts at once (each task gets ``spark.task.cpus``
buckets; default and cap: that count, see :mod:`lakeops.spark.compaction`); for ``expire`` and
``orphans`` (run on the driver), how many files are deleted at once.

``rescale`` (fixed-bucket tables): with ``--bucket N`` first change the table's ``bucket`` to N,
then rewrite the partitions (``--partitions``; default: every partition whose files hold another
bucket count than the table's) into the table's bucket count as one ``OVERWRITE`` commit: Spark
tasks read and write the rows, the driver plans and commits (:func:`lakeops.spark.rescale`;
``--parallelism``: as for ``write``).

``--watermark MILLIS`` (write): stored in the snapshot (epoch milliseconds), as
:meth:`lakeops.Table.commit` stores it.

``--commit-user USER`` (write): commit under this stable user (the Airflow operators pass one
per task instance), so the job run again after its commit landed publishes nothing and deletes
the files it wrote (:mod:`lakeops.commit.exactly_once`); the summary then names the earlier
snapshot, with ``already_committed: true``. Without it every run commits.

Common: ``--master`` (default: the session's, ``local[*]`` when run by hand), storage options
as JSON in ``--storage-options`` or the ``LAKEOPS_STORAGE_OPTIONS`` environment variable and
catalog options (commit lock) in ``LAKEOPS_CATALOG_OPTIONS`` — never printed. The last line of
output is a JSON summary (snapshot id, kind, rows, seconds) for XComs.
"""

from __future__ import annotations

import argparse
import datetime as dt
import decimal
import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

from lakeops.errors import ConfigurationError
from lakeops.format.identifiers import parse_identifier
from lakeops.parallel import check_parallelism

__all__ = [
    "decode_partitions",
    "encode_partitions",
    "main",
    "parse_args",
    "parse_legacy_partition",
]

_SCALARS = (str, int, float, bool, type(None))


def _json_value(value: Any) -> Any:
    """A partition value as JSON can carry it: dates, times and decimals as the text
    :mod:`lakeops.format.partition_spec` reads back to the same value."""
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    raise ConfigurationError(
        f"partition value {value!r} of type {type(value).__name__} cannot be passed to a Spark "
        "job; write it as text (e.g. '2024-01-01')"
    )


def encode_partitions(specs: Sequence[Mapping[str, Any]]) -> str:
    """The ``--partitions`` argument for ``specs``: a JSON list of objects, ASCII only (so no
    locale on the way can alter it); :func:`decode_partitions` gives ``specs`` back exactly."""
    out = []
    for spec in specs:
        if not isinstance(spec, Mapping):
            raise ConfigurationError(
                f"a partition spec is a mapping like {{'dt': '…'}}, got {spec!r}"
            )
        for key in spec:
            if not isinstance(key, str) or not key:
                raise ConfigurationError(f"partition column names are non-empty text, got {key!r}")
        out.append({k: v if isinstance(v, _SCALARS) else _json_value(v) for k, v in spec.items()})
    return json.dumps(out, ensure_ascii=True, separators=(",", ":"))


def _object_without_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    for key, value in pairs:
        if key in spec:
            raise ConfigurationError(f"--partitions: column {key!r} appears twice in one spec")
        spec[key] = value
    return spec


def decode_partitions(text: str) -> list[dict[str, Any]]:
    """The specs of a ``--partitions`` JSON argument; refuses anything but a list of objects
    mapping non-empty names to strings, numbers, booleans or null, and duplicate names."""
    try:
        specs = json.loads(text, object_pairs_hook=_object_without_duplicates)
    except json.JSONDecodeError as exc:
        raise ConfigurationError(
            f"--partitions is not valid JSON ({exc.msg} at character {exc.pos}); write a list "
            'of specs, e.g. [{"dt": "2024-01-01"}]'
        ) from None
    if not isinstance(specs, list) or not all(isinstance(spec, dict) for spec in specs):
        raise ConfigurationError(
            '--partitions must be a JSON list of objects, e.g. [{"dt": "2024-01-01"}]'
        )
    if not specs:  # never read as "every partition": an overwrite would replace the table
        raise ConfigurationError(
            "--partitions [] names no partition; leave the flag out to mean every partition"
        )
    for spec in specs:
        for key, value in spec.items():
            if not key or not isinstance(value, _SCALARS):
                raise ConfigurationError(
                    f"--partitions: {key!r}: {value!r} is not a column name with a string, "
                    "number, boolean or null value"
                )
    return specs


def parse_legacy_partition(text: str) -> dict[str, str]:
    """One ``--partition k=v[,k2=v2]`` spec, read only where it is unambiguous: each
    ``,``-separated piece holds exactly one ``=`` after a non-empty key, and no key repeats.
    A value containing ``,`` or ``=`` cannot be told apart from more keys, so it is refused."""
    spec: dict[str, str] = {}
    for piece in text.split(","):
        key, sep, value = piece.partition("=")
        if not sep or not key or "=" in value or key in spec:
            raise ConfigurationError(
                f"--partition {text!r} is ambiguous (each ','-separated piece must be one "
                "key=value, each key once, no ',' or '=' inside a value); pass the partition "
                "as JSON instead: --partitions "
                '\'[{"dt": "2024-01-01,region=eu"}]\''
            )
        spec[key] = value
    return spec


def _partitions(json_text: str | None, legacy: Sequence[str] | None) -> list[dict[str, Any]] | None:
    """The partition specs of the arguments (None: every partition)."""
    if json_text is not None and legacy:
        raise ConfigurationError("pass partitions either as --partitions or as --partition")
    if json_text is not None:
        return decode_partitions(json_text)
    if legacy:
        return [parse_legacy_partition(v) for v in legacy]
    return None


def _session(master: str | None) -> Any:
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName("lakeops")
    if master:
        builder = builder.master(master)
    elif "PYSPARK_GATEWAY_PORT" not in os.environ:  # not under spark-submit, which sets master
        builder = builder.master(os.environ.get("LAKEOPS_SPARK_MASTER", "local[*]"))
    if "PYSPARK_GATEWAY_PORT" in os.environ:  # spark-submit set spark.log.level
        return builder.getOrCreate()
    from lakeops.spark.submit import OPTIONS_REDACTION, check_log_level

    # Spark's log at WARN unless LAKEOPS_SPARK_LOG_LEVEL asks otherwise (the operators set it)
    level = check_log_level(os.environ.get("LAKEOPS_SPARK_LOG_LEVEL") or "WARN")
    builder = builder.config("spark.ui.enabled", "false").config(*OPTIONS_REDACTION)
    session = builder.config("spark.log.level", level).getOrCreate()
    session.sparkContext.setLogLevel(level)  # also for a session that was already running
    return session


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m lakeops.spark.jobs", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument(
        "job", choices=["write", "compact", "flush", "expire", "orphans", "rescale"]
    )
    parser.add_argument(
        "--table",
        required=True,
        help="db.table (with --warehouse or LAKEOPS_WAREHOUSE) or <warehouse>/<db>.db/<table>",
    )
    parser.add_argument(
        "--warehouse", help="warehouse path or URI, as the CLI's -w (default: LAKEOPS_WAREHOUSE)"
    )
    parser.add_argument("--source", help="input data (write)")
    parser.add_argument("--format", default="parquet", choices=["parquet", "csv", "json"])
    parser.add_argument("--mode", default="append", choices=["append", "overwrite"])
    parser.add_argument(
        "--via",
        default="python",
        choices=["python", "auto", "native"],
        help="write: the Python writer (default), the native path where it can write the "
        "table (auto), or the native path only (native); the summary's 'path' says which wrote",
    )
    parser.add_argument(
        "--commit-user",
        help="write: a stable commit user; a run whose user already committed publishes nothing",
    )
    parser.add_argument(
        "--watermark", type=int, help="write: the commit's watermark (epoch milliseconds)"
    )
    parser.add_argument(
        "--bucket", type=int, help="rescale: change the table's bucket count to this first"
    )
    parser.add_argument("--full", action="store_true", help="full compaction (compact)")
    parser.add_argument("--partitions", help='JSON list of specs: [{"k": "v", "k2": null}]')
    parser.add_argument(
        "--partition", action="append", help="k=v[,k2=v2] (repeatable; unambiguous values only)"
    )
    parser.add_argument("--retain-min", type=int)
    parser.add_argument("--retain-max", type=int)
    parser.add_argument("--time-retained")
    parser.add_argument("--older-than-hours", type=float, default=24.0)
    parser.add_argument(
        "--force", action="store_true", help="orphans: accept a threshold below one hour"
    )
    parser.add_argument(
        "--parallelism",
        type=int,
        help="write/compact/flush: most buckets one task writes or compacts at once (default "
        "and cap: spark.task.cpus); expire/orphans: files deleted at once on the driver",
    )
    parser.add_argument("--master")
    parser.add_argument(
        "--storage-options",
        help="JSON; visible in process listings, so prefer LAKEOPS_STORAGE_OPTIONS",
    )
    return parser


def table_path(table: str, warehouse: str | None) -> str:
    """The table's path from ``--table`` and ``--warehouse``: ``db.table`` is resolved in the
    warehouse (``warehouse``, else ``LAKEOPS_WAREHOUSE``) as the CLI resolves it, to
    ``<warehouse>/<db>.db/<table>``; anything else (a path, with ``/`` or without ``.``) is the
    table's path itself, as before."""
    if warehouse is None and ("/" in table or "." not in table):
        return table
    if "/" in table:
        raise ConfigurationError(
            f"--table {table} is a path, so --warehouse does not apply: pass either "
            "--warehouse W --table db.table or --table <warehouse>/<db>.db/<table>"
        )
    root = warehouse if warehouse is not None else os.environ.get("LAKEOPS_WAREHOUSE")
    if not root:
        raise ConfigurationError(
            f"--table {table} names a table as db.table: pass --warehouse W (or set "
            "LAKEOPS_WAREHOUSE), or give the table's path <warehouse>/<db>.db/<table>"
        )
    db, name = parse_identifier(table)
    return f"{root.rstrip('/')}/{db}.db/{name}"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The job's arguments; ``partitions`` holds the decoded partition specs (of
    ``--partitions`` or the unambiguous ``--partition`` form; None for every partition).
    Raises :class:`~lakeops.errors.ConfigurationError` for partitions it cannot read exactly."""
    args = _parser().parse_args(None if argv is None else list(argv))
    args.table = table_path(args.table, args.warehouse)
    args.partitions = _partitions(args.partitions, args.partition)
    check_parallelism(args.parallelism)
    return args


def _written_snapshot(table: Any, commit_user: str | None) -> Any:
    """The snapshot a write committed: its commit user's newest (with a stable user: this run's
    commit, or the earlier one it skipped), else the table's latest."""
    if commit_user:
        from lakeops.commit.exactly_once import latest_snapshot_of_user

        return latest_snapshot_of_user(table.store, commit_user)
    return table.latest_snapshot()


def main(
    argv: list[str] | None = None,
    *,
    storage_options: dict[str, Any] | None = None,
    catalog_options: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Run one job from command-line arguments; returns (and prints, as the last line) its
    JSON summary. ``storage_options`` / ``catalog_options`` given here (in-process callers such
    as the Airflow operators) take precedence over the flag and the environment."""
    args = parse_args(argv)
    partitions = args.partitions
    if args.job == "write" and not args.source:
        raise ConfigurationError("the write job needs --source")
    storage = storage_options
    if storage is None:
        storage = json.loads(
            args.storage_options or os.environ.get("LAKEOPS_STORAGE_OPTIONS") or "{}"
        )
    catalog = catalog_options
    if catalog is None:
        catalog = json.loads(os.environ.get("LAKEOPS_CATALOG_OPTIONS") or "{}")
    from lakeops.spark import api
    from lakeops.spark.tables import open_table

    opts = {
        "path": args.table,
        "storage_options": json.dumps(storage),
        "catalog_options": json.dumps(catalog),
    }
    start = time.perf_counter()
    summary: dict[str, Any] = {"job": args.job, "table": args.table}
    if args.job in ("expire", "orphans"):
        table = open_table(opts)
        if args.job == "expire":
            result = table.expire_snapshots(
                retain_min=args.retain_min,
                retain_max=args.retain_max,
                time_retained=args.time_retained,
                parallelism=args.parallelism,
            )
            summary.update(
                expired=len(result.expired_snapshots), files_deleted=result.data_files_deleted
            )
        else:
            removed = table.remove_orphan_files(
                older_than=dt.timedelta(hours=args.older_than_hours),
                force=args.force,
                parallelism=args.parallelism,
            )
            summary.update(files_deleted=len(removed.deleted), bytes=removed.bytes)
        snapshot = table.latest_snapshot()
    else:
        spark = _session(args.master)
        try:
            if args.job == "write":
                from lakeops.spark.input_files import input_error, read_source

                before = open_table(opts).store.latest_snapshot_id() or 0
                # parsed as the table's types by the reader the CLI shares, never inferred
                schema = open_table(opts).arrow_schema
                df = read_source(spark, args.source, args.format, schema, storage)
                try:
                    summary["path"] = api.write(
                        df,
                        args.table,
                        mode=args.mode,
                        storage_options=storage,
                        catalog_options=catalog,
                        overwrite_partitions=partitions,
                        parallelism=args.parallelism,
                        via=args.via,
                        commit_user=args.commit_user,
                        watermark=args.watermark,
                    )
                except Exception as exc:
                    bad_input = input_error(exc)
                    if bad_input is None:
                        raise
                    raise bad_input from None
                snapshot = _written_snapshot(open_table(opts), args.commit_user)
                if args.commit_user:
                    # the user's snapshot is older than this run: its retry was skipped
                    summary["already_committed"] = snapshot is not None and snapshot.id <= before
            elif args.job == "rescale":
                rescaled = api.rescale(
                    spark,
                    args.table,
                    bucket=args.bucket,
                    partitions=partitions,
                    storage_options=storage,
                    catalog_options=catalog,
                    parallelism=args.parallelism,
                )
                summary.update(
                    bucket=rescaled.bucket,
                    partitions=list(rescaled.partitions),
                    rows=rescaled.rows,
                )
                snapshot = rescaled.snapshot or open_table(opts).latest_snapshot()
            else:
                snapshot = api.compact(
                    spark,
                    args.table,
                    full=args.full,
                    force_level0=args.job == "flush",
                    partitions=partitions,
                    storage_options=storage,
                    catalog_options=catalog,
                    parallelism=args.parallelism,
                )
        finally:
            spark.stop()
    summary.update(
        snapshot_id=snapshot.id if snapshot else None,
        commit_kind=snapshot.commit_kind if snapshot else None,
        total_records=snapshot.total_record_count if snapshot else None,
    )
    if snapshot is not None and args.job in ("write", "compact", "flush", "rescale"):
        stats = open_table(opts).commit_stats(snapshot.id)
        summary.update(
            files_added=stats.files_added,
            files_rewritten=stats.files_deleted,
            bytes_written=stats.bytes_added,
        )
    summary["seconds"] = round(time.perf_counter() - start, 3)
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    main()
