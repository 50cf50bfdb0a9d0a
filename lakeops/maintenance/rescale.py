"""Rescale buckets: rewrite partitions of a fixed-bucket table into the table's bucket count.

Paimon's documented way to change a fixed bucket count ("Rescale Bucket") is ``ALTER TABLE ...
SET ('bucket' = 'N')`` followed by ``INSERT OVERWRITE`` of the partitions (Paimon 1.x's
``RescaleAction`` / ``rescale`` procedure does the second step as one batch job). Until a
partition is rewritten its files keep their old count (``_TOTAL_BUCKETS`` in the manifest):
reads are exact, plain writes into it are refused (:mod:`lakeops.bucket.counts`).

:func:`plan_rescale` decides what one rescale rewrites: the partitions live at one snapshot
(given specs, or by default every partition whose files hold another count than the table's),
and the filter that reads exactly their rows. The table then reads those rows at that snapshot
(merged: a primary-key table's merge engine applies first, so each key is written once with its
merged value, as Paimon's ``INSERT OVERWRITE ... SELECT`` does), writes them with the new count
and publishes them as ONE ``OVERWRITE`` commit of those partitions. Like Paimon's rescale (which
sets ``commit.strict-mode.last-safe-snapshot`` to the snapshot it read), the commit is refused
when another job changed rows of those partitions after that snapshot (a compaction only
rewrites rows, so it is no conflict): their rows would otherwise be lost.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lakeops.bucket.counts import partition_bucket_counts
from lakeops.errors import UnsupportedFeatureError
from lakeops.format import binary_row
from lakeops.format.schema import TableSchema
from lakeops.format.snapshot import Snapshot
from lakeops.read.scan import partition_matches
from lakeops.store.context import TableContext

__all__ = ["RescalePlan", "RescaleResult", "partition_filter", "plan_rescale"]


@dataclass(frozen=True)
class RescalePlan:
    """What one rescale rewrites: the ``partitions`` (serialized, as in manifests) live at
    ``snapshot``, with the bucket count their files hold now (``counts``)."""

    snapshot: Snapshot | None
    partitions: tuple[bytes, ...]
    counts: Mapping[bytes, int]

    @property
    def empty(self) -> bool:
        """Whether there is nothing to rewrite."""
        return not self.partitions


@dataclass(frozen=True)
class RescaleResult:
    """The outcome of a rescale: the partitions rewritten (their directory names, ``""`` for
    an unpartitioned table), the bucket count before (per partition) and after, the rows
    written, and the ``OVERWRITE`` snapshot (None when there was nothing to rewrite)."""

    partitions: tuple[str, ...]
    previous_buckets: Mapping[str, int]
    bucket: int
    rows: int
    snapshot: Snapshot | None


def check_rescalable(context: TableContext) -> None:
    """Refuse a table whose bucket count is not fixed (dynamic or unaware buckets have none to
    rescale, as in Paimon, whose ``bucket`` cannot change to or from -1)."""
    if context.options.bucket <= 0:
        raise UnsupportedFeatureError(
            f"{context.root}: cannot rescale buckets of a table with bucket = "
            f"{context.options.bucket}: only a fixed bucket count (> 0) can be rescaled, and "
            "Paimon does not change 'bucket' to or from -1"
        )


def plan_rescale(
    context: TableContext, partitions: Sequence[Mapping[str, Any]] | None
) -> RescalePlan:
    """The partitions to rewrite at the latest snapshot: those matching ``partitions`` (specs
    as users write them, ``[{"dt": "2024-01-01"}]``), or, when None, every partition whose
    files hold another bucket count than the table's ``bucket``. Partitions without live
    files are not rewritten (there is nothing to redistribute)."""
    check_rescalable(context)
    store = context.store
    snapshot = store.latest_snapshot()
    counts = partition_bucket_counts(store.live_entries(snapshot))
    if partitions is None:
        chosen = [p for p, n in counts.items() if n != context.options.bucket]
    else:
        matches = partition_matches(context.schema, list(partitions), context.options)
        chosen = [p for p in counts if matches(p)]
    return RescalePlan(snapshot, tuple(sorted(chosen)), {p: counts[p] for p in chosen})


def partition_filter(schema: TableSchema, partitions: Sequence[bytes]) -> pc.Expression | None:
    """A filter keeping exactly the rows of ``partitions`` (None for an unpartitioned table:
    every row)."""
    keys = schema.partition_keys
    if not keys:
        return None
    types = schema.types_of(keys)
    alternatives: list[pc.Expression] = []
    for partition in partitions:
        values = binary_row.deserialize(partition, types)
        terms = [
            pc.field(k).is_null() if v is None else pc.field(k) == pa.scalar(v, type=t.to_arrow())
            for k, v, t in zip(keys, values, types, strict=True)
        ]
        alternatives.append(_all(terms))
    out = alternatives[0]
    for alt in alternatives[1:]:
        out = out | alt
    return out


def _all(terms: list[pc.Expression]) -> pc.Expression:
    out = terms[0]
    for term in terms[1:]:
        out = out & term
    return out
