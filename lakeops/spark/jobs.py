"""Spark job entry points, for ``spark-submit`` and Airflow operators.

::

    python -m lakeops.spark.jobs write   --table PATH --source DATA [--format parquet|csv]
                                          [--mode append|overwrite]
    python -m lakeops.spark.jobs compact --table PATH [--full] [--partition k=v,k2=v2 …]
    python -m lakeops.spark.jobs flush   --table PATH [--partition …]     # level-0 flush
    python -m lakeops.spark.jobs expire  --table PATH [--retain-min N] [--retain-max N]
                                          [--time-retained "1 h"]
    python -m lakeops.spark.jobs orphans --table PATH [--older-than-hours 24] [--force]

With ``spark-submit``, pass this file as the application (``spark-submit [options]
$(python -c 'import lakeops.spark.jobs as j; print(j.__file__)') compact --table …``); its master
and configuration then come from ``spark-submit``.

Common: ``--master`` (default: the session's, ``local[*]`` when run by hand), storage options
as JSON in ``--storage-options`` or the ``LAKEOPS_STORAGE_OPTIONS`` environment variable and
catalog options (commit lock) in ``LAKEOPS_CATALOG_OPTIONS`` — never printed. The last line of
output is a JSON summary (snapshot id, kind, rows, seconds) for XComs.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
from typing import Any

__all__ = ["main"]


def _partitions(values: list[str] | None) -> list[dict[str, str]] | None:
    if not values:
        return None
    return [dict(kv.split("=", 1) for kv in v.split(",")) for v in values]


def _session(master: str | None) -> Any:
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName("lakeops")
    if master:
        builder = builder.master(master)
    elif "PYSPARK_GATEWAY_PORT" not in os.environ:  # not under spark-submit, which sets master
        builder = builder.master(os.environ.get("LAKEOPS_SPARK_MASTER", "local[*]"))
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        builder = builder.config("spark.ui.enabled", "false")
    return builder.getOrCreate()


def main(
    argv: list[str] | None = None,
    *,
    storage_options: dict[str, Any] | None = None,
    catalog_options: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Run one job from command-line arguments; returns (and prints, as the last line) its
    JSON summary. ``storage_options`` / ``catalog_options`` given here (in-process callers such
    as the Airflow operators) take precedence over the flag and the environment."""
    parser = argparse.ArgumentParser(
        prog="python -m lakeops.spark.jobs", description=__doc__.splitlines()[0]
    )
    parser.add_argument("job", choices=["write", "compact", "flush", "expire", "orphans"])
    parser.add_argument("--table", required=True, help="<warehouse>/<db>.db/<table>")
    parser.add_argument("--source", help="input data (write)")
    parser.add_argument("--format", default="parquet", choices=["parquet", "csv", "json"])
    parser.add_argument("--mode", default="append", choices=["append", "overwrite"])
    parser.add_argument("--full", action="store_true", help="full compaction (compact)")
    parser.add_argument("--partition", action="append", help="k=v[,k2=v2] (repeatable)")
    parser.add_argument("--retain-min", type=int)
    parser.add_argument("--retain-max", type=int)
    parser.add_argument("--time-retained")
    parser.add_argument("--older-than-hours", type=float, default=24.0)
    parser.add_argument(
        "--force", action="store_true", help="orphans: accept a threshold below one hour"
    )
    parser.add_argument("--master")
    parser.add_argument("--storage-options", help="JSON (or LAKEOPS_STORAGE_OPTIONS)")
    args = parser.parse_args(argv)
    storage = storage_options
    if storage is None:
        storage = json.loads(
            args.storage_options or os.environ.get("LAKEOPS_STORAGE_OPTIONS") or "{}"
        )
    catalog = catalog_options
    if catalog is None:
        catalog = json.loads(os.environ.get("LAKEOPS_CATALOG_OPTIONS") or "{}")
    from lakeops.spark import api
    from lakeops.spark.datasource import open_table

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
            )
            summary.update(
                expired=len(result.expired_snapshots), files_deleted=result.data_files_deleted
            )
        else:
            removed = table.remove_orphan_files(
                dt.timedelta(hours=args.older_than_hours), force=args.force
            )
            summary.update(files_deleted=len(removed.deleted), bytes=removed.bytes)
        snapshot = table.latest_snapshot()
    else:
        spark = _session(args.master)
        try:
            if args.job == "write":
                if not args.source:
                    parser.error("write needs --source")
                reader = spark.read.format(args.format)
                if args.format == "csv":
                    reader = reader.option("header", "true").option("inferSchema", "true")
                df = reader.load(args.source)
                api.write(
                    df,
                    args.table,
                    mode=args.mode,
                    storage_options=storage,
                    catalog_options=catalog,
                    overwrite_partitions=_partitions(args.partition),
                )
                snapshot = open_table(opts).latest_snapshot()
            else:
                snapshot = api.compact(
                    spark,
                    args.table,
                    full=args.full,
                    force_level0=args.job == "flush",
                    partitions=_partitions(args.partition),
                    storage_options=storage,
                    catalog_options=catalog,
                )
        finally:
            spark.stop()
    summary.update(
        snapshot_id=snapshot.id if snapshot else None,
        commit_kind=snapshot.commit_kind if snapshot else None,
        total_records=snapshot.total_record_count if snapshot else None,
    )
    if snapshot is not None and args.job in ("write", "compact", "flush"):
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
