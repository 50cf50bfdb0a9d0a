"""Table health metrics: the one implementation the CLI, the Airflow plugin page and the sensors
use (rendering lives in :mod:`lakeops.health.view` and :mod:`lakeops.cli.views`).

Per (partition, bucket) of the latest snapshot:

* **sorted runs** (read amplification) — runs a read of the bucket must merge: every level-0
  file is a run of its own, every non-empty level ≥ 1 is one run (:func:`level_runs`);
* **space amplification** — stored bytes ÷ bytes of the live, fully merged data (Paimon's
  meaning: how much a full compaction would shrink the bucket). The merged size is *estimated
  from the manifests*, without reading data: each sorted run holds every key at most once, files
  whose key ranges do not overlap cannot share a key, and where files of several runs overlap
  the rows of the other runs are taken to update the keys of the run that holds most rows
  there. So the files are swept in key order into clusters of overlapping key ranges. When the
  first key field is a number or a date/time (a length can be measured) and no file of the
  cluster has a single-valued first field, each file's rows and bytes are spread evenly over
  its key range, the range is cut at every file boundary, and each piece counts the run with
  the most rows there; otherwise the cluster counts the run with the most rows in it. The sum
  over clusters (and pieces) is the merged size. The estimate is exact for upserts of existing
  keys and for new keys outside the existing key ranges; new keys *interleaved* with existing
  ones in the same key range are counted as upserts, so there the figure is too high (an
  upper bound when the runs hold distinct keys). Retraction rows count as stored rows.

Per table:

* **write amplification** — bytes compaction wrote ÷ bytes ingested (APPEND/OVERWRITE commits)
  over a *window* of retained snapshots (upgraded files move no bytes and do not count). The
  window is the last ``recent_snapshots`` retained snapshots, except that when it does not start
  at snapshot 1 its leading commits up to and including its first compaction commit are left
  out: that compaction rewrote data ingested by commits outside the window (expired or not
  counted), and counting it would divide by too little. So expiring snapshots that precede the
  window's first compaction commit leaves the figure unchanged. ``None`` when the window holds
  no ingested bytes. The window's first and last snapshot ids are reported with it.
"""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from lakeops.compact.levels import level_runs
from lakeops.compact.strategy import LevelSortedRun
from lakeops.errors import LakeopsError, MissingMetadataError
from lakeops.format import binary_row
from lakeops.format.data_file import DataFileMeta
from lakeops.format.manifest import FileKind, ManifestEntry
from lakeops.format.schema import TableSchema
from lakeops.format.snapshot import Snapshot
from lakeops.kv.evolution import SchemaEvolution
from lakeops.store import TableStore, fold_entries

__all__ = [
    "DEFAULT_WINDOW",
    "BucketHealth",
    "SnapshotPoint",
    "TableHealth",
    "merged_size_estimate",
    "retained_snapshot",
    "snapshot_buckets",
    "snapshot_history",
    "table_health",
    "written_bytes",
]

#: snapshots in the write-amplification window unless asked otherwise (CLI, plugin, API alike)
DEFAULT_WINDOW = 100

KeyRange = tuple[tuple[Any, ...], tuple[Any, ...]]


@dataclass(frozen=True)
class BucketHealth:
    """One (partition, bucket) of the latest snapshot. ``live_rows``/``live_bytes`` estimate
    the fully merged bucket (module docstring); ``space_amplification`` is ``total_bytes /
    live_bytes``. ``runs`` are the sorted runs with their files (for drawing; not in
    :meth:`TableHealth.to_dict`)."""

    partition: dict[str, Any]
    bucket: int
    sorted_runs: int
    level0_files: int
    files_by_level: dict[int, int]
    bytes_by_level: dict[int, int]
    total_bytes: int
    rows: int
    live_rows: int
    live_bytes: int
    space_amplification: float
    oldest_level0_age_s: float | None
    runs: tuple[LevelSortedRun, ...] = field(default=(), repr=False, compare=False)

    @property
    def files(self) -> int:
        return sum(self.files_by_level.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "bucket": self.bucket,
            "sorted_runs": self.sorted_runs,
            "level0_files": self.level0_files,
            "files_by_level": self.files_by_level,
            "bytes_by_level": self.bytes_by_level,
            "total_bytes": self.total_bytes,
            "rows": self.rows,
            "live_rows": self.live_rows,
            "live_bytes": self.live_bytes,
            "space_amplification": self.space_amplification,
            "oldest_level0_age_s": self.oldest_level0_age_s,
        }


