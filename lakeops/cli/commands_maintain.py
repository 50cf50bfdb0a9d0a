"""Maintenance commands: ``compact``, ``flush``, ``expire``, ``expire-partitions``,
``drop-partitions``, ``rewrite-file-index``, ``rescale``, ``orphans``, ``rollback``, ``check``,
``repair``."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, cast

import typer
from rich.console import Console
from rich.markup import escape

from lakeops import AnyTable, Snapshot
from lakeops.cli.arguments import ParallelismOpt, PartitionOpt, TableArg
from lakeops.cli.context import state
from lakeops.cli.errors import CliError
from lakeops.cli.output import human_bytes
from lakeops.cli.parsing import parse_partitions
from lakeops.cli.where import parse_where
from lakeops.compact.planner import CompactionProgress
from lakeops.compact.sort import SortStrategy
from lakeops.maintenance.rollback import holds
from lakeops.options.parsing import parse_duration
from lakeops.options.rows_retention import SNAPSHOT_NUM_RETAINED_MAX, SNAPSHOT_NUM_RETAINED_MIN
from lakeops.parallel import check_parallelism
from lakeops.read.scan import partition_matches
from lakeops.table import primary_key_table

__all__ = ["register"]

PANEL = "Maintenance"

DeleteParallelismOpt = Annotated[
    int | None,
    typer.Option(
        "--parallelism",
        min=1,
        metavar="N",
        help="Files deleted at once (default 16: deleting waits on storage).",
        show_default=False,
    ),
]


def _partitions(table: AnyTable, values: list[str] | None) -> list[dict[str, str]] | None:
    """Parse ``--partition`` values and check they name partition columns of ``table``."""
    specs = parse_partitions(values)
    keys = list(table.schema.partition_keys)
    for spec in specs or []:
        unknown = [k for k in spec if k not in keys]
        if unknown:
            raise CliError(
                f"--partition names {unknown}, which are not partition columns of "
                f"{table.identifier} (partition columns: {keys or 'none'})"
            )
    if specs:
        _require_existing(table, specs)
    return specs


#: how many existing partitions a missing partition's error lists
_SHOWN_PARTITIONS = 5


def _require_existing(table: AnyTable, specs: list[dict[str, str]]) -> None:
    """Refuse a ``--partition`` that matches no partition of the latest snapshot, listing a
    few that exist (a typo must not look like "nothing to do")."""
    splits = table.splits()
    existing = {s.partition_bytes: s.partition for s in splits}
    keys = list(table.schema.partition_keys)
    for spec in specs:
        matches = partition_matches(table.schema, [spec])
        if any(matches(b) for b in existing):
            continue
        named = ",".join(f"{k}={v}" for k, v in spec.items())
        values = sorted(
            {",".join(f"{k}={v}" for k, v in zip(keys, p, strict=True)) for p in existing.values()}
        )
        if not values:
            raise CliError(f"partition {named} does not exist: {table.identifier} holds no data")
        shown = ", ".join(values[:_SHOWN_PARTITIONS])
        hidden = len(values) - _SHOWN_PARTITIONS
        more = f" and {hidden} more" if hidden > 0 else ""
        raise CliError(
            f"partition {named} does not exist in {table.identifier}; existing partitions: "
            f"{shown}{more}"
        )


def _id_range(ids: Sequence[int]) -> str:
    """``[3]`` → ``'3'``, ``[3, 4, 5]`` → ``'3..5'`` (ids are contiguous)."""
    return str(ids[0]) if len(ids) == 1 else f"{ids[0]}..{ids[-1]}"


def _run_rewrite(
    ctx: typer.Context,
    table: str,
    partition: list[str] | None,
    action: str,
    run: Callable[
        [AnyTable, list[dict[str, str]] | None, Callable[[CompactionProgress], None]],
        Snapshot | None,
    ],
    nothing: str,
    parallelism: int | None = None,
) -> None:
    """Run a compaction-like call on the table's named partitions (all without --partition)
    under a progress bar over the buckets (files and bytes) and report its COMPACT
    snapshot."""
    check_parallelism(parallelism)
    st = state(ctx)
    target = st.table(table)
    specs = _partitions(target, partition)
    with st.out.buckets(f"{action} {table}") as progress:
        snapshot = run(target, specs, progress)
    stats = target.commit_stats(snapshot.id) if snapshot is not None else None

    def human(console: Console) -> None:
        if stats is None:
            console.print(nothing, markup=False)
            return
        console.print(
            f"snapshot {stats.snapshot_id} ({stats.commit_kind}): rewrote "
            f"{stats.files_deleted} file(s) ({human_bytes(stats.bytes_deleted)}) into "
            f"{stats.files_added} file(s), {human_bytes(stats.bytes_added)} written"
        )

    st.out.result(
        {
            "table": table,
            "snapshot_id": None if snapshot is None else snapshot.id,
            "stats": stats,
        },
        human,
    )


def compact(
    ctx: typer.Context,
    table: TableArg,
    full: Annotated[
        bool, typer.Option("--full", metavar="", help="Rewrite every bucket into one sorted run.")
    ] = False,
    partition: PartitionOpt = None,
    where: Annotated[
        str | None,
        typer.Option(
            "--where",
            metavar="EXPR",
            help="Only the partitions this condition on partition columns holds for, e.g. "
            "\"dt >= '2024-01-01'\" (as head's --where; with --partition, both must hold).",
            show_default=False,
        ),
    ] = None,
    order_by: Annotated[
        str | None,
        typer.Option(
            "--order-by",
            metavar="COL[,COL]",
            help="Sort compaction (unaware-bucket append tables): rewrite each partition's "
            "rows sorted by these columns, as one OVERWRITE snapshot.",
            show_default=False,
        ),
    ] = None,
    strategy: Annotated[
        str,
        typer.Option(
            "--strategy",
            metavar="order|zorder|hilbert",
            help="How --order-by orders rows: lexicographic, Z-order or Hilbert curve.",
        ),
    ] = "order",
    parallelism: ParallelismOpt = None,
) -> None:
    """Compact the table's buckets as one COMPACT snapshot.

    Without --full each bucket follows the table's strategy (universal compaction; nothing
    happens to buckets that need none). Prints the snapshot id, the files rewritten and the
    bytes written, or "nothing to compact". Level-only upgrades count as a file rewritten and
    written with the same bytes. With --order-by (or --full on an append table with
    clustering.columns) the selected partitions are sort-compacted instead, as Paimon's
    sort_compact: one OVERWRITE snapshot.
    """
    columns = None
    if order_by is not None:
        columns = [c.strip() for c in order_by.split(",") if c.strip()]
        if not columns:
            raise CliError("--order-by needs at least one column, e.g. --order-by x,y")
    if strategy != "order" and columns is None:
        raise CliError("--strategy orders the columns of --order-by, which is not given")

    def run(
        target: AnyTable,
        specs: list[dict[str, str]] | None,
        progress: Callable[[CompactionProgress], None],
    ) -> Snapshot | None:
        condition = None if where is None else parse_where(where, target.arrow_schema)
        return target.compact(
            full=full,
            partitions=specs,
            where=condition,
            order_by=columns,
            strategy=cast(SortStrategy, strategy),  # checked by compact
            parallelism=parallelism,
            progress=progress,
        )

    _run_rewrite(
        ctx,
        table,
        partition,
        "sort-compacting" if columns else "fully compacting" if full else "compacting",
        run,
        "nothing to compact",
        parallelism,
    )


def flush(
    ctx: typer.Context,
    table: TableArg,
    partition: PartitionOpt = None,
    parallelism: ParallelismOpt = None,
) -> None:
    """Lift every level-0 file to a higher level (one COMPACT snapshot).

    Lookup tables (first-row, changelog-producer=lookup, deletion vectors) written with
    write-only=true show new keys to reads and lookups only after this.
    """
    _run_rewrite(
        ctx,
        table,
        partition,
        "flushing level 0 of",
        lambda target, specs, progress: primary_key_table(target, "flush_level0").flush_level0(
            partitions=specs, parallelism=parallelism, progress=progress
        ),
        "nothing to flush: level 0 is empty",
        parallelism,
    )


#: Paimon's defaults of the retention options the expire command overrides


def _check_retention(
    table: AnyTable, retain_min: int | None, retain_max: int | None, time_retained: str | None
) -> None:
    """Check the expire options against each other and the table's retention, with messages
    naming the CLI's options (the library names its Python arguments)."""
    if time_retained is not None:
        parse_duration(time_retained, "--time-retained")
    options = table.schema.options
    if retain_min is None and retain_max is not None:
        text = SNAPSHOT_NUM_RETAINED_MIN.text(options)
        where = "the table's option" if text is not None else "Paimon's default"
        current = (
            int(text) if text is not None and text.isdigit() else SNAPSHOT_NUM_RETAINED_MIN.get({})
        )
        if retain_max < current:
            raise CliError(
                f"--retain-max {retain_max} is below snapshot.num-retained.min, which is "
                f"{current} ({where}); pass --retain-min too, e.g. --retain-min {retain_max} "
                f"--retain-max {retain_max}"
            )
    if retain_min is not None and retain_max is not None and retain_max < retain_min:
        raise CliError(
            f"--retain-max {retain_max} is below --retain-min {retain_min}; "
            "keep --retain-min <= --retain-max"
        )
    if retain_min is not None and retain_max is None:
        text = SNAPSHOT_NUM_RETAINED_MAX.text(options)
        if text is not None and text.isdigit() and int(text) < retain_min:
            raise CliError(
                f"--retain-min {retain_min} is above the table's snapshot.num-retained.max "
                f"({text}); pass --retain-max too, e.g. --retain-max {retain_min}"
            )


