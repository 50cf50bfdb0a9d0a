"""Thin operators over the library and the Spark jobs: each ``execute()`` opens the table from
the ``lakeops`` connection, runs one operation, and returns a small XCom.

Where the work runs:

* :class:`LakeopsSparkWriteOperator` always runs the Spark write job — through ``spark-submit``
  (default; ``master`` defaults to the connection's ``spark_master``, else ``local[*]``), or in the
  worker process with ``submit=False`` (a local Spark session, for small jobs and tests).
* Compaction and level-0 flush run in the worker process with the library (``engine="local"``,
  the default: vectorised, no JVM), or as the distributed Spark job (``engine="spark"``) for
  tables too big for one worker.
* Expiry and orphan cleanup are metadata and file operations: always in the worker.
* Rescaling buckets (:class:`LakeopsRescaleBucketsOperator`) runs in the worker with the
  library, or as the Spark job's ``rescale`` entry (``engine="spark"``).
* Rewriting file indexes (:class:`LakeopsRewriteFileIndexOperator`) runs in the worker.

Every operator that commits emits an Asset event for its table
(``lakeops://<conn_id>/<db>/<table>``, see :mod:`lakeops.airflow.assets`) through the
``lakeops-commits`` alias, with the snapshot id and commit kind as the event's extra; none is
emitted when nothing was committed. Airflow records such an event without warnings only for an
Asset a parsed DAG names: the DAGs in ``dags/`` name those of ``LAKEOPS_TABLES`` (see
:mod:`lakeops.airflow.dag_settings`); a DAG of your own can pass ``inlets=[table_asset(...)]``
(``DagSettings.table_asset`` for a table the flush-on-commit DAG watches: Airflow drops an Asset's
watchers when a DAG names it without them).
"""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from airflow.sdk import AssetAlias, BaseOperator, Context

from lakeops.airflow.assets import ASSET_ALIAS, table_asset
from lakeops.airflow.commit_user import task_commit_user
from lakeops.airflow.hook import LakeopsHook
from lakeops.airflow.links import XCOM_KEY, LakeopsTableLink, table_xcom_value
from lakeops.errors import ConfigurationError
from lakeops.parallel import check_parallelism
from lakeops.table import primary_key_table
from lakeops.table.modes import WriteMode

__all__ = [
    "LakeopsCompactOperator",
    "LakeopsExpirePartitionsOperator",
    "LakeopsExpireSnapshotsOperator",
    "LakeopsFlushLevel0Operator",
    "LakeopsRemoveOrphanFilesOperator",
    "LakeopsRescaleBucketsOperator",
    "LakeopsRewriteFileIndexOperator",
    "LakeopsSparkWriteOperator",
]