@dataclass(frozen=True)
class TableHealth:
    """Every bucket, plus write amplification over the window ``window_first_snapshot`` ..
    ``window_last_snapshot`` (None when the window is empty)."""

    snapshot_id: int | None
    buckets: list[BucketHealth] = field(default_factory=list)
    ingested_bytes: int = 0
    compaction_bytes: int = 0
    window_first_snapshot: int | None = None
    window_last_snapshot: int | None = None

    @property
    def write_amplification(self) -> float | None:
        """Compaction bytes ÷ ingested bytes of the window; None without ingested bytes."""
        return self.compaction_bytes / self.ingested_bytes if self.ingested_bytes else None

    @property
    def max_sorted_runs(self) -> int:
        return max((b.sorted_runs for b in self.buckets), default=0)

    @property
    def total_bytes(self) -> int:
        return sum(b.total_bytes for b in self.buckets)

    @property
    def live_bytes(self) -> int:
        return sum(b.live_bytes for b in self.buckets)

    @property
    def space_amplification(self) -> float:
        """Stored ÷ estimated live bytes of the whole table (1.0 when empty)."""
        live = self.live_bytes
        return self.total_bytes / live if live else 1.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "snapshot_id": self.snapshot_id,
            "write_amplification": self.write_amplification,
            "write_amplification_window": {
                "first_snapshot": self.window_first_snapshot,
                "last_snapshot": self.window_last_snapshot,
            },
            "ingested_bytes": self.ingested_bytes,
            "compaction_bytes": self.compaction_bytes,
            "space_amplification": self.space_amplification,
            "total_bytes": self.total_bytes,
            "live_bytes": self.live_bytes,
            "max_sorted_runs": self.max_sorted_runs,
            "buckets": [b.to_dict() for b in self.buckets],
        }


@dataclass(frozen=True)
class SnapshotPoint:
    """One snapshot of the history: its live files, the largest sorted-run count of any bucket,
    and the bytes its commit wrote (:func:`written_bytes`)."""

    snapshot_id: int
    commit_kind: str
    time_millis: int
    total_record_count: int
    delta_record_count: int
    files: int
    max_sorted_runs: int
    ingested_bytes: int
    compacted_bytes: int


# ------------------------------------------------------------------------------ pieces
def written_bytes(snapshot: Snapshot, delta: Sequence[ManifestEntry]) -> tuple[int, int]:
    """(ingested, compacted) bytes the commit of ``snapshot`` wrote: added files of a
    COMPACT commit are compaction output, unless the same commit deletes them too (an upgrade
    to another level moves no bytes); added files of any other commit are ingested."""
    removed = {e.file.file_name for e in delta if e.kind == FileKind.DELETE}
    ingested = compacted = 0
    for e in delta:
        if e.kind != FileKind.ADD:
            continue
        if snapshot.commit_kind == "COMPACT":
            if e.file.file_name not in removed:
                compacted += e.file.file_size
        else:
            ingested += e.file.file_size
    return ingested, compacted


