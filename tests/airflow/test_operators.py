"""Operators' ``execute(context)`` for real against real tables: what they change on the table,
their XComs and their Asset events. The context holds a recording task instance and Airflow's own
outlet-event accessors."""

from __future__ import annotations

import datetime as dt
import os
import stat
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from airflow.sdk import AssetAlias
from airflow.sdk.execution_time.context import OutletEventAccessors

from lakeops import Catalog
from lakeops.airflow.assets import ASSET_ALIAS
from lakeops.airflow.operators import (
    LakeopsBranchOperator,
    LakeopsCompactOperator,
    LakeopsDropPartitionsOperator,
    LakeopsExpirePartitionsOperator,
    LakeopsExpireSnapshotsOperator,
    LakeopsFlushLevel0Operator,
    LakeopsRemoveOrphanFilesOperator,
    LakeopsRescaleBucketsOperator,
    LakeopsRewriteFileIndexOperator,
    LakeopsSparkWriteOperator,
)
from lakeops.errors import ConfigurationError, PartitionNotFoundError, TableNotFoundError
from tests.airflow.conftest import connection_json

pytestmark = pytest.mark.airflow

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64())])


class RecordingTI:
    """Stands in for the task instance: records XCom pushes."""

    def __init__(self) -> None:
        self.xcoms: dict[str, Any] = {}

    def xcom_push(self, key: str, value: Any) -> None:
        self.xcoms[key] = value


def _context() -> dict[str, Any]:
    return {"ti": RecordingTI(), "outlet_events": OutletEventAccessors()}


def _events(context: dict[str, Any]) -> list[tuple[str, dict]]:
    accessor = context["outlet_events"][AssetAlias(ASSET_ALIAS)]
    return [(e.dest_asset_key.uri, e.extra) for e in accessor.asset_alias_events]


def _rows(ids: range, v: int, dt_value: str = "d1") -> pa.Table:
    return pa.table(
        {"dt": [dt_value] * len(ids), "id": list(ids), "v": [v] * len(ids)}, schema=SCHEMA
    )


def _table(catalog: Catalog, name: str = "db.t", **options: str):
    return catalog.create_table(
        name,
        schema=SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "2", "write-only": "true", **options},
    )


def test_compact_full_leaves_one_run_per_bucket_and_emits_an_asset_event(
    catalog: Catalog, lakeops_conn: str
) -> None:
    table = _table(catalog)
    for v in range(3):
        table.write(_rows(range(100), v))
    files_before = sum(len(s.files) for s in table.splits())
    assert max(b.sorted_runs for b in table.health().buckets) == 3

    context = _context()
    op = LakeopsCompactOperator(task_id="compact", table="db.t", full=True)
    result = op.execute(context)

    latest = table.latest_snapshot()
    assert latest is not None and latest.commit_kind == "COMPACT"
    assert result["snapshot_id"] == latest.id
    assert result["files_rewritten"] == files_before
    assert result["bytes_written"] > 0
    assert all(b.sorted_runs == 1 for b in table.health().buckets)
    assert table.read().sort_by("id")["v"].to_pylist() == [2] * 100
    assert _events(context) == [
        (
            "lakeops://lakeops_default/db/t",
            {"snapshot_id": latest.id, "commit_kind": "COMPACT", "task": "compact"},
        )
    ]
    assert context["ti"].xcoms["lakeops_table"] == {"conn_id": "lakeops_default", "table": "db.t"}

    again = _context()
    assert op.execute(again)["snapshot_id"] is None  # nothing left to compact: no commit
    assert _events(again) == []
    assert table.latest_snapshot().id == latest.id


def test_compact_only_the_given_partition(catalog: Catalog, lakeops_conn: str) -> None:
    table = _table(catalog)
    for v in range(2):
        table.write(pa.concat_tables([_rows(range(50), v, "d1"), _rows(range(50), v, "d2")]))
    LakeopsCompactOperator(task_id="c", table="db.t", full=True, partitions=[{"dt": "d2"}]).execute(
        _context()
    )
    runs = {(b.partition["dt"], b.bucket): b.sorted_runs for b in table.health().buckets}
    assert {k: r for k, r in runs.items() if k[0] == "d2"} == {("d2", 0): 1, ("d2", 1): 1}
    assert all(r == 2 for k, r in runs.items() if k[0] == "d1")