class _LakeopsOperator(BaseOperator):
    """Common parts: the connection, the table, the XComs and the Asset event."""

    template_fields: Sequence[str] = ("table", "lakeops_conn_id")
    operator_extra_links = (LakeopsTableLink(),)
    ui_color = "#e3f2e1"
    commits = True

    def __init__(
        self, *, table: str, lakeops_conn_id: str = LakeopsHook.default_conn_name, **kwargs: Any
    ) -> None:
        if self.commits:
            kwargs["outlets"] = [*(kwargs.get("outlets") or []), AssetAlias(ASSET_ALIAS)]
        super().__init__(**kwargs)
        self.table = table
        self.lakeops_conn_id = lakeops_conn_id

    lineage_result: dict[str, Any] | None = None

    def hook(self) -> LakeopsHook:
        return LakeopsHook(self.lakeops_conn_id)

    def lineage_inputs(self) -> list[tuple[str, str]]:
        """``(namespace, name)`` of the datasets read besides the table (none here)."""
        return []

    def lineage(self) -> dict[str, Any] | None:
        """What this task read and wrote, after :meth:`execute`: ``{"inputs": [(namespace,
        name)], "outputs": [...], "run": {snapshot_id, commit_kind, counts…}}`` (None before)."""
        if self.lineage_result is None:
            return None
        table = (f"lakeops://{self.lakeops_conn_id}", str(self.table))
        run = {k: v for k, v in self.lineage_result.items() if k not in ("table", "seconds")}
        return {"inputs": [*self.lineage_inputs(), table], "outputs": [table], "run": run}

    # the OpenLineage provider's hook signature; the lineage is the operator's own
    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:  # noqa: ARG002
        """OpenLineage's view of :meth:`lineage` (called by the OpenLineage provider, which
        this needs; without it lakeops reports nothing)."""
        from airflow.providers.openlineage.extractors import OperatorLineage
        from openlineage.client.event_v2 import Dataset as InputDataset
        from openlineage.client.event_v2 import OutputDataset
        from openlineage.client.facet_v2 import output_statistics_output_dataset

        lineage = self.lineage()
        if lineage is None:
            return OperatorLineage()
        run = lineage["run"]
        facets: dict[str, Any] = {}
        if run.get("snapshot_id") is not None:  # rows, bytes and files this commit wrote
            facets["outputStatistics"] = (
                output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet(
                    rowCount=run.get("rows_written"),
                    size=run.get("bytes_written"),
                    fileCount=run.get("files_added"),
                )
            )
        return OperatorLineage(
            inputs=[InputDataset(namespace=ns, name=name) for ns, name in lineage["inputs"]],
            outputs=[
                OutputDataset(namespace=ns, name=name, outputFacets=facets)
                for ns, name in lineage["outputs"]
            ],
            run_facets={"lakeops": _run_facet(**run)},
        )

    #: the table reference pushed under ``XCOM_KEY`` (None until pushed), read by the link
    lakeops_table_pushed: dict[str, str] | None = None

    def _done(self, context: Context, result: dict[str, Any], start: float) -> dict[str, Any]:
        result = {"table": self.table, **result, "seconds": round(time.monotonic() - start, 3)}
        pushed = table_xcom_value(self.lakeops_conn_id, self.table)
        context["ti"].xcom_push(key=XCOM_KEY, value=pushed)
        self.lakeops_table_pushed = pushed
        if self.commits and result.get("snapshot_id") is not None:
            context["outlet_events"][AssetAlias(ASSET_ALIAS)].add(
                table_asset(self.lakeops_conn_id, self.table),
                extra={
                    "snapshot_id": result["snapshot_id"],
                    "commit_kind": result.get("commit_kind"),
                    "task": self.task_id,
                },
            )
        self.log.info("lakeops %s: %s", type(self).__name__, result)
        self.lineage_result = result
        return result


def _run_facet(**values: Any) -> Any:
    """An OpenLineage run facet holding ``values`` (snapshot id, commit kind, counts)."""
    import attrs
    from openlineage.client.facet_v2 import RunFacet

    cls = attrs.make_class(
        "LakeopsRunFacet", {k: attrs.field(default=None) for k in values}, bases=(RunFacet,)
    )
    return cls(**values)


class _SparkJobMixin:
    """Options shared by the operators that can run a Spark job."""

    master: str | None
    spark_conf: dict[str, str]
    py_files: list[str]
    spark_log_level: str | None

    def _submit(self, hook: LakeopsHook, job: str, args: list[str], submit: bool) -> dict[str, Any]:
        from lakeops.spark import jobs
        from lakeops.spark.submit import check_log_level, spark_submit

        config = hook.config
        level = check_log_level(self.spark_log_level or config["spark_log_level"])
        if not submit:
            previous = os.environ.get("LAKEOPS_SPARK_LOG_LEVEL")
            os.environ["LAKEOPS_SPARK_LOG_LEVEL"] = level
            try:
                return jobs.main(
                    [job, *args, "--master", self.master or "local[*]"],
                    storage_options=hook.storage_options,
                    catalog_options=hook.catalog_options,
                )
            finally:
                if previous is None:
                    os.environ.pop("LAKEOPS_SPARK_LOG_LEVEL", None)
                else:
                    os.environ["LAKEOPS_SPARK_LOG_LEVEL"] = previous
        log = self.log  # type: ignore[attr-defined]
        return spark_submit(
            job,
            args,
            master=self.master or config["spark_master"] or "local[*]",
            conf={**config["spark_conf"], **self.spark_conf},
            py_files=self.py_files,
            storage_options=hook.storage_options,
            catalog_options=hook.catalog_options,
            log=log.info,
            log_level=level,
        )