def expire(
    ctx: typer.Context,
    table: TableArg,
    retain_min: Annotated[
        int | None,
        typer.Option(
            min=1, metavar="N", help="Keep at least N snapshots (snapshot.num-retained.min)."
        ),
    ] = None,
    retain_max: Annotated[
        int | None,
        typer.Option(
            min=1, metavar="N", help="Keep at most N snapshots (snapshot.num-retained.max)."
        ),
    ] = None,
    time_retained: Annotated[
        str | None,
        typer.Option(
            metavar="DURATION",
            help="Keep snapshots younger than this, e.g. '1 h', '30 min' (snapshot.time-retained).",
        ),
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option(min=1, metavar="N", help="Expire at most N snapshots in this pass."),
    ] = None,
    parallelism: DeleteParallelismOpt = None,
) -> None:
    """Expire old snapshots by the table's retention (options override it for this run).

    Deletes only files no retained snapshot references, so it is safe while writers run.
    """
    st = state(ctx)
    target = st.table(table)
    _check_retention(target, retain_min, retain_max, time_retained)
    with st.out.files(f"expiring {table}") as progress:
        result = target.expire_snapshots(
            retain_min=retain_min,
            retain_max=retain_max,
            time_retained=time_retained,
            limit=limit,
            parallelism=parallelism,
            progress=progress,
        )

    def human(console: Console) -> None:
        ids = result.expired_snapshots
        if not ids:
            console.print("nothing to expire")
        else:
            console.print(
                f"expired {len(ids)} snapshot(s) ({_id_range(ids)}); deleted "
                f"{result.data_files_deleted} data file(s), "
                f"{result.changelog_files_deleted} changelog file(s), "
                f"{result.manifests_deleted} manifest(s)"
            )
        if result.expired_changelogs:
            console.print(f"expired {len(result.expired_changelogs)} long-lived changelog(s)")

    st.out.result({"table": table, **vars(result)}, human)


