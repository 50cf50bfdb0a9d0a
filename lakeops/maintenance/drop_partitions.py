"""Dropping partitions by name, as Paimon's ``FileStoreCommit.dropPartitions`` (Spark's
``ALTER TABLE ... DROP PARTITION``, Flink's ``drop_partition``) does.

A spec names some or all partition columns (``{"dt": "2024-01-01"}``; values as users write
them, :mod:`lakeops.format.partition_spec`); a partial spec matches every partition whose named
columns are equal. The drop is one ``OVERWRITE`` snapshot that adds no file and deletes every
live file of the partitions the specs match *when it publishes* (a file another writer added
to them meanwhile goes too, as in Paimon, whose partition filter is applied at commit). No file
leaves storage: snapshot expiry and orphan cleanup remove them later, so readers of older
snapshots, tags and branches keep working.

A spec that matches no live partition of the latest snapshot is a
:class:`~lakeops.errors.PartitionNotFoundError` naming it (nothing committed), unless
``if_exists`` (Spark's ``IF EXISTS``); a dry run lists what would go.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lakeops.commit.committer import BATCH_COMMIT_IDENTIFIER, Committer
from lakeops.errors import ConfigurationError, PartitionNotFoundError
from lakeops.format import binary_row
from lakeops.maintenance.partition_expire import live_partitions
from lakeops.read.scan import partition_matches
from lakeops.store.context import TableContext

__all__ = ["DropPartitionsResult", "drop_partitions"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DropPartitionsResult:
    """The partitions a drop matched in the latest snapshot (values by key, as Python values:
    a DATE column's as ``datetime.date``, NULL as None), and its ``OVERWRITE`` snapshot (None
    in a dry run or when nothing matched)."""

    partitions: list[dict[str, Any]]
    snapshot_id: int | None
    dry_run: bool


def drop_partitions(
    context: TableContext,
    committer: Committer,
    specs: Sequence[Mapping[str, Any]],
    *,
    if_exists: bool = False,
    dry_run: bool = False,
) -> DropPartitionsResult:
    """Drop the partitions ``specs`` match (see the module docstring)."""
    keys = list(context.schema.partition_keys)
    if not keys:
        raise ConfigurationError(
            f"{context.root}: the table has no partition keys; to empty it, overwrite it with "
            "no rows"
        )
    if isinstance(specs, Mapping) or not specs:
        raise ConfigurationError(
            "drop_partitions needs a list of partition specs, e.g. [{'dt': '2024-01-01'}]"
        )
    for spec in specs:
        if not isinstance(spec, Mapping) or not spec:
            raise ConfigurationError(
                f"partition spec {spec!r} must name at least one partition column of {keys}"
            )
    matches = partition_matches(context.schema, specs, context.options)  # checks the values
    live = live_partitions(context.store, context.store.latest_snapshot())
    missing = [
        dict(spec)
        for spec in specs
        if not any(partition_matches(context.schema, [spec], context.options)(p) for p in live)
    ]
    if missing and not if_exists:
        raise PartitionNotFoundError(
            f"{context.root}: no partition matches {missing}; nothing was dropped (existing "
            f"partitions: {[info.spec for info in list(live.values())[:5]]}"
            f"{' …' if len(live) > 5 else ''}; pass if_exists=True to drop the others)"
        )
    types = context.schema.types_of(keys)
    dropped = [
        dict(zip(keys, binary_row.deserialize(partition, types), strict=True))
        for partition in live
        if matches(partition)
    ]
    for spec in dropped:
        log.info("%s: drop partition %s", context.root, spec)
    if dry_run or not dropped:
        return DropPartitionsResult(dropped, None, dry_run)
    snapshot = committer.commit([], BATCH_COMMIT_IDENTIFIER, overwrite=matches)
    return DropPartitionsResult(dropped, None if snapshot is None else snapshot.id, False)
