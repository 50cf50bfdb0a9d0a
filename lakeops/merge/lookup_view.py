"""Paimon's lookup merge: which of a key's records above level 0 count, on tables that look up.

A primary-key table "needs lookup" in Paimon (``CoreOptions.needLookup``) with
``changelog-producer = lookup``, ``force-lookup``, deletion vectors or the first-row engine.
Every compaction of such a table that merges level-0 records into a level above 0 first looks
each of their keys up in the levels below its output level and merges the record found there
in (``LookupChangelogMergeFunctionWrapper``): the key's record on the *lowest-numbered* level
above 0 is therefore its whole merged state, and its records on deeper levels are stale
(deletion vectors mark them deleted; without vectors they stay in their files). So Paimon reads
and compacts such a table with ``LookupMergeFunction``: of each key, its level-0 records and
that one record are merged, the deeper ones are left out (Paimon 1.x takes the record on the
lowest level; 0.9 took the latest by sequence, which on files written this way is the same).
Merging them too would count an aggregation's or a partial update's older contributions again
(a ``sum`` read as the sum of every level's running total).

The first-row engine is not wrapped (its levels hold each key once), and on a table with
deletion vectors the deeper records are deleted already. Under the deduplicate engine the
record on the lowest level is also the one with the highest sequence (each lift merged the
deeper record in and kept the later one), so merging all levels gives the same row — except
with ``sequence.field``, where a lift that did not merge the deeper record in (lakeops before
it did) leaves an older value on top. :func:`needs_lookup_view` says where a reader or a
compaction must drop the deeper records itself, and a compaction merge them into its lifts.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from lakeops.merge.ordering import current_levels, group_starts

__all__ = ["LEVEL", "needs_lookup_view", "top_records", "with_level"]

#: the transient column holding the level of the file each record was read from
LEVEL = "__level"


def needs_lookup_view(
    needs_lookup: bool, merge_engine: str, deletion_vectors: bool, sequence_fields: bool
) -> bool:
    """Whether merging a table's records must first drop, of each key, the records above level
    0 deeper than its lowest-numbered one (:func:`top_records`), and its compactions merge the
    deeper record into what they lift: a table that needs lookup, without deletion vectors
    (which delete those records), under the aggregation or partial-update engine, or the
    deduplicate engine with ``sequence.field`` (see above)."""
    if not needs_lookup or deletion_vectors:
        return False
    return merge_engine in ("aggregation", "partial-update") or (
        merge_engine == "deduplicate" and sequence_fields
    )


def top_records(records: pa.Table, key_columns: Sequence[str]) -> pa.Table:
    """``records`` (sorted by key, with their :data:`LEVEL`) without the records above level 0
    that a record of the same key on a lower-numbered level above 0 supersedes; the level-0
    records all stay. Row order is kept."""
    if records.num_rows < 2:
        return records
    levels = np.asarray(records.column(LEVEL).to_numpy(), dtype=np.int64)
    if np.count_nonzero(levels > 0) < 2:
        return records  # at most one record above level 0: nothing is superseded
    keep = current_levels(levels, group_starts(records, key_columns))
    return records if keep is None else records.filter(pa.array(keep))


def with_level(records: pa.Table, level: int) -> pa.Table:
    """``records`` with the :data:`LEVEL` of the file they come from."""
    return records.append_column(LEVEL, pa.array(np.full(records.num_rows, level, np.int32)))