def test_compact_moves_a_postpone_tables_rows_into_real_buckets(
    catalog: Catalog, lakeops_conn: str
) -> None:
    """``bucket = -2``: the operator's compaction moves the postponed rows (one COMPACT
    snapshot) so they become visible, only in the partitions it is given."""
    table = catalog.create_table(
        "db.pp",
        schema=SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        # writes stay postponed (the default, fixed-bucket batch writes, moves them at once)
        options={
            "bucket": "-2",
            "postpone.default-bucket-num": "2",
            "postpone.batch-write-fixed-bucket": "false",
        },
    )
    table.write(pa.concat_tables([_rows(range(20), 1, "d1"), _rows(range(20), 1, "d2")]))
    assert table.read().num_rows == 0
    result = LakeopsCompactOperator(task_id="c", table="db.pp", partitions=[{"dt": "d2"}]).execute(
        _context()
    )
    latest = table.latest_snapshot()
    assert latest is not None and result["snapshot_id"] == latest.id
    assert latest.commit_kind == "COMPACT"
    assert set(table.read().column("dt").to_pylist()) == {"d2"}
    assert table.read().num_rows == 20


def test_flush_level0_makes_first_row_keys_visible(catalog: Catalog, lakeops_conn: str) -> None:
    table = _table(catalog, "db.fr", **{"merge-engine": "first-row"})
    table.write(_rows(range(10), 1))
    keys = pa.table({"dt": ["d1"] * 3, "id": [1, 2, 3]})
    assert table.lookup(keys).num_rows == 0  # level 0 is invisible to first-row lookups

    context = _context()
    result = LakeopsFlushLevel0Operator(task_id="flush", table="db.fr").execute(context)
    assert result["snapshot_id"] == table.latest_snapshot().id
    assert sorted(table.lookup(keys)["id"].to_pylist()) == [1, 2, 3]
    assert all(b.level0_files == 0 for b in table.health().buckets)
    assert [uri for uri, _ in _events(context)] == ["lakeops://lakeops_default/db/fr"]


def test_flush_level0_of_a_deletion_vector_table_marks_the_rows_it_supersedes(
    catalog: Catalog, lakeops_conn: str
) -> None:
    """``write-only`` leaves each write in level 0 (a deletion-vector read skips it); the flush
    operator lifts it and the second flush marks (or rewrites away) the first write's rows it
    supersedes, so the unmarked rows of levels >= 1 are one per key and the read is the newest
    rows."""
    table = _table(catalog, "db.dv", **{"deletion-vectors.enabled": "true"})
    table.write(_rows(range(10), 1))
    assert table.read().num_rows == 0
    LakeopsFlushLevel0Operator(task_id="flush", table="db.dv").execute(_context())
    table.write(_rows(range(5), 2))
    assert sorted(table.read()["v"].to_pylist()) == [1] * 10
    result = LakeopsFlushLevel0Operator(task_id="flush", table="db.dv").execute(_context())
    latest = table.latest_snapshot()
    assert result["snapshot_id"] == latest.id and latest.commit_kind == "COMPACT"
    assert sorted(table.read()["v"].to_pylist()) == [1] * 5 + [2] * 5
    vectors = [
        e for e in table.store.index_entries(latest) if e.file.index_type == "DELETION_VECTORS"
    ]
    marked = sum(
        r["_CARDINALITY"] for e in vectors for r in dict(e.file.extra)["_DELETIONS_VECTORS_RANGES"]
    )
    # the deletion-vector read rule Java relies on: the unmarked rows of levels >= 1 are exactly
    # one per key (the flush either rewrote the superseded rows away or marked them)
    lifted = sum(e.file.row_count for e in table.store.live_entries(latest) if e.file.level > 0)
    assert lifted - marked == 10


def test_expire_follows_the_table_options(catalog: Catalog, lakeops_conn: str) -> None:
    table = _table(
        catalog,
        **{
            "snapshot.num-retained.min": "1",
            "snapshot.num-retained.max": "3",
            "snapshot.time-retained": "1 h",
        },
    )
    for v in range(5):
        table.write(_rows(range(20), v))
    context = _context()
    result = LakeopsExpireSnapshotsOperator(task_id="expire", table="db.t").execute(context)
    assert [s.id for s in table.snapshots()] == [3, 4, 5]  # at most 3 retained
    assert result["expired_snapshots"] == 2
    assert table.read().sort_by("id")["v"].to_pylist() == [4] * 20
    assert _events(context) == []  # expiry commits nothing


def test_expire_partitions_report_only_then_for_real(catalog: Catalog, lakeops_conn: str) -> None:
    table = _table(catalog, **{"partition.expiration-time": "7 d"})
    table.write(_rows(range(5), 1, "2024-01-01"))
    table.write(_rows(range(5), 1, "2999-01-01"))
    table.write(_rows(range(5), 1, "not-a-date"))
    latest = table.latest_snapshot()
    assert latest is not None
    context = _context()
    dry = LakeopsExpirePartitionsOperator(task_id="p", table="db.t", report_only=True).execute(
        context
    )
    assert dry["partitions"] == [{"dt": "2024-01-01"}] and dry["snapshot_id"] is None
    assert table.latest_snapshot() == latest and _events(context) == []

    context = _context()
    result = LakeopsExpirePartitionsOperator(task_id="p", table="db.t").execute(context)
    assert result["partitions"] == [{"dt": "2024-01-01"}]
    assert result["snapshot_id"] == latest.id + 1 and result["commit_kind"] == "OVERWRITE"
    assert sorted(set(table.read()["dt"].to_pylist())) == ["2999-01-01", "not-a-date"]
    assert [extra["commit_kind"] for _, extra in _events(context)] == ["OVERWRITE"]