def expire_partitions(
    ctx: typer.Context,
    table: TableArg,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", metavar="", help="List what would be dropped; commit nothing."),
    ] = False,
) -> None:
    """Drop the partitions partition.expiration-time expires, as Paimon does.

    One OVERWRITE snapshot that deletes no file: readers of older snapshots keep working;
    snapshot expiry and orphan cleanup remove the files later. Always checks (Paimon's
    partition.expiration-check-interval paces its streaming sink, not a maintenance run).
    """
    st = state(ctx)
    result = st.table(table).expire_partitions(dry_run=dry_run)

    def human(console: Console) -> None:
        # partition.expiration-batch-size: one snapshot per batch
        _print_dropped(console, result.partitions, dry_run, result.snapshot_ids, "expire")

    st.out.result(
        {
            "table": table,
            "dry_run": dry_run,
            "partitions": result.partitions,
            "snapshot_id": result.snapshot_id,
            "snapshot_ids": list(result.snapshot_ids),
        },
        human,
    )


def _print_dropped(
    console: Console,
    partitions: Sequence[Mapping[str, Any]],
    dry_run: bool,
    snapshot_ids: Sequence[int],
    verb: str,
) -> None:
    """The partitions a drop or expiry dropped (or would drop), and in which snapshots."""
    for spec in partitions:
        console.print(", ".join(f"{k}={v}" for k, v in spec.items()), markup=False)
    line = f"{'would drop' if dry_run else 'dropped'} {len(partitions)} partition(s)"
    if len(snapshot_ids) > 1:
        line += " in snapshots " + ", ".join(str(i) for i in snapshot_ids)
    elif snapshot_ids:
        line += f" in snapshot {snapshot_ids[0]}"
    console.print(line if partitions else f"nothing to {verb}")