def _coordinate(value: Any) -> float | None:
    """A measurable position of a key's first field (None where lengths mean nothing)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float | decimal.Decimal):
        return float(value)
    if isinstance(value, dt.datetime):
        return value.replace(tzinfo=value.tzinfo or dt.UTC).timestamp()
    if isinstance(value, dt.date):
        return float(value.toordinal())
    return None


def _largest_run(rows_bytes: Iterable[tuple[float, float]]) -> tuple[float, float]:
    return max(rows_bytes, default=(0.0, 0.0))


def _cluster_size(members: Sequence[tuple[KeyRange, int, DataFileMeta]]) -> tuple[float, float]:
    """Merged (rows, bytes) of one cluster of overlapping files (module docstring)."""
    spans = [(_coordinate(lo[0]), _coordinate(hi[0])) for (lo, hi), _, _ in members]
    measurable = all(a is not None and b is not None and b > a for a, b in spans)
    if not measurable:
        per_run: dict[int, list[float]] = {}
        for _, run, f in members:
            acc = per_run.setdefault(run, [0.0, 0.0])
            acc[0] += f.row_count
            acc[1] += f.file_size
        return _largest_run((r, b) for r, b in per_run.values())
    # sweep: per run, the rows and bytes per unit of key length of the files covering a piece
    events: dict[float, list[tuple[int, float, float]]] = {}
    for (a, b), (_, run, f) in zip(spans, members, strict=True):
        assert a is not None and b is not None
        length = b - a
        events.setdefault(a, []).append((run, f.row_count / length, f.file_size / length))
        events.setdefault(b, []).append((run, -f.row_count / length, -f.file_size / length))
    density: dict[int, list[float]] = {}
    rows = size = 0.0
    bounds = sorted(events)
    for left, right in itertools.pairwise(bounds):
        for run, d_rows, d_bytes in events[left]:
            acc = density.setdefault(run, [0.0, 0.0])
            acc[0] += d_rows
            acc[1] += d_bytes
        r, by = _largest_run((d[0], d[1]) for d in density.values())
        rows += r * (right - left)
        size += by * (right - left)
    return rows, size


def merged_size_estimate(
    runs: Sequence[LevelSortedRun], key_range: Callable[[DataFileMeta], KeyRange]
) -> tuple[int, int]:
    """(rows, bytes) the bucket of sorted ``runs`` would hold after a full compaction, estimated
    from file metadata only (module docstring): files swept in key order into clusters of
    overlapping closed key ranges; per cluster (or per measured piece of it) the rows and bytes
    of the run holding most rows there; summed."""
    items = sorted(
        ((key_range(f), i, f) for i, run in enumerate(runs) for f in run.files),
        key=lambda item: item[0][0],
    )
    rows = size = 0.0
    cluster: list[tuple[KeyRange, int, DataFileMeta]] = []
    cluster_hi: tuple[Any, ...] | None = None
    for item in items:
        lo, hi = item[0]
        if cluster and cluster_hi is not None and lo > cluster_hi:
            r, b = _cluster_size(cluster)
            rows, size = rows + r, size + b
            cluster = []
        cluster_hi = hi if not cluster or cluster_hi is None or hi > cluster_hi else cluster_hi
        cluster.append(item)
    if cluster:
        r, b = _cluster_size(cluster)
        rows, size = rows + r, size + b
    return round(rows), round(size)


def _bucket_health(
    partition: dict[str, Any],
    bucket: int,
    files: Sequence[DataFileMeta],
    key_range: Callable[[DataFileMeta], KeyRange],
    now_ms: float,
) -> BucketHealth:
    runs = level_runs(files)
    by_level: dict[int, int] = {}
    bytes_level: dict[int, int] = {}
    for f in files:
        by_level[f.level] = by_level.get(f.level, 0) + 1
        bytes_level[f.level] = bytes_level.get(f.level, 0) + f.file_size
    total = sum(f.file_size for f in files)
    live_rows, live_bytes = merged_size_estimate(runs, key_range)
    level0 = [f.creation_time_millis for f in files if f.level == 0 and f.creation_time_millis]
    return BucketHealth(
        partition=partition,
        bucket=bucket,
        sorted_runs=len(runs),
        level0_files=by_level.get(0, 0),
        files_by_level=dict(sorted(by_level.items())),
        bytes_by_level=dict(sorted(bytes_level.items())),
        total_bytes=total,
        rows=sum(f.row_count for f in files),
        live_rows=live_rows,
        live_bytes=live_bytes,
        space_amplification=total / live_bytes if live_bytes else 1.0,
        oldest_level0_age_s=(now_ms - min(level0)) / 1000 if level0 else None,
        runs=tuple(runs),
    )


def retained_snapshot(store: TableStore, snapshot_id: int) -> Snapshot | None:
    """Snapshot ``snapshot_id``, or None if it is gone (expired while health was computed)."""
    try:
        return store.snapshot(snapshot_id)
    except LakeopsError:
        if store.snapshot_exists(snapshot_id):
            raise  # there but unreadable: not ours to hide
        return None


def _delta(store: TableStore, snapshot: Snapshot) -> list[ManifestEntry] | None:
    """The commit's entries, or None if expiry removed them while we read."""
    try:
        return store.delta_entries(snapshot)
    except MissingMetadataError:
        if store.snapshot_exists(snapshot.id):
            raise
        return None


def _window(store: TableStore, latest: int, recent_snapshots: int) -> list[Snapshot]:
    """The write-amplification window (module docstring), oldest first."""
    first = max(store.earliest_snapshot_id() or 1, latest - recent_snapshots + 1)
    found = (retained_snapshot(store, sid) for sid in range(first, latest + 1))
    snaps = [s for s in found if s is not None]
    if snaps and snaps[0].id != 1:
        for i, s in enumerate(snaps):
            if s.commit_kind == "COMPACT":
                return snaps[i + 1 :]
    return snaps