def test_drop_partitions_report_only_then_for_real(catalog: Catalog, lakeops_conn: str) -> None:
    table = _table(catalog)
    for day in ("2024-01-01", "2024-01-02", "2024-01-03"):
        table.write(_rows(range(5), 1, day))
    latest = table.latest_snapshot()
    assert latest is not None
    context = _context()
    specs = [{"dt": "2024-01-01"}, {"dt": "2024-01-03"}]
    dry = LakeopsDropPartitionsOperator(
        task_id="d", table="db.t", partitions=specs, report_only=True
    ).execute(context)
    assert dry["partitions"] == specs and dry["snapshot_id"] is None
    assert table.latest_snapshot() == latest and _events(context) == []
    context = _context()
    result = LakeopsDropPartitionsOperator(task_id="d", table="db.t", partitions=specs).execute(
        context
    )
    assert result["partitions"] == specs and result["commit_kind"] == "OVERWRITE"
    assert result["snapshot_id"] == latest.id + 1
    assert set(table.read()["dt"].to_pylist()) == {"2024-01-02"}
    assert [extra["commit_kind"] for _, extra in _events(context)] == ["OVERWRITE"]
    with pytest.raises(PartitionNotFoundError, match="2024-01-01"):
        LakeopsDropPartitionsOperator(task_id="d", table="db.t", partitions=specs[:1]).execute(
            _context()
        )
    skipped = LakeopsDropPartitionsOperator(
        task_id="d", table="db.t", partitions=specs[:1], if_exists=True
    ).execute(_context())
    assert skipped["partitions"] == [] and skipped["snapshot_id"] is None


def test_write_audit_publish_with_a_branch(catalog: Catalog, lakeops_conn: str) -> None:
    """Create a branch from the latest snapshot, write to it (the main branch unchanged),
    fast-forward: the main branch holds the branch's rows, with one Asset event."""
    table = _table(catalog)
    table.write(_rows(range(5), 1))
    latest = table.latest_snapshot()
    assert latest is not None
    create = LakeopsBranchOperator(
        task_id="b", table="db.t", action="create", branch="audit", from_snapshot=latest.id
    )
    context = _context()
    assert create.execute(context)["snapshot_id"] is None and _events(context) == []
    catalog.get_table("db.t$branch_audit").write(_rows(range(5, 8), 2))
    assert catalog.get_table("db.t").read().num_rows == 5
    context = _context()
    done = LakeopsBranchOperator(
        task_id="p", table="db.t", action="fast_forward", branch="audit"
    ).execute(context)
    assert done["snapshot_id"] == latest.id + 1
    assert sorted(catalog.get_table("db.t").read()["id"].to_pylist()) == list(range(8))
    assert [extra["commit_kind"] for _, extra in _events(context)] == ["FAST_FORWARD"]
    LakeopsBranchOperator(task_id="d", table="db.t", action="delete", branch="audit").execute(
        _context()
    )
    assert catalog.get_table("db.t").branches() == []


def test_remove_orphans_dry_run_then_for_real(catalog: Catalog, lakeops_conn: str) -> None:
    table = _table(catalog)
    table.write(_rows(range(20), 1))
    orphan = Path(table.root) / "dt=d1" / "bucket-0" / "data-orphan.parquet"
    orphan.write_bytes(b"left by a crashed writer")
    young = LakeopsRemoveOrphanFilesOperator(task_id="o", table="db.t").execute(_context())
    assert young["files_deleted"] == 0 and orphan.exists()  # younger than a day: kept

    op = LakeopsRemoveOrphanFilesOperator(
        task_id="o", table="db.t", older_than=dt.timedelta(0), report_only=True
    )
    assert op.execute(_context())["files_deleted"] == 1 and orphan.exists()
    op.report_only = False
    with pytest.raises(ConfigurationError, match="below one hour"):
        op.execute(_context())  # a writer's files look like orphans until it publishes
    assert orphan.exists()
    op.force = True
    result = op.execute(_context())
    assert result["files_deleted"] == 1 and result["bytes"] == len(b"left by a crashed writer")
    assert not orphan.exists()
    assert table.read().num_rows == 20