def drop_partitions(
    ctx: typer.Context,
    table: TableArg,
    partition: Annotated[
        list[str],
        typer.Option(
            "--partition",
            "-p",
            metavar="K=V[,K=V]",
            help="A partition to drop, as k=v[,k2=v2] (naming some partition columns drops "
            "every partition equal on them); repeat for several.",
            show_default=False,
        ),
    ],
    if_exists: Annotated[
        bool,
        typer.Option("--if-exists", help="Drop the partitions that exist; skip the others."),
    ] = False,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", metavar="", help="List what would be dropped; commit nothing."),
    ] = False,
) -> None:
    """Drop partitions by name as ONE OVERWRITE snapshot, as Paimon's DROP PARTITION.

    No file is deleted: readers of older snapshots and tags keep working; snapshot expiry and
    orphan cleanup remove the files later. A partition that holds no data is an error unless
    --if-exists.
    """
    st = state(ctx)
    specs = parse_partitions(partition) or []
    result = st.table(table).drop_partitions(specs, if_exists=if_exists, dry_run=dry_run)

    def human(console: Console) -> None:
        ids = () if result.snapshot_id is None else (result.snapshot_id,)
        _print_dropped(console, result.partitions, dry_run, ids, "drop")

    st.out.result(
        {
            "table": table,
            "dry_run": dry_run,
            "partitions": result.partitions,
            "snapshot_id": result.snapshot_id,
        },
        human,
    )


def rescale(
    ctx: typer.Context,
    table: TableArg,
    bucket: Annotated[
        int | None,
        typer.Option(
            "--bucket",
            min=1,
            metavar="N",
            help="Change the table's bucket count to N first (an alter).",
            show_default=False,
        ),
    ] = None,
    partition: PartitionOpt = None,
    parallelism: ParallelismOpt = None,
) -> None:
    """Rewrite partitions into the table's bucket count (Paimon's "Rescale Bucket").

    With --bucket N the table's bucket count changes to N first. The partitions (--partition;
    default: every partition whose files hold another bucket count) are read at one snapshot
    and rewritten as ONE OVERWRITE snapshot; a primary-key table's rows are merged first.
    Writes into a partition still holding the old count are refused until it is rescaled.
    """
    check_parallelism(parallelism)
    st = state(ctx)
    target = st.table(table)
    specs = _partitions(target, partition)
    result = target.rescale_buckets(bucket=bucket, partitions=specs, parallelism=parallelism)
    snapshot = result.snapshot

    def human(console: Console) -> None:
        for name in result.partitions:
            was = result.previous_buckets.get(name)
            console.print(f"{name or '(table)'}: {was} -> {result.bucket} buckets", markup=False)
        if snapshot is None:
            console.print(f"nothing to rescale: every partition has {result.bucket} buckets")
            return
        console.print(
            f"snapshot {snapshot.id} (OVERWRITE): rescaled {len(result.partitions)} "
            f"partition(s), {result.rows} row(s), to {result.bucket} buckets",
            markup=False,
        )

    st.out.result(
        {
            "table": table,
            "bucket": result.bucket,
            "partitions": list(result.partitions),
            "previous_buckets": dict(result.previous_buckets),
            "rows": result.rows,
            "snapshot_id": None if snapshot is None else snapshot.id,
        },
        human,
    )


