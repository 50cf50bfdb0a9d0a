"""The merge-engine interface and its factory.

A :class:`MergeEngine` sees records as an Arrow table holding table fields plus
``_SEQUENCE_NUMBER`` and ``_VALUE_KIND`` (and, on the read path, ``_KEY_*`` copies of the key).
It works in two steps:

* :meth:`MergeEngine.prepare` runs on raw input before anything is written: it rejects records
  the engine cannot accept (with a message naming the fix) and drops the ones the options say to
  ignore;
* :meth:`MergeEngine.merge` receives the records sorted by (key, sequence order) with the start
  index of every key group, and returns one row per key whose ``_VALUE_KIND`` says whether the
  key exists (``+I``/``+U``) or is deleted (``-U``/``-D``).

The same engine object serves the write buffer, merge-on-read and compaction. Keys with a single
record never reach :meth:`merge` (they pass through untouched, as in Paimon).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeops.errors import DataValidationError
from lakeops.format.kv import KIND, RowKind
from lakeops.options import TableOptions

__all__ = ["DeduplicateEngine", "FirstRowEngine", "MergeEngine", "is_retraction"]


def is_retraction(kinds: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Boolean mask of ``-U``/``-D`` kinds."""
    return pc.or_(pc.equal(kinds, RowKind.UPDATE_BEFORE), pc.equal(kinds, RowKind.DELETE))


class MergeEngine(ABC):
    """Merges all records of one key into its current state (see module docstring)."""

    name: str = ""

    def __init__(self, options: TableOptions) -> None:
        self.options = options
        #: the table the engine merges for (its directory), named by the errors its stored
        #: states raise; set by the table's context
        self.table = ""

    def prepare(self, records: pa.Table) -> pa.Table:
        """Drop the records ``ignore-delete`` / ``ignore-update-before`` tell us to ignore."""
        kinds = records.column(KIND)
        if self.options.ignore_delete:
            return records.filter(pc.invert(is_retraction(kinds)))
        if self.options.ignore_update_before:
            return records.filter(pc.not_equal(kinds, RowKind.UPDATE_BEFORE))
        return records

    def restate(self, records: pa.Table) -> pa.Table:
        """``records`` with every stored state in the byte layout lakeops writes (a state that
        older lakeops wrote in another layout is rewritten); the records are otherwise
        unchanged. Writes and compaction's rewrites pass their records through it, so no older
        layout is carried forward, not even by a key that has nothing to merge with."""
        return records

    def merge_columns(self) -> tuple[str, ...]:
        """Value columns a merge needs besides the requested ones (reads fetch them too)."""
        return ()

    @abstractmethod
    def merge(self, records: pa.Table, starts: np.ndarray) -> pa.Table:
        """One row per key group of the sorted ``records``."""

    def pick(self, _starts: np.ndarray, _rows: int) -> np.ndarray | None:
        """For an engine whose merge keeps one record of each key group as it is: the index of
        that record in every group of ``rows`` sorted records (a lone record is its group's
        pick), so that a caller can take the merged rows without materialising the sorted
        ones; None for an engine that computes its merged rows."""
        return None


class DeduplicateEngine(MergeEngine):
    """Keep the last record of each key; a last retraction deletes the key."""

    name = "deduplicate"

    def merge(self, records: pa.Table, starts: np.ndarray) -> pa.Table:
        return records.take(pa.array(self.pick(starts, records.num_rows)))

    def pick(self, starts: np.ndarray, rows: int) -> np.ndarray:
        return np.append(starts[1:], rows) - 1


class FirstRowEngine(MergeEngine):
    """Keep the first record of each key. Retractions are refused unless ``ignore-delete``."""

    name = "first-row"

    def prepare(self, records: pa.Table) -> pa.Table:
        records = super().prepare(records)
        if pc.any(is_retraction(records.column(KIND))).as_py():
            raise DataValidationError(
                "First row merge engine can not accept DELETE/UPDATE_BEFORE records: the input "
                "has '-U' or '-D' rows; set the table option 'ignore-delete' = 'true' (alias "
                "'first-row.ignore-delete') to drop them, or filter them out before writing"
            )
        return records

    def merge(self, records: pa.Table, starts: np.ndarray) -> pa.Table:
        return records.take(pa.array(starts))

    def pick(self, starts: np.ndarray, _rows: int) -> np.ndarray:
        return starts