def test_bad_input_fails_before_anything_runs(catalog: Catalog, lakeops_conn: str) -> None:
    with pytest.raises(TableNotFoundError):
        LakeopsCompactOperator(task_id="c", table="db.missing").execute(_context())
    _table(catalog)
    with pytest.raises(ConfigurationError, match="no source"):
        LakeopsSparkWriteOperator(task_id="w", source="", table="db.t").execute(_context())
    with pytest.raises(ConfigurationError, match="mode"):
        LakeopsSparkWriteOperator(task_id="w", source="/x", table="db.t", mode="upsert").execute(
            _context()
        )
    with pytest.raises(ConfigurationError, match="engine"):
        LakeopsCompactOperator(task_id="c", table="db.t", engine="flink")  # type: ignore[arg-type]
    assert catalog.get_table("db.t").latest_snapshot() is None


HOSTILE_PARTITIONS = [{"dt": "2024-01-01,region=eu"}, {"dt": 'a=b "q" 東京'}, {"dt": None}]


def test_spark_submit_gets_no_secret_in_argv_and_exact_partitions(
    catalog: Catalog, warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The connection's ``spark_conf`` credential reaches ``spark-submit`` in a private
    properties file (not argv) and Airflow's masker holds it; partition values with ``,``,
    ``=``, quotes, non-ASCII and NULL reach the job as written."""
    from airflow.sdk._shared.secrets_masker import redact

    from lakeops.spark import jobs, submit

    secret = f"conn-spark-secret-{os.getpid()}"
    monkeypatch.setenv(
        "AIRFLOW_CONN_LAKEOPS_DEFAULT",
        connection_json(
            warehouse, spark_conf={"spark.hadoop.fs.s3a.secret.key": secret, "spark.x": "1"}
        ),
    )
    _table(catalog)
    calls: list[dict[str, Any]] = []

    def run(command: list[str], *args: Any) -> dict[str, Any]:
        path = command[command.index("--properties-file") + 1]
        calls.append(
            {
                "argv": command,
                "mode": stat.S_IMODE(os.stat(path).st_mode),
                "properties": Path(path).read_text(),
                "path": path,
            }
        )
        return {"job": "compact", "snapshot_id": None}

    monkeypatch.setattr(submit, "_run", run)
    LakeopsCompactOperator(
        task_id="c", table="db.t", engine="spark", partitions=HOSTILE_PARTITIONS
    ).execute(_context())
    (call,) = calls
    assert not any(secret in arg for arg in call["argv"])
    assert "spark.x=1" in call["argv"]
    assert call["properties"] == f"spark.hadoop.fs.s3a.secret.key={secret}\n"
    assert call["mode"] == 0o600 and not os.path.exists(call["path"])
    assert redact(f"value {secret}") == "value ***"
    job_args = call["argv"][call["argv"].index(submit.job_file()) + 1 :]
    assert jobs.parse_args(job_args).partitions == HOSTILE_PARTITIONS


@pytest.mark.slow
def test_spark_write_in_process_then_compact_through_spark_submit(
    catalog: Catalog, warehouse: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Append, then overwrite one partition whose value holds ``,`` and ``=`` (in the worker),
    then compact only that partition through a real ``spark-submit`` that reads a credential
    from its properties file. The old ``k=v,k2=v2`` argument made ``dt = "d1,dt=d2"`` into
    ``dt = d2`` and overwrote that partition instead."""
    monkeypatch.setenv(
        "AIRFLOW_CONN_LAKEOPS_DEFAULT",
        connection_json(warehouse, spark_conf={"spark.hadoop.fs.s3a.secret.key": "not-used-1"}),
    )
    table = _table(catalog)
    source = tmp_path / "in"
    source.mkdir()
    rows = pa.concat_tables([_rows(range(300), 1, "d1"), _rows(range(200), 2, "d2")])
    pq.write_table(rows, source / "part-0.parquet")

    context = _context()
    result = LakeopsSparkWriteOperator(
        task_id="w", source=str(source), table="db.t", submit=False, master="local[2]"
    ).execute(context)
    assert result["snapshot_id"] == 1 and result["commit_kind"] == "APPEND"
    assert result["total_records"] == 500
    order = [("dt", "ascending"), ("id", "ascending")]
    assert table.read().sort_by(order).to_pylist() == rows.sort_by(order).to_pylist()
    assert [uri for uri, _ in _events(context)] == ["lakeops://lakeops_default/db/t"]

    hostile = 'd1,dt=d2 "東"'
    source2 = tmp_path / "in2"
    source2.mkdir()
    new_rows = _rows(range(100), 3, hostile)
    pq.write_table(new_rows, source2 / "part-0.parquet")
    LakeopsSparkWriteOperator(
        task_id="w",
        source=str(source2),
        table="db.t",
        mode="overwrite",
        overwrite_partitions=[{"dt": hostile}],
        submit=False,
        master="local[2]",
    ).execute(_context())
    expected = pa.concat_tables([rows, new_rows]).sort_by(order).to_pylist()
    assert table.read().sort_by(order).to_pylist() == expected  # d1 and d2 untouched

    before = {(s.partition[0], s.bucket): {f.file_name for f in s.files} for s in table.splits()}
    result = LakeopsCompactOperator(
        task_id="c",
        table="db.t",
        full=True,
        engine="spark",
        master="local[2]",
        partitions=[{"dt": hostile}],
    ).execute(_context())
    assert result["snapshot_id"] == 3 and result["commit_kind"] == "COMPACT"
    after = {(s.partition[0], s.bucket): s for s in table.splits()}
    assert {k: {f.file_name for f in s.files} for k, s in after.items() if k[0] != hostile} == {
        k: names for k, names in before.items() if k[0] != hostile
    }
    assert all(f.level > 0 for k, s in after.items() if k[0] == hostile for f in s.files)
    assert table.read().sort_by(order).to_pylist() == expected


def test_parallelism_is_passed_on_and_checked_up_front(
    catalog: Catalog, lakeops_conn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lakeops.spark import jobs, submit
    from lakeops.table.primary_key import Table

    _table(catalog)
    seen: list[tuple[str, int | None]] = []
    monkeypatch.setattr(
        Table, "compact", lambda self, **kw: seen.append(("compact", kw["parallelism"]))
    )
    monkeypatch.setattr(
        Table, "flush_level0", lambda self, **kw: seen.append(("flush", kw["parallelism"]))
    )
    LakeopsCompactOperator(task_id="c", table="db.t", parallelism=3).execute(_context())
    LakeopsFlushLevel0Operator(task_id="f", table="db.t", parallelism=2).execute(_context())
    LakeopsCompactOperator(task_id="d", table="db.t").execute(_context())
    assert seen == [("compact", 3), ("flush", 2), ("compact", None)]

    maintenance: list[tuple[str, int | None]] = []
    real_expire, real_orphans = Table.expire_snapshots, Table.remove_orphan_files

    def expire(self: Table, **kw: Any) -> Any:
        maintenance.append(("expire", kw["parallelism"]))
        return real_expire(self, **kw)

    def orphans(self: Table, **kw: Any) -> Any:
        maintenance.append(("orphans", kw["parallelism"]))
        return real_orphans(self, **kw)

    monkeypatch.setattr(Table, "expire_snapshots", expire)
    monkeypatch.setattr(Table, "remove_orphan_files", orphans)
    LakeopsExpireSnapshotsOperator(task_id="e", table="db.t", parallelism=5).execute(_context())
    LakeopsRemoveOrphanFilesOperator(task_id="o", table="db.t", parallelism=6).execute(_context())
    LakeopsExpireSnapshotsOperator(task_id="e2", table="db.t").execute(_context())
    assert maintenance == [("expire", 5), ("orphans", 6), ("expire", None)]

    argvs: list[list[str]] = []
    monkeypatch.setattr(
        submit, "_run", lambda command, *a: argvs.append(command) or {"snapshot_id": None}
    )
    LakeopsSparkWriteOperator(task_id="w", source="/in", table="db.t", parallelism=4).execute(
        _context()
    )
    (argv,) = argvs
    assert jobs.parse_args(argv[argv.index(submit.job_file()) + 1 :]).parallelism == 4

    for bad in (0, -1, True):
        with pytest.raises(ConfigurationError, match="parallelism must be a positive integer"):
            LakeopsCompactOperator(task_id="c", table="db.t", parallelism=bad)
        with pytest.raises(ConfigurationError, match="parallelism must be a positive integer"):
            LakeopsSparkWriteOperator(task_id="w", source="/in", table="db.t", parallelism=bad)
        with pytest.raises(ConfigurationError, match="parallelism must be a positive integer"):
            LakeopsExpireSnapshotsOperator(task_id="e", table="db.t", parallelism=bad)
        with pytest.raises(ConfigurationError, match="parallelism must be a positive integer"):
            LakeopsRemoveOrphanFilesOperator(task_id="o", table="db.t", parallelism=bad)
    assert catalog.get_table("db.t").latest_snapshot() is None


def test_lineage_of_flush_and_expiry(catalog: Catalog, lakeops_conn: str) -> None:
    """What the operators report to OpenLineage: the table in and out, the snapshot and the
    counts of the result, checked against the table itself."""
    table = _table(catalog, **{"merge-engine": "first-row"})
    for v in range(2):
        table.write(_rows(range(30), v))
    flush = LakeopsFlushLevel0Operator(task_id="flush", table="db.t")
    assert flush.lineage() is None  # nothing before it ran
    flush.execute(_context())
    latest = table.latest_snapshot()
    stats = table.commit_stats(latest.id)
    dataset = ("lakeops://lakeops_default", "db.t")
    assert flush.lineage() == {
        "inputs": [dataset],
        "outputs": [dataset],
        "run": {
            "snapshot_id": latest.id,
            "commit_kind": "COMPACT",
            "total_records": 30,  # first-row: 30 keys
            "files_rewritten": stats.files_deleted,
            "files_added": stats.files_added,
            "bytes_written": stats.bytes_added,
            "rows_written": stats.rows_added,
        },
    }
    expire = LakeopsExpireSnapshotsOperator(task_id="e", table="db.t", retain_min=1, retain_max=1)
    expire.execute(_context())
    lineage = expire.lineage()
    assert lineage is not None and lineage["outputs"] == [dataset]
    assert lineage["run"]["expired_snapshots"] == 2 == latest.id - 1
    write = LakeopsSparkWriteOperator(task_id="w", table="db.t", source="s3://landing/orders/")
    assert write.lineage_inputs() == [("s3://landing", "/orders/")]


def test_openlineage_events_on_a_file_transport(
    catalog: Catalog, lakeops_conn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Write, compact, flush and expire as OpenLineage sees them: the provider's extractor
    takes each operator's facets and its adapter emits the COMPLETE event through a real
    OpenLineage client with a FileTransport; every field of the file's events is checked
    against the rows written and the table's snapshots. (The Spark write job is replaced by a
    library write of the same file returning the job's summary: lineage is what is tested.)"""
    import json
    from types import SimpleNamespace

    from airflow.providers.openlineage.extractors.manager import ExtractorManager
    from airflow.providers.openlineage.plugins.adapter import OpenLineageAdapter
    from airflow.utils.state import TaskInstanceState
    from openlineage.client import OpenLineageClient
    from openlineage.client.transport.file import FileConfig, FileTransport

    log = tmp_path / "lineage.jsonl"
    transport = FileTransport(FileConfig(log_file_path=str(log), append=True))
    adapter = OpenLineageAdapter(client=OpenLineageClient(transport=transport))
    table = _table(catalog, **{"merge-engine": "first-row"})
    source = tmp_path / "in.parquet"
    pq.write_table(_rows(range(30), 0), source)

    def library_write(self: Any, hook: Any, job: str, args: list[str], submit: bool) -> Any:
        snapshot = hook.get_table(self.table).write(pq.read_table(self.source))
        stats = table.commit_stats(snapshot.id)
        return {"snapshot_id": snapshot.id, "commit_kind": snapshot.commit_kind,
                "total_records": snapshot.total_record_count, "files_added": stats.files_added,
                "bytes_written": stats.bytes_added}  # fmt: skip

    monkeypatch.setattr(LakeopsSparkWriteOperator, "_submit", library_write)

    written: dict[str, Any] = {}  # the commit of each task, read from the table

    def emit(op: Any) -> None:
        op.execute(_context())
        if op.commits:
            written[op.task_id] = table.commit_stats(table.latest_snapshot().id)
        lineage = ExtractorManager().extract_metadata(
            SimpleNamespace(run_id="r1"), op, TaskInstanceState.SUCCESS, None
        )
        adapter.complete_task(run_id="0190c2e1-0000-7000-8000-000000000000",
                              job_name=f"lineage.{op.task_id}", end_time="2026-01-01T00:00:00Z",
                              task=lineage, nominal_start_time=None, nominal_end_time=None,
                              owners=None, tags=None, job_description=None)  # fmt: skip

    emit(LakeopsSparkWriteOperator(task_id="write", table="db.t", source=str(source)))
    table.write(_rows(range(20, 50), 1))
    emit(LakeopsCompactOperator(task_id="compact", table="db.t", full=True))
    table.write(_rows(range(40, 60), 2))
    emit(LakeopsFlushLevel0Operator(task_id="flush", table="db.t"))
    emit(LakeopsExpireSnapshotsOperator(task_id="expire", table="db.t", retain_min=1, retain_max=1))

    events = {
        e["job"]["name"].split(".")[1]: e for e in map(json.loads, log.read_text().splitlines())
    }
    assert list(events) == ["write", "compact", "flush", "expire"]
    ns, dataset = (
        "lakeops://lakeops_default",
        {"namespace": "lakeops://lakeops_default", "name": "db.t"},
    )
    flush_id = written["flush"].snapshot_id
    assert flush_id == 5 and [s.id for s in catalog.get_table("db.t").snapshots()] == [flush_id]
    expected = {  # snapshot, commit kind, records after it, rows written
        "write": (1, "APPEND", 30, 30),
        "compact": (3, "COMPACT", 50, 50),  # 30 + 30 rows, 20 keys twice: 50 keys
        # the 20 level-0 rows lifted: the 10 keys a higher level holds keep their first row
        # there (Paimon's first-row lookup), the 10 new ones are written; 50 + 10 stored
        "flush": (5, "COMPACT", 60, 10),
    }
    for name, event in events.items():
        assert event["eventType"] == "COMPLETE"
        inputs = [{"namespace": i["namespace"], "name": i["name"]} for i in event["inputs"]]
        outputs = event["outputs"]
        assert [(o["namespace"], o["name"]) for o in outputs] == [(ns, "db.t")]
        facet = event["run"]["facets"]["lakeops"]
        if name == "expire":
            assert inputs == [dataset] and "outputStatistics" not in outputs[0].get(
                "outputFacets", {}
            )
            assert (facet["expired_snapshot_ids"], facet["earliest_snapshot_id"]) == (
                [1, flush_id - 1],
                flush_id,
            )
            assert facet["expired_snapshots"] == flush_id - 1
            continue
        snapshot_id, kind, records, rows = expected[name]
        files = written[name]
        assert files.snapshot_id == snapshot_id
        extra = [{"namespace": "file", "name": str(source)}] if name == "write" else []
        assert inputs == [*extra, dataset]
        stats = outputs[0]["outputFacets"]["outputStatistics"]
        assert (stats["rowCount"], stats["size"], stats["fileCount"]) == (
            rows,
            files.bytes_added,
            files.files_added,
        )
        assert (
            facet["snapshot_id"],
            facet["commit_kind"],
            facet["total_records"],
            facet["rows_written"],
        ) == (snapshot_id, kind, records, rows)
        assert facet["bytes_written"] == files.bytes_added > 0


def test_committing_tasks_name_the_assets_of_their_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    """What registers a table's Asset with Airflow (so its commit events need no warning): the
    DAGs name the Assets of ``LAKEOPS_TABLES`` (and the ingest and lookup tables); a watched
    table's Asset carries its watcher wherever it is named (else Airflow drops the watcher)."""
    from airflow.dag_processing.dagbag import DagBag

    from lakeops.airflow.dag_settings import DagSettings
    from tests.airflow.conftest import REPO

    env = {
        "LAKEOPS_TABLES": "db.a, db.b",
        "LAKEOPS_INGEST_TABLE": "db.b",
        "LAKEOPS_LOOKUP_TABLES": "db.c",
    }
    assert DagSettings.from_env(env).served_tables == ("db.a", "db.b", "db.c")
    monkeypatch.setenv("LAKEOPS_TABLES", "db.orders,db.items")
    monkeypatch.setenv("LAKEOPS_WATCHED_LOOKUP_TABLES", "db.items")
    bag = DagBag(dag_folder=str(REPO / "dags"))
    ingest = bag.dags["lakeops_ingest"].get_task("spark_write")
    assert [a.uri for a in ingest.inlets] == [
        "lakeops://lakeops_default/db/orders",
        "lakeops://lakeops_default/db/items",
    ]

    def named(assets: list[Any]) -> list[tuple[str, list[Any]]]:
        return [(a.uri, [(w.name, w.trigger.serialize()) for w in a.watchers]) for a in assets]

    on_commit = bag.dags["lakeops_lookup_flush_on_commit"]
    (watched,) = named(on_commit.timetable.asset_condition.objects)
    assert watched[1]  # the watcher, wherever the Asset is named
    assert named(ingest.inlets) == [("lakeops://lakeops_default/db/orders", []), watched]
    assert named(on_commit.get_task("flush_level0").inlets) == named(ingest.inlets)


def test_the_write_path_is_passed_on_and_reported(
    catalog: Catalog, lakeops_conn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``via`` reaches the write job as ``--via`` (absent: the Python writer), the job's
    ``path`` comes back in the XCom, and a bad value is refused before anything runs."""
    from lakeops.spark import jobs, submit

    _table(catalog)
    argvs: list[list[str]] = []
    monkeypatch.setattr(
        submit,
        "_run",
        lambda command, *a: argvs.append(command) or {"snapshot_id": None, "path": "native"},
    )
    result = LakeopsSparkWriteOperator(task_id="w", source="/in", table="db.t", via="auto").execute(
        _context()
    )
    LakeopsSparkWriteOperator(task_id="w2", source="/in", table="db.t").execute(_context())
    first, second = (jobs.parse_args(a[a.index(submit.job_file()) + 1 :]) for a in argvs)
    assert (first.via, second.via) == ("auto", "python")
    assert result["path"] == "native"
    with pytest.raises(ConfigurationError, match="via must be 'python', 'auto' or 'native'"):
        LakeopsSparkWriteOperator(task_id="w3", source="/in", table="db.t", via="fast")  # type: ignore[arg-type]


def test_rescale_buckets_in_the_worker_and_as_the_spark_job_entry(
    catalog: Catalog, lakeops_conn: str
) -> None:
    """The operator changes the bucket count and rewrites one partition (local), then the rest
    (the Spark job's ``rescale`` entry, run in the worker process): rows as before (the model:
    the rows read first), every live file at the new count, one OVERWRITE event per commit."""
    table = _table(catalog)
    table.write(_rows(range(30), 1, "d1"))
    table.write(_rows(range(20), 2, "d2"))
    before = table.read().sort_by([("dt", "ascending"), ("id", "ascending")])
    context = _context()
    result = LakeopsRescaleBucketsOperator(
        task_id="r", table="db.t", bucket=3, partitions=[{"dt": "d1"}]
    ).execute(context)
    assert result["bucket"] == 3 and result["partitions"] == ["dt=d1"] and result["rows"] == 30
    assert result["commit_kind"] == "OVERWRITE"
    assert [extra["snapshot_id"] for _, extra in _events(context)] == [result["snapshot_id"]]
    context = _context()
    spark = LakeopsRescaleBucketsOperator(task_id="r2", table="db.t", engine="spark", submit=False)
    result = spark.execute(context)
    assert result["partitions"] == ["dt=d2"] and result["commit_kind"] == "OVERWRITE"
    table = catalog.get_table("db.t")
    assert {e.total_buckets for e in table.store.live_entries(table.latest_snapshot())} == {3}
    assert table.read().sort_by([("dt", "ascending"), ("id", "ascending")]) == before
    nothing = LakeopsRescaleBucketsOperator(task_id="r3", table="db.t").execute(_context())
    assert nothing["snapshot_id"] is None and nothing["partitions"] == []
    with pytest.raises(ConfigurationError, match="bucket must be a fixed count"):
        LakeopsRescaleBucketsOperator(task_id="r4", table="db.t", bucket=-1)


def test_write_operator_passes_the_watermark(
    catalog: Catalog, lakeops_conn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lakeops.spark import jobs, submit

    _table(catalog)
    argvs: list[list[str]] = []
    monkeypatch.setattr(
        submit, "_run", lambda command, *a: argvs.append(command) or {"snapshot_id": None}
    )
    LakeopsSparkWriteOperator(
        task_id="w", source="/in", table="db.t", watermark="1700000000000"
    ).execute(_context())
    LakeopsSparkWriteOperator(task_id="w2", source="/in", table="db.t").execute(_context())
    first, second = argvs
    assert jobs.parse_args(first[first.index(submit.job_file()) + 1 :]).watermark == 1700000000000
    assert jobs.parse_args(second[second.index(submit.job_file()) + 1 :]).watermark is None
    with pytest.raises(ConfigurationError, match="watermark must be epoch milliseconds"):
        LakeopsSparkWriteOperator(
            task_id="w3", source="/in", table="db.t", watermark="soon"
        ).execute(_context())


def test_rewrite_file_index_adds_the_index_the_options_now_ask_for(
    catalog: Catalog, lakeops_conn: str
) -> None:
    """After a bloom-filter option is added to a table with data, the operator indexes the
    files of the chosen partition only (every id each file holds is in its bloom filter, the
    other partition's files stay unindexed), rows unchanged, one COMPACT event."""
    from lakeops.format.file_index import BloomFilter, fast_hash, read_container
    from lakeops.format.schema_change import SetOption
    from lakeops.format.types import DataType

    table = _table(catalog)
    table.write(_rows(range(30), 1, "d1"))
    table.write(_rows(range(20), 2, "d2"))
    before = table.read().sort_by([("dt", "ascending"), ("id", "ascending")])
    table.alter(
        [
            SetOption("file-index.bloom-filter.columns", "id"),
            SetOption("file-index.bloom-filter.id.items", "100"),  # small: embedded
        ]
    )
    context = _context()
    result = LakeopsRewriteFileIndexOperator(
        task_id="i", table="db.t", partitions=[{"dt": "d1"}]
    ).execute(context)
    table = catalog.get_table("db.t")
    live = table.store.live_entries(table.latest_snapshot())
    d1 = [e for e in live if b"d1" in e.partition]
    locations = table.store.locations()
    assert result["files"] == len(d1) > 0 and result["commit_kind"] == "COMPACT"
    assert [extra["snapshot_id"] for _, extra in _events(context)] == [result["snapshot_id"]]
    for e in live:
        if e not in d1:
            assert e.file.embedded_file_index is None and not e.file.extra_files
            continue
        path = locations.entry_path(e.partition, e.bucket, e.file.file_name, None)
        ids = pq.read_table(path, columns=["id"]).column("id").combine_chunks()
        bloom = BloomFilter.from_bytes(
            read_container(e.file.embedded_file_index or b"")["id"]["bloom-filter"] or b""
        )
        assert bloom.might_contain(fast_hash(ids, DataType.parse("BIGINT"))).all()
    assert table.read().sort_by([("dt", "ascending"), ("id", "ascending")]) == before
