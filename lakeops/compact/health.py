"""Table health: per bucket the sorted runs, levels, files and sizes, and amplification.

* read amplification — sorted runs a read of the bucket must merge;
* space amplification (estimate) — bytes stored / bytes of the oldest run, exact when the oldest
  run holds every live key (Paimon's size-amplification rule uses the same ratio);
* write amplification — bytes compaction wrote / bytes ingested, over recent snapshots (upgrades
  move no bytes and do not count).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

from lakeops.compact.levels import level_runs
from lakeops.spec import binary_row
from lakeops.spec.manifest import FileKind
from lakeops.spec.schema import TableSchema
from lakeops.store import TableStore

__all__ = ["BucketHealth", "TableHealth", "table_health"]


@dataclass(frozen=True)
class BucketHealth:
    """One (partition, bucket)."""

    partition: dict[str, Any]
    bucket: int
    sorted_runs: int
    level0_files: int
    files_by_level: dict[int, int]
    bytes_by_level: dict[int, int]
    total_bytes: int
    rows: int
    space_amplification: float
    oldest_level0_age_s: float | None


@dataclass(frozen=True)
class TableHealth:
    """Every bucket, plus write amplification over the recent snapshots."""

    snapshot_id: int | None
    buckets: list[BucketHealth] = field(default_factory=list)
    ingested_bytes: int = 0
    compaction_bytes: int = 0

    @property
    def write_amplification(self) -> float:
        return self.compaction_bytes / self.ingested_bytes if self.ingested_bytes else 0.0

    @property
    def max_sorted_runs(self) -> int:
        return max((b.sorted_runs for b in self.buckets), default=0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "snapshot_id": self.snapshot_id,
            "write_amplification": self.write_amplification,
            "ingested_bytes": self.ingested_bytes,
            "compaction_bytes": self.compaction_bytes,
            "max_sorted_runs": self.max_sorted_runs,
            "buckets": [asdict(b) for b in self.buckets],
        }


def table_health(
    store: TableStore,
    schema: TableSchema,
    recent_snapshots: int = 100,
) -> TableHealth:
    """Health of the latest snapshot."""
    snapshot = store.latest_snapshot()
    if snapshot is None:
        return TableHealth(None)
    part_types = schema.types_of(schema.partition_keys)
    groups: dict[tuple[bytes, int], list[Any]] = {}
    for e in store.live_entries(snapshot):
        groups.setdefault((e.partition, e.bucket), []).append(e.file)
    now_ms = time.time() * 1000
    buckets = []
    for (pbytes, bucket), files in sorted(groups.items()):
        runs = level_runs(files)
        by_level: dict[int, int] = {}
        bytes_level: dict[int, int] = {}
        for f in files:
            by_level[f.level] = by_level.get(f.level, 0) + 1
            bytes_level[f.level] = bytes_level.get(f.level, 0) + f.file_size
        total = sum(f.file_size for f in files)
        level0 = [
            f.creation_time_millis
            for f in files
            if f.level == 0 and f.creation_time_millis is not None
        ]
        values = binary_row.deserialize(pbytes, part_types)
        buckets.append(
            BucketHealth(
                partition=dict(zip(schema.partition_keys, values, strict=True)),
                bucket=bucket,
                sorted_runs=len(runs),
                level0_files=by_level.get(0, 0),
                files_by_level=dict(sorted(by_level.items())),
                bytes_by_level=dict(sorted(bytes_level.items())),
                total_bytes=total,
                rows=sum(f.row_count for f in files),
                space_amplification=total / runs[-1].size if runs and runs[-1].size else 1.0,
                oldest_level0_age_s=(now_ms - min(level0)) / 1000 if level0 else None,
            )
        )
    ingested = compacted = 0
    first = max(store.earliest_snapshot_id() or 1, snapshot.id - recent_snapshots + 1)
    for sid in range(first, snapshot.id + 1):
        try:
            snap = store.snapshot(sid)
        except Exception:
            continue
        entries = [
            e
            for m in store.manifest_list(snap.delta_manifest_list)
            for e in store.manifest(m.file_name)
        ]
        removed = {e.file.file_name for e in entries if e.kind == FileKind.DELETE}
        for e in entries:
            if e.kind != FileKind.ADD:
                continue
            if snap.commit_kind == "COMPACT":
                if e.file.file_name not in removed:  # upgrades keep their file
                    compacted += e.file.file_size
            else:
                ingested += e.file.file_size
    return TableHealth(snapshot.id, buckets, ingested, compacted)