def rewrite_file_index(ctx: typer.Context, table: TableArg, partition: PartitionOpt = None) -> None:
    """Rebuild the file indexes of existing data files as the table's file-index.* options ask.

    Paimon's rewrite_file_index procedure: every live data file of the named partitions (all
    without --partition) gets the indexes the options now ask for, its data untouched, as one
    COMPACT snapshot. Replaced index files go with snapshot expiry.
    """
    st = state(ctx)
    target = st.table(table)
    specs = _partitions(target, partition)
    result = target.rewrite_file_index(partitions=specs)

    def human(console: Console) -> None:
        if result.snapshot_id is None:
            console.print("no data file to index", markup=False)
            return
        console.print(
            f"snapshot {result.snapshot_id} (COMPACT): rewrote the file index of "
            f"{result.files} data file(s)",
            markup=False,
        )

    st.out.result({"table": table, "files": result.files, "snapshot_id": result.snapshot_id}, human)


def orphans(
    ctx: typer.Context,
    table: TableArg,
    older_than_hours: Annotated[
        float,
        typer.Option(
            metavar="HOURS",
            help="Only files older than this many hours are orphan candidates "
            "(below 1 needs --force).",
        ),
    ] = 24.0,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", metavar="", help="List what would be deleted; delete nothing."),
    ] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            metavar="",
            help="Accept a threshold below one hour: only when no writer can be running.",
        ),
    ] = False,
    parallelism: DeleteParallelismOpt = None,
) -> None:
    """Delete files no snapshot references (what crashed writers left behind).

    Files younger than --older-than-hours are never touched, so running writers are safe
    with the default of 24 hours. A threshold below one hour is refused without --force:
    a writer's files look like orphans until it publishes its snapshot.
    """
    st = state(ctx)
    target = st.table(table)
    if older_than_hours < 1 and not force and not dry_run:
        raise CliError(
            f"--older-than-hours {older_than_hours:g} is below one hour: files of a commit in "
            "progress look like orphans until it publishes its snapshot; keep the default (24) "
            "or pass --force only when no writer can be running"
        )
    if dry_run:  # nothing is deleted: the bar counts the orphans found, which it would delete
        bar = st.out.files(f"dry run: orphans of {table}", "files it would delete")
    else:
        bar = st.out.files(f"removing orphans of {table}")
    with bar as progress:
        result = target.remove_orphan_files(
            older_than=dt.timedelta(hours=older_than_hours),
            dry_run=dry_run,
            force=force,
            parallelism=parallelism,
            progress=(lambda _done, total: progress(total, total)) if dry_run else progress,
        )

    def human(console: Console) -> None:
        for path in result.deleted:
            console.print(path, markup=False)
        verb = "would delete" if dry_run else "deleted"
        console.print(f"{verb} {len(result.deleted)} orphan file(s), {human_bytes(result.bytes)}")

    st.out.result(
        {"table": table, "dry_run": dry_run, "deleted": result.deleted, "bytes": result.bytes},
        human,
    )


def rollback(
    ctx: typer.Context,
    table: TableArg,
    snapshot_id: Annotated[
        int,
        typer.Argument(
            metavar="SNAPSHOT_ID", help="The snapshot to make the latest again.", show_default=False
        ),
    ],
    yes: Annotated[
        bool, typer.Option("--yes", "-y", metavar="", help="Do not ask for confirmation.")
    ] = False,
) -> None:
    """Make the table hold what an older snapshot held, as a new snapshot (asks for
    confirmation unless --yes).

    The newer snapshots stay readable until expiry and no file is deleted; writers that commit
    afterwards build on the rolled-back table.
    """
    st = state(ctx)
    target = st.table(table)
    ids = target.store.snapshot_ids()
    if snapshot_id in ids and not yes and not holds(target.store, snapshot_id):
        question = (
            f"Roll back {table} to snapshot {snapshot_id}, undoing snapshot(s) "
            f"{_id_range([i for i in ids if i > snapshot_id])} with a new snapshot?"
        )
        if not typer.confirm(question, err=True):
            raise CliError("rollback cancelled; nothing changed")
    snapshot = target.rollback_to(snapshot_id)  # a missing snapshot: the library's error

    def human(console: Console) -> None:
        if snapshot is None:
            console.print(f"{escape(table)} already holds snapshot {snapshot_id}'s data")
        else:
            console.print(
                f"rolled back {escape(table)} to snapshot {snapshot_id} as snapshot {snapshot.id}"
            )

    st.out.result(
        {
            "table": table,
            "snapshot_id": snapshot_id,
            "new_snapshot_id": None if snapshot is None else snapshot.id,
        },
        human,
    )