def _partition_args(partitions: Sequence[Mapping[str, Any]] | None) -> list[str]:
    """``--partitions <JSON>`` for the job (nothing for "every partition"): every value, with
    ``,``, ``=``, quotes or NULL, reaches the job exactly."""
    from lakeops.spark.jobs import encode_partitions

    if not partitions:
        return []
    return [f"--partitions={encode_partitions(partitions)}"]


class LakeopsSparkWriteOperator(_SparkJobMixin, _LakeopsOperator):
    """Write ``source`` (a Parquet, CSV or JSON-lines file, or a directory of them) into
    ``table`` as one commit. Values are parsed as the table's column types by the reader the CLI
    shares (:mod:`lakeops.write.input_files`); a value that does not fit fails the task naming
    its file, line and column, before anything is committed.

    Args:
        source: input path or URI (templated).
        table: ``database.table`` (templated; it must exist).
        mode: ``append`` or ``overwrite`` (Paimon ``OVERWRITE``; with ``overwrite_partitions``
            only those static partitions).
        source_format: ``parquet`` | ``csv`` (with a header line) | ``json`` (JSON lines).
        master: Spark master; default the connection's ``spark_master``, else ``local[*]``.
        spark_conf: extra ``--conf`` entries (merged over the connection's ``spark_conf``).
        py_files: wheels/zips shipped to executors (``--py-files``) on a real cluster.
        spark_log_level: level of Spark's own log in the task log (default: the connection's
            ``spark_log_level``, else ``WARN``; ``INFO`` relays all of it).
        submit: ``spark-submit`` (True) or a Spark session in the worker process (False).
        parallelism: most buckets one Spark task writes at once (``--parallelism`` of the job;
            default and cap: the task's ``spark.task.cpus``, so executors are never
            oversubscribed). The result is the same at every value.
        via: ``python`` (default: one Python writer per bucket, compacting as Paimon's writers
            do), ``auto`` (the native path of ``lakeops.spark.write`` where it can write the
            table, which does not compact while writing) or ``native`` (refused where the native
            path cannot write); see ``lakeops.spark.write``.
        exactly_once: commit under a commit user derived from the task instance (DAG, task,
            run, map index; :mod:`lakeops.airflow.commit_user`), so a retry after the commit
            landed (the task failed later, e.g. pushing its XCom) publishes nothing and deletes
            what it wrote (default True). False: every try commits.
        watermark: the commit's watermark (epoch milliseconds, templated: e.g.
            ``"{{ data_interval_end.int_timestamp * 1000 }}"``), stored in the snapshot as
            ``Table.commit`` stores it (``tag.automatic-creation = watermark`` tags follow it);
            None (default): none.

    Returns (XCom): ``table, snapshot_id, commit_kind, total_records, files_added,
    bytes_written, rows_written, path, already_committed, seconds``; ``path`` is ``native`` or
    ``python``, the path that wrote; ``already_committed`` is true when an earlier try of this
    task instance had committed (``snapshot_id`` is then that commit's).
    """

    template_fields: Sequence[str] = (
        "source",
        "table",
        "mode",
        "source_format",
        "lakeops_conn_id",
        "master",
        "watermark",
    )

    def __init__(
        self,
        *,
        source: str,
        table: str,
        mode: WriteMode = "append",
        source_format: str = "parquet",
        overwrite_partitions: Sequence[Mapping[str, Any]] | None = None,
        master: str | None = None,
        spark_conf: Mapping[str, str] | None = None,
        py_files: Sequence[str] = (),
        spark_log_level: str | None = None,
        submit: bool = True,
        parallelism: int | None = None,
        via: Literal["python", "auto", "native"] = "python",
        exactly_once: bool = True,
        watermark: int | str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(table=table, **kwargs)
        self.watermark = watermark
        self.parallelism = check_parallelism(parallelism)
        self.exactly_once = exactly_once
        if via not in ("python", "auto", "native"):
            raise ConfigurationError(f"via must be 'python', 'auto' or 'native', got {via!r}")
        self.via = via
        self.source = source
        self.mode = mode
        self.source_format = source_format
        self.overwrite_partitions = list(overwrite_partitions or [])
        self.master = master
        self.spark_conf = dict(spark_conf or {})
        self.py_files = list(py_files)
        self.spark_log_level = spark_log_level
        self.submit = submit

    def lineage_inputs(self) -> list[tuple[str, str]]:
        """The source files: namespace ``scheme://host`` (``file`` for a local path), the path."""
        from urllib.parse import urlsplit

        parts = urlsplit(str(self.source))
        if parts.scheme and parts.netloc:
            return [(f"{parts.scheme}://{parts.netloc}", parts.path or "/")]
        return [("file", parts.path if parts.scheme else str(self.source))]

    def execute(self, context: Context) -> dict[str, Any]:
        start = time.monotonic()
        if not self.source:
            raise ConfigurationError(
                "no source to ingest: pass source= (or the DAG's 'source' param), e.g. "
                "s3://landing/orders/2024-01-01/"
            )
        if self.source_format not in ("parquet", "csv", "json"):
            raise ConfigurationError(
                f"source format must be parquet, csv or json, got {self.source_format!r}"
            )
        if self.mode not in ("append", "overwrite"):
            raise ConfigurationError(f"mode must be 'append' or 'overwrite', got {self.mode!r}")
        hook = self.hook()
        path = hook.get_table(self.table).root  # fails clearly if the table does not exist
        args = ["--table", path, "--source", self.source, "--format", self.source_format]
        args += ["--mode", self.mode, *_partition_args(self.overwrite_partitions)]
        args += _parallelism_args(self.parallelism)
        if self.via != "python":
            args += ["--via", self.via]
        user = task_commit_user(context) if self.exactly_once else None
        if user is not None:
            args += ["--commit-user", user]
        if self.watermark is not None and str(self.watermark).strip() != "":
            try:
                watermark = int(str(self.watermark).strip())
            except ValueError:
                raise ConfigurationError(
                    f"watermark must be epoch milliseconds (an integer), got {self.watermark!r}"
                ) from None
            args += ["--watermark", str(watermark)]
        summary = self._submit(hook, "write", args, self.submit)
        if summary.get("already_committed"):
            self.log.warning(
                "lakeops: an earlier try of this task instance already committed to %s "
                "(snapshot %s); this try published nothing. To write again, trigger a new "
                "run or set exactly_once=False",
                self.table,
                summary.get("snapshot_id"),
            )
        return self._done(context, _with_rows(hook, self.table, _summary(summary)), start)


def _with_rows(hook: LakeopsHook, table: str, result: dict[str, Any]) -> dict[str, Any]:
    """``result`` with ``rows_written`` (rows in the data files its snapshot added) when it
    committed one: the row count lineage reports."""
    if result.get("snapshot_id") is None:
        return result
    stats = hook.get_table(table).commit_stats(int(result["snapshot_id"]))
    return {**result, "rows_written": stats.rows_added}


def _parallelism_args(parallelism: int | None) -> list[str]:
    """``--parallelism N`` for a job (nothing for the default)."""
    return [] if parallelism is None else ["--parallelism", str(parallelism)]


def _summary(summary: Mapping[str, Any]) -> dict[str, Any]:
    keep = (
        "snapshot_id",
        "commit_kind",
        "total_records",
        "files_added",
        "files_rewritten",
        "bytes_written",
        "path",
        "already_committed",
    )
    return {k: summary.get(k) for k in keep if k in summary}


class _CompactionOperator(_SparkJobMixin, _LakeopsOperator):
    template_fields: Sequence[str] = ("table", "partitions", "lakeops_conn_id", "master")
    force_level0 = False
    full = False

    def __init__(
        self,
        *,
        table: str,
        partitions: Sequence[Mapping[str, Any]] | None = None,
        engine: Literal["local", "spark"] = "local",
        master: str | None = None,
        spark_conf: Mapping[str, str] | None = None,
        py_files: Sequence[str] = (),
        parallelism: int | None = None,
        spark_log_level: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(table=table, **kwargs)
        self.parallelism = check_parallelism(parallelism)
        self.spark_log_level = spark_log_level
        if engine not in ("local", "spark"):
            raise ConfigurationError(f"engine must be 'local' or 'spark', got {engine!r}")
        self.partitions = partitions
        self.engine = engine
        self.master = master
        self.spark_conf = dict(spark_conf or {})
        self.py_files = list(py_files)

    def execute(self, context: Context) -> dict[str, Any]:
        start = time.monotonic()
        hook = self.hook()
        table = hook.get_table(self.table)
        partitions = list(self.partitions) if self.partitions else None
        if self.engine == "spark":
            job = "flush" if self.force_level0 else "compact"
            args = ["--table", table.root, *_partition_args(partitions)]
            if self.full:
                args.append("--full")
            summary = _summary(self._submit(hook, job, args, True))
            return self._done(context, _with_rows(hook, self.table, summary), start)
        if self.force_level0:
            snapshot = primary_key_table(table, "flush_level0").flush_level0(
                partitions=partitions, parallelism=self.parallelism
            )
        else:
            snapshot = table.compact(
                full=self.full, partitions=partitions, parallelism=self.parallelism
            )
        result: dict[str, Any] = {"snapshot_id": None, "files_rewritten": 0, "bytes_written": 0}
        if snapshot is not None:
            stats = table.commit_stats(snapshot.id)
            result = {
                "snapshot_id": snapshot.id,
                "commit_kind": snapshot.commit_kind,
                "total_records": snapshot.total_record_count,
                "files_rewritten": stats.files_deleted,
                "files_added": stats.files_added,
                "bytes_written": stats.bytes_added,
                "rows_written": stats.rows_added,
            }
        return self._done(context, result, start)


class LakeopsCompactOperator(_CompactionOperator):
    """Compact a table (or only ``partitions``, e.g. ``[{"dt": "2024-01-01"}]``) with its
    universal strategy, or fully with ``full=True`` (every bucket to one sorted run). An
    append table (no primary key) gets Paimon's small-file compaction
    (:meth:`lakeops.table.append.AppendTable.compact`), in the worker or with
    ``engine="spark"`` in Spark tasks.

    ``parallelism``: buckets compacted at once in the worker (``engine="local"``; default: the
    cores available, capped by the buckets in play). With ``engine="spark"`` it is not used:
    each Spark task compacts one bucket on one core. The result is the same at every value.

    Returns (XCom): ``table, snapshot_id (None if nothing needed compacting), commit_kind,
    total_records, files_rewritten, files_added, bytes_written, rows_written, seconds``.
    """

    def __init__(self, *, full: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.full = full


class LakeopsFlushLevel0Operator(_CompactionOperator):
    """Lift every level-0 file of a lookup table (first-row, ``changelog-producer=lookup``,
    deletion vectors) to a higher level, so lookups and batch reads see the newest rows. Same
    XCom as :class:`LakeopsCompactOperator`."""

    force_level0 = True


class LakeopsExpireSnapshotsOperator(_LakeopsOperator):
    """Expire snapshots by the table's retention options, or the arguments given here
    (``retain_min``, ``retain_max``, ``time_retained`` such as ``"1 h"``). Makes no commit.

    ``parallelism``: files listed, read and deleted at once in the worker (default 16: the
    work waits on storage); the crash-safe order of the steps does not change.

    Returns (XCom): ``table, expired_snapshot_ids ([first, last] or None),
    earliest_snapshot_id (the oldest kept), expired_snapshots, expired_changelogs,
    data_files_deleted, changelog_files_deleted, seconds``.
    """

    commits = False

    def __init__(
        self,
        *,
        retain_min: int | None = None,
        retain_max: int | None = None,
        time_retained: str | None = None,
        parallelism: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.retain_min = retain_min
        self.retain_max = retain_max
        self.time_retained = time_retained
        self.parallelism = check_parallelism(parallelism)

    def execute(self, context: Context) -> dict[str, Any]:
        start = time.monotonic()
        table = self.hook().get_table(self.table)
        result = table.expire_snapshots(
            retain_min=self.retain_min,
            retain_max=self.retain_max,
            time_retained=self.time_retained,
            parallelism=self.parallelism,
        )
        expired = sorted(result.expired_snapshots)
        retained = table.snapshots()
        return self._done(
            context,
            {
                "expired_snapshot_ids": [expired[0], expired[-1]] if expired else None,
                "earliest_snapshot_id": retained[0].id if retained else None,
                "expired_snapshots": len(result.expired_snapshots),
                "expired_changelogs": len(result.expired_changelogs),
                "data_files_deleted": result.data_files_deleted,
                "changelog_files_deleted": result.changelog_files_deleted,
            },
            start,
        )


class LakeopsExpirePartitionsOperator(_LakeopsOperator):
    """Drop the partitions the table's ``partition.expiration-time`` expires, as Paimon does
    (``partition.expiration-strategy``, ``partition.timestamp-pattern`` / ``-formatter``), as
    one ``OVERWRITE`` commit that deletes no file. ``report_only`` lists them and commits
    nothing (a dry run; ``dry_run`` is taken by ``BaseOperator.dry_run()``).

    Returns (XCom): ``table, partitions (values by key), snapshot_id (the last drop; None when
    nothing was dropped), snapshot_ids (one per ``partition.expiration-batch-size`` batch),
    commit_kind, report_only, seconds``.
    """

    def __init__(self, *, report_only: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.report_only = report_only

    def execute(self, context: Context) -> dict[str, Any]:
        start = time.monotonic()
        table = self.hook().get_table(self.table)
        result = table.expire_partitions(dry_run=self.report_only)
        return self._done(
            context,
            {
                "partitions": result.partitions,
                "snapshot_id": result.snapshot_id,
                "snapshot_ids": list(result.snapshot_ids),
                "commit_kind": "OVERWRITE" if result.snapshot_id is not None else None,
                "report_only": self.report_only,
            },
            start,
        )


class LakeopsDropPartitionsOperator(_LakeopsOperator):
    """Drop ``partitions`` (specs such as ``[{"dt": "{{ ds }}"}]``; templated) as one
    ``OVERWRITE`` commit that deletes no file, as Paimon's ``DROP PARTITION``
    (:meth:`lakeops.Table.drop_partitions`). A spec that matches no partition with data fails
    the task unless ``if_exists``; ``report_only`` lists what would go and commits nothing.

    Returns (XCom): ``table, partitions (values by key), snapshot_id (None when nothing was
    dropped), commit_kind, report_only, seconds``.
    """

    template_fields: Sequence[str] = (*_LakeopsOperator.template_fields, "partitions")

    def __init__(
        self,
        *,
        partitions: Sequence[Mapping[str, Any]],
        if_exists: bool = False,
        report_only: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.partitions = partitions
        self.if_exists = if_exists
        self.report_only = report_only

    def execute(self, context: Context) -> dict[str, Any]:
        start = time.monotonic()
        table = self.hook().get_table(self.table)
        result = table.drop_partitions(
            self.partitions, if_exists=self.if_exists, dry_run=self.report_only
        )
        return self._done(
            context,
            {
                "partitions": result.partitions,
                "snapshot_id": result.snapshot_id,
                "commit_kind": "OVERWRITE" if result.snapshot_id is not None else None,
                "report_only": self.report_only,
            },
            start,
        )


class LakeopsBranchOperator(_LakeopsOperator):
    """A branch step of write-audit-publish, as Paimon's branch procedures: ``action`` is
    ``"create"`` (branch ``branch`` from ``from_tag`` or ``from_snapshot``, or empty;
    ``ignore_if_exists``), ``"fast_forward"`` (the main branch becomes the branch: an Asset
    event with the new latest snapshot) or ``"delete"``. Write to the branch with the other
    operators by naming the table ``'db.table$branch_<name>'``. ``branch`` is templated.

    Returns (XCom): ``table, action, branch, snapshot_id (fast_forward only), seconds``.
    """

    template_fields: Sequence[str] = (*_LakeopsOperator.template_fields, "branch")

    def __init__(
        self,
        *,
        action: Literal["create", "fast_forward", "delete"],
        branch: str,
        from_tag: str | None = None,
        from_snapshot: int | None = None,
        ignore_if_exists: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if action not in ("create", "fast_forward", "delete"):
            raise ConfigurationError(f"action {action!r}: use 'create', 'fast_forward' or 'delete'")
        self.action = action
        self.branch = branch
        self.from_tag = from_tag
        self.from_snapshot = from_snapshot
        self.ignore_if_exists = ignore_if_exists

    def execute(self, context: Context) -> dict[str, Any]:
        start = time.monotonic()
        table = self.hook().get_table(self.table)
        snapshot_id = None
        if self.action == "create":
            table.create_branch(
                self.branch,
                from_tag=self.from_tag,
                from_snapshot=self.from_snapshot,
                ignore_if_exists=self.ignore_if_exists,
            )
        elif self.action == "delete":
            table.delete_branch(self.branch)
        else:
            snapshot_id = table.fast_forward(self.branch).id
        result = {"action": self.action, "branch": self.branch, "snapshot_id": snapshot_id}
        if snapshot_id is not None:
            result["commit_kind"] = "FAST_FORWARD"
        return self._done(context, result, start)


class LakeopsRescaleBucketsOperator(_SparkJobMixin, _LakeopsOperator):
    """Rescale a fixed-bucket table (Paimon's "Rescale Bucket"): with ``bucket`` first change
    the table's bucket count, then rewrite ``partitions`` (default: every partition whose files
    hold another count) into it as ONE ``OVERWRITE`` commit
    (:meth:`lakeops.Table.rescale_buckets`). ``engine="local"`` (default) runs it in the
    worker; ``engine="spark"`` runs the Spark job's ``rescale`` entry (``submit``, ``master``,
    ``spark_conf``, ``py_files`` as for the compaction operators).

    Returns (XCom): ``table, bucket, partitions (their directory names), rows, snapshot_id
    (None when nothing needed rescaling), commit_kind, seconds``.
    """

    template_fields: Sequence[str] = ("table", "partitions", "lakeops_conn_id", "master")

    def __init__(
        self,
        *,
        bucket: int | None = None,
        partitions: Sequence[Mapping[str, Any]] | None = None,
        engine: Literal["local", "spark"] = "local",
        parallelism: int | None = None,
        master: str | None = None,
        spark_conf: Mapping[str, str] | None = None,
        py_files: Sequence[str] = (),
        spark_log_level: str | None = None,
        submit: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if engine not in ("local", "spark"):
            raise ConfigurationError(f"engine must be 'local' or 'spark', got {engine!r}")
        if bucket is not None and bucket < 1:
            raise ConfigurationError(f"bucket must be a fixed count >= 1, got {bucket}")
        self.bucket = bucket
        self.partitions = list(partitions or [])
        self.engine = engine
        self.parallelism = check_parallelism(parallelism)
        self.master = master
        self.spark_conf = dict(spark_conf or {})
        self.py_files = list(py_files)
        self.spark_log_level = spark_log_level
        self.submit = submit

    def execute(self, context: Context) -> dict[str, Any]:
        start = time.monotonic()
        hook = self.hook()
        table = hook.get_table(self.table)
        if self.engine == "spark":
            args = ["--table", table.root, *_partition_args(self.partitions)]
            args += _parallelism_args(self.parallelism)
            if self.bucket is not None:
                args += ["--bucket", str(self.bucket)]
            summary = self._submit(hook, "rescale", args, self.submit)
            result = {
                k: summary.get(k)
                for k in ("bucket", "partitions", "rows", "snapshot_id", "commit_kind")
            }
            return self._done(context, result, start)
        rescaled = table.rescale_buckets(
            bucket=self.bucket, partitions=self.partitions or None, parallelism=self.parallelism
        )
        snapshot = rescaled.snapshot
        return self._done(
            context,
            {
                "bucket": rescaled.bucket,
                "partitions": list(rescaled.partitions),
                "rows": rescaled.rows,
                "snapshot_id": None if snapshot is None else snapshot.id,
                "commit_kind": None if snapshot is None else snapshot.commit_kind,
            },
            start,
        )


class LakeopsRewriteFileIndexOperator(_LakeopsOperator):
    """Rebuild the file indexes of the live data files of ``partitions`` (default: every
    partition) as the table's ``file-index.*`` options now ask, data untouched, as one
    ``COMPACT`` commit (:meth:`lakeops.Table.rewrite_file_index`, Paimon's
    ``rewrite_file_index`` procedure) — run it after adding an index option to a table with
    data. In the worker (metadata and index bytes only: no Spark job).

    Returns (XCom): ``table, files (data files whose index was rewritten), snapshot_id (None
    when there was no file), commit_kind, seconds``.
    """

    template_fields: Sequence[str] = ("table", "partitions", "lakeops_conn_id")

    def __init__(self, *, partitions: Sequence[Mapping[str, Any]] | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.partitions = list(partitions or [])

    def execute(self, context: Context) -> dict[str, Any]:
        start = time.monotonic()
        table = self.hook().get_table(self.table)
        specs = [{k: str(v) for k, v in p.items()} for p in self.partitions] or None
        result = table.rewrite_file_index(partitions=specs)
        return self._done(
            context,
            {
                "files": result.files,
                "snapshot_id": result.snapshot_id,
                "commit_kind": "COMPACT" if result.snapshot_id is not None else None,
            },
            start,
        )


class LakeopsRemoveOrphanFilesOperator(_LakeopsOperator):
    """Delete files no snapshot references that are older than ``older_than`` (default one day,
    as Paimon; younger files may belong to a running writer). ``report_only`` counts them and
    deletes nothing (a dry run; the name ``dry_run`` is taken by ``BaseOperator.dry_run()``).
    A threshold below one hour fails the task unless ``force=True`` (files of a commit in
    progress look like orphans until it publishes). ``parallelism``: directories listed,
    manifests read and files deleted at once in the worker (default 16: the work waits on
    storage).

    Returns (XCom): ``table, files_deleted, bytes, report_only, seconds``.
    """

    commits = False

    def __init__(
        self,
        *,
        older_than: dt.timedelta = dt.timedelta(days=1),
        report_only: bool = False,
        force: bool = False,
        parallelism: int | None = None,
        **kw: Any,
    ) -> None:
        super().__init__(**kw)
        self.older_than = older_than
        self.report_only = report_only
        self.force = force
        self.parallelism = check_parallelism(parallelism)

    def execute(self, context: Context) -> dict[str, Any]:
        start = time.monotonic()
        table = self.hook().get_table(self.table)
        result = table.remove_orphan_files(
            older_than=self.older_than,
            dry_run=self.report_only,
            force=self.force,
            parallelism=self.parallelism,
        )
        return self._done(
            context,
            {
                "files_deleted": len(result.deleted),
                "bytes": result.bytes,
                "report_only": self.report_only,
            },
            start,
        )
