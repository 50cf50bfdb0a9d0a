"""The merged rows of one snapshot, whole: what ``Table.read(snapshot_id=…)`` returns, and the
before/after states a ``read_changes`` diff compares."""

from __future__ import annotations

import pyarrow as pa

from lakeops.read.merge_read import SplitReader
from lakeops.read.scan import plan_splits
from lakeops.store.context import TableContext

__all__ = ["read_state"]


def read_state(ctx: TableContext, snapshot_id: int) -> pa.Table:
    """The merged rows of snapshot ``snapshot_id``, every column of the context's schema."""
    schema = ctx.schema
    snapshot = ctx.store.snapshot(snapshot_id)
    reader = SplitReader(ctx)
    parts = [reader.read(s, schema.field_names) for s in plan_splits(ctx, snapshot)]
    return (
        pa.concat_tables([p.cast(schema.arrow_schema()) for p in parts])
        if parts
        else schema.arrow_schema().empty_table()
    )