def check(ctx: typer.Context, table: TableArg) -> None:
    """Verify a table against its own metadata; changes nothing (run it first after an
    incident).

    Every snapshot, kept changelog, tag and branch snapshot and the manifests they name must
    decode; every data, changelog and index file they reference must exist with the size (and,
    for Parquet and ORC, the row count) its manifest entry records. Exits 1 when anything is
    wrong, listing each file with the snapshots that reference it.
    """
    st = state(ctx)
    report = st.table(table).check()

    def human(console: Console) -> None:
        for p in report.problems:
            ids = ", ".join(map(str, p.snapshots[:5])) + (", …" if len(p.snapshots) > 5 else "")
            where = f" (snapshot {ids})" if p.snapshots else ""
            console.print(f"{escape(p.path)}{where}: {escape(p.problem)}")
        verdict = "ok" if report.ok else f"{len(report.problems)} problem(s)"
        console.print(
            f"{escape(table)}: {verdict} — {report.snapshots} snapshot(s), "
            f"{report.metadata_files} metadata file(s), {report.data_files} data file(s) checked"
        )

    st.out.result(
        {
            "table": table,
            "ok": report.ok,
            "snapshots": report.snapshots,
            "metadata_files": report.metadata_files,
            "data_files": report.data_files,
            "problems": [
                {"path": p.path, "problem": p.problem, "snapshots": list(p.snapshots)}
                for p in report.problems
            ],
        },
        human,
    )
    if not report.ok:
        raise typer.Exit(1)


def repair(
    ctx: typer.Context,
    table: TableArg,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", metavar="", help="Report what would change; change nothing."),
    ] = False,
) -> None:
    """Repair a wedged table: a snapshot id re-used after its expiry, hints naming the wrong
    snapshot (what `lakeops check` reports).

    Each stray snapshot (an id below a missing one: no part of the table's history) is moved
    into _lakeops_repair/ and listed with the commit it describes, whose rows were never in
    the table (write them again); LATEST and EARLIEST are pointed at the newest snapshots.
    Running it again changes nothing.
    """
    st = state(ctx)
    report = st.table(table).repair(dry_run=dry_run)
    verb = "would move" if dry_run else "moved"

    def human(console: Console) -> None:
        for s in report.strays:
            where = f" to {escape(s.moved_to)}" if s.moved_to else ""
            console.print(
                f"{verb} stray snapshot {s.snapshot_id}{where}: {s.commit_kind or '?'} commit "
                f"of user {escape(str(s.commit_user))}, identifier {s.commit_identifier}, "
                f"{s.delta_record_count} row(s) — not in the table; write them again"
            )
        for name, value in (("LATEST", report.latest_hint), ("EARLIEST", report.earliest_hint)):
            if value is not None:
                console.print(f"{'would set' if dry_run else 'set'} {name} to {value}")
        if not report.changed:
            console.print(f"{escape(table)}: nothing to repair")

    st.out.result(
        {
            "table": table,
            "dry_run": dry_run,
            "strays": [
                {
                    "snapshot_id": s.snapshot_id,
                    "moved_to": s.moved_to,
                    "commit_user": s.commit_user,
                    "commit_identifier": s.commit_identifier,
                    "commit_kind": s.commit_kind,
                    "time_millis": s.time_millis,
                    "delta_record_count": s.delta_record_count,
                }
                for s in report.strays
            ],
            "latest_hint": report.latest_hint,
            "earliest_hint": report.earliest_hint,
        },
        human,
    )


def register(app: typer.Typer) -> None:
    """Add the maintenance commands to ``app``."""
    for command in (
        compact,
        flush,
        expire,
        expire_partitions,
        drop_partitions,
        rewrite_file_index,
        rescale,
        orphans,
        rollback,
        check,
        repair,
    ):
        app.command(rich_help_panel=PANEL)(command)
