"""The bucket count each partition's files were written with, and Paimon's refusal to write a
partition with another one.

Every manifest entry records ``_TOTAL_BUCKETS``, the table's bucket count when its file was
written. Once ``bucket`` changes (``ALTER TABLE ... SET ('bucket' = 'N')``), a partition's files
keep their old count until the partition is rescaled: overwritten with its rows redistributed
over the new count. Reads stay exact meanwhile (a file's rows are placed by its own count), but
a plain write into such a partition would put rows of one key into two buckets, so Paimon
refuses it (``AbstractFileStoreWrite.checkNumBuckets``: "Try to write partition ... with a new
bucket num N, but the previous bucket num is M. Please switch to batch mode, and perform INSERT
OVERWRITE to rescale current data layout first."). :func:`check_bucket_count` is that check.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from lakeops.errors import ConfigurationError
from lakeops.format.manifest import ManifestEntry

__all__ = ["BucketCountMismatchError", "check_bucket_count", "partition_bucket_counts"]


class BucketCountMismatchError(ConfigurationError):
    """A write into a partition whose files hold another bucket count than the table's."""


def partition_bucket_counts(entries: Iterable[ManifestEntry]) -> dict[bytes, int]:
    """Per serialized partition, the bucket count its live files were written with (fixed
    buckets only; the largest where a partition mixes counts, which Paimon never writes)."""
    counts: dict[bytes, int] = {}
    for e in entries:
        if e.total_buckets > 0:
            counts[e.partition] = max(counts.get(e.partition, 0), e.total_buckets)
    return counts


def check_bucket_count(
    partition: bytes,
    expected: int,
    counts: Mapping[bytes, int],
    describe: Callable[[bytes], str],
    table: str,
) -> None:
    """Refuse (:class:`BucketCountMismatchError`) writing ``partition`` with ``expected``
    buckets when its live files (``counts``, from :func:`partition_bucket_counts`) hold another
    fixed count. ``describe`` names the partition (its directory, e.g. ``dt=2024-01-01``; the
    empty string for an unpartitioned table)."""
    if expected <= 0:
        return
    previous = counts.get(partition)
    if previous is None or previous == expected:
        return
    name = describe(partition)
    where = f"partition {name}" if name else "the table"
    raise BucketCountMismatchError(
        f"{table}: cannot write {where} with the new bucket count {expected}: its files hold "
        f"the previous bucket count {previous}. Rescale it first (table.rescale_buckets("
        f"partitions=[...]), `lakeops rescale`, or an overwrite of the partition), then write"
    )
