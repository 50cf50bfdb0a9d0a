"""The merged rows of one snapshot, whole: what ``Table.read(snapshot_id=…)`` returns, and the
before/after states a ``read_changes`` diff compares."""

from __future__ import annotations

import pyarrow as pa

from lakeops.merge import create_merge_engine
from lakeops.options import TableOptions
from lakeops.read.merge_read import SplitReader
from lakeops.read.scan import plan_splits
from lakeops.spec.schema import TableSchema
from lakeops.store import TableStore

__all__ = ["read_state"]


def read_state(
    store: TableStore, schema: TableSchema, options: TableOptions, snapshot_id: int
) -> pa.Table:
    """The merged rows of snapshot ``snapshot_id``, every column of ``schema``."""
    snapshot = store.snapshot(snapshot_id)
    reader = SplitReader(store, schema, options, create_merge_engine(options, schema))
    parts = [
        reader.read(s, schema.field_names) for s in plan_splits(store, schema, options, snapshot)
    ]
    return (
        pa.concat_tables([p.cast(schema.arrow_schema()) for p in parts])
        if parts
        else schema.arrow_schema().empty_table()
    )
