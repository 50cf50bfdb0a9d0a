"""Merge engines: pure functions over Arrow, shared by the write buffer, reads and compaction."""

from lakeops.merge.engine import MergeEngine
from lakeops.merge.factory import create_merge_engine
from lakeops.merge.ordering import group_starts, merge_sorted, sort_merge, sort_records

__all__ = [
    "MergeEngine",
    "create_merge_engine",
    "group_starts",
    "merge_sorted",
    "sort_merge",
    "sort_records",
]