# ------------------------------------------------------------------------------ public
def snapshot_buckets(
    store: TableStore, schema: TableSchema, snapshot: Snapshot
) -> list[BucketHealth]:
    """Every (partition, bucket) of ``snapshot``, in (partition bytes, bucket) order, from its
    manifests alone (no data file is read); level-0 ages are measured from now."""
    part_types = schema.types_of(schema.partition_keys)
    groups: dict[tuple[bytes, int], list[DataFileMeta]] = {}
    for e in store.live_entries(snapshot):
        groups.setdefault((e.partition, e.bucket), []).append(e.file)
    # each file's key bounds decoded through the schema it was written with (one decoder)
    key_range = SchemaEvolution(schema, store.schema).key_range
    now_ms = time.time() * 1000
    buckets = []
    for (pbytes, bucket), files in sorted(groups.items()):
        values = binary_row.deserialize(pbytes, part_types)
        partition = dict(zip(schema.partition_keys, values, strict=True))
        buckets.append(_bucket_health(partition, bucket, files, key_range, now_ms))
    return buckets


def table_health(
    store: TableStore,
    schema: TableSchema,
    recent_snapshots: int = DEFAULT_WINDOW,
) -> TableHealth:
    """Health of the latest snapshot, write amplification over the last ``recent_snapshots``
    retained snapshots (module docstring)."""
    snapshot = store.latest_snapshot()
    if snapshot is None:
        return TableHealth(None)
    buckets = snapshot_buckets(store, schema, snapshot)
    ingested = compacted = 0
    counted: list[int] = []
    for snap in _window(store, snapshot.id, max(recent_snapshots, 1)):
        delta = _delta(store, snap)
        if delta is None:
            continue
        i, c = written_bytes(snap, delta)
        ingested += i
        compacted += c
        counted.append(snap.id)
    return TableHealth(
        snapshot.id,
        buckets,
        ingested,
        compacted,
        window_first_snapshot=counted[0] if counted else None,
        window_last_snapshot=counted[-1] if counted else None,
    )


def _max_sorted_runs(live: Iterable[ManifestEntry]) -> int:
    groups: dict[tuple[bytes, int], list[DataFileMeta]] = {}
    for e in live:
        groups.setdefault((e.partition, e.bucket), []).append(e.file)
    return max((len(level_runs(files)) for files in groups.values()), default=0)


def snapshot_history(store: TableStore, recent_snapshots: int = 20) -> list[SnapshotPoint]:
    """The last ``recent_snapshots`` retained snapshots (oldest first), up to the latest.

    The oldest one's live files are read in full; each later one applies its commit's delta,
    so the cost is one snapshot's manifests plus one delta manifest list per snapshot. A
    snapshot that expires while this reads is skipped (the next one is read in full).
    """
    latest = store.latest_snapshot_id()
    if latest is None or recent_snapshots <= 0:
        return []
    first = max(store.earliest_snapshot_id() or 1, latest - recent_snapshots + 1)
    points: list[SnapshotPoint] = []
    live: dict[tuple[bytes, int, int, str], ManifestEntry] | None = None
    for sid in range(first, latest + 1):
        snap = retained_snapshot(store, sid)
        delta = None if snap is None else _delta(store, snap)
        if snap is None or delta is None:
            live = None  # restart from a full read at the next snapshot
            continue
        if live is None:
            try:
                live = fold_entries(store.live_entries(snap))
            except MissingMetadataError:
                if store.snapshot_exists(sid):
                    raise
                continue
        else:
            for e in delta:
                if e.kind == FileKind.ADD:
                    live[e.identifier] = e
                else:
                    live.pop(e.identifier, None)
        ingested, compacted = written_bytes(snap, delta)
        points.append(
            SnapshotPoint(
                snapshot_id=snap.id,
                commit_kind=snap.commit_kind,
                time_millis=snap.time_millis,
                total_record_count=snap.total_record_count,
                delta_record_count=snap.delta_record_count,
                files=len(live),
                max_sorted_runs=_max_sorted_runs(live.values()),
                ingested_bytes=ingested,
                compacted_bytes=compacted,
            )
        )
    return points
