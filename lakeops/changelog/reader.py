"""Incremental reads: what changed between two snapshots, with a row-kind column.

Modes (``from_snapshot`` exclusive, ``to_snapshot`` inclusive):

* ``changelog`` — the changelog files of the snapshots in between, as the producer wrote them
  (``input``: every input record; ``lookup`` / ``full-compaction``: ``+I`` / ``-U`` + ``+U`` /
  ``-D`` describing how each merged row changed);
* ``delta`` — the data files each ``APPEND`` commit added, records as written (for tables without
  a producer this is Paimon's incremental read);
* ``diff`` — the merged state at ``to`` compared with the merged state at ``from``: ``+I`` new
  keys, ``-U``/``+U`` changed rows, ``-D`` removed keys (one change per key, whatever happened in
  between) — the data-only diff for consumers that want net changes;
* ``auto`` (default) — ``changelog`` when the table has a producer, else ``delta``, as Paimon's
  incremental scan does.

The result has ``_row_kind`` (``+I``/``-U``/``+U``/``-D``) first, then the requested columns,
in commit order (and key order within a bucket).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeops.errors import (
    ConfigurationError,
    MissingDataFileError,
    MissingMetadataError,
    SnapshotExpiredError,
    SnapshotNotFoundError,
)
from lakeops.format import paths
from lakeops.format.floats import total_order
from lakeops.format.kv import KIND, ROW_KINDS
from lakeops.format.manifest import FileKind, ManifestEntry
from lakeops.format.schema import TableSchema
from lakeops.kv.reader import KeyValueReader
from lakeops.read.state import read_state
from lakeops.store.context import TableContext

__all__ = ["ROW_KIND_COLUMN", "ChangeMode", "read_changes"]

ROW_KIND_COLUMN = "_row_kind"
ChangeMode = Literal["auto", "changelog", "delta", "diff"]


@cache
def _kind_names() -> pa.Array:
    """The row-kind names by code; built on first use, not at import (``pa.array`` of a list
    makes pyarrow import pandas, about half a second that an import should not pay)."""
    return pa.array([k for k, _ in sorted(ROW_KINDS.items(), key=lambda kv: kv[1])])


def _with_kind(records: pa.Table, columns: Sequence[str]) -> pa.Table:
    kinds = _kind_names().take(records.column(KIND).cast(pa.int32()))
    return pa.table(
        [kinds, *[records.column(c) for c in columns]], names=[ROW_KIND_COLUMN, *columns]
    )


def _empty(schema: TableSchema, columns: Sequence[str]) -> pa.Table:
    fields = [
        pa.field(ROW_KIND_COLUMN, pa.string(), False),
        *[schema.arrow_schema().field(c) for c in columns],
    ]
    return pa.schema(fields).empty_table()


def read_changes(
    ctx: TableContext,
    from_snapshot: int,
    to_snapshot: int | None,
    mode: ChangeMode,
    columns: Sequence[str],
) -> pa.Table:
    """See the module docstring."""
    store, producer = ctx.store, ctx.changelog.producer
    latest = store.latest_snapshot_id() or 0
    to = latest if to_snapshot is None else to_snapshot
    if from_snapshot < 0 or to > latest or from_snapshot > to:
        raise ConfigurationError(
            f"read_changes needs 0 <= from_snapshot <= to_snapshot <= {latest} (the latest "
            f"snapshot); got from_snapshot={from_snapshot}, to_snapshot={to}"
        )
    if mode not in ("auto", "changelog", "delta", "diff"):
        raise ConfigurationError(f"mode {mode!r} must be 'auto', 'changelog', 'delta' or 'diff'")
    if mode == "auto":
        mode = "changelog" if producer != "none" else "delta"
    if mode == "diff":
        return _diff(ctx, from_snapshot, to, columns)
    first = _first_readable(ctx, mode)
    if from_snapshot + 1 < first and from_snapshot < to:
        raise SnapshotExpiredError(
            f"the changes of snapshot {from_snapshot + 1} have expired (snapshot expiry "
            f"removed those before {first}; the table is healthy): the first readable change "
            f"is snapshot {first}'s — read again with from_snapshot={first - 1} or later "
            "(from_snapshot is exclusive)",
            snapshot_id=from_snapshot + 1,
        )
    try:
        return _read_range(ctx, from_snapshot, to, mode, columns)
    except (MissingDataFileError, MissingMetadataError, SnapshotNotFoundError) as exc:
        # expiry under the read (the snapshots it reads are gone now) is not corruption
        now_first = _first_readable(ctx, mode)
        if from_snapshot + 1 < now_first and not isinstance(exc, SnapshotExpiredError):
            raise SnapshotExpiredError(
                f"the changes after snapshot {from_snapshot} were expired while the read ran: "
                "the table is healthy, nothing needs restoring or rolling back: read "
                f"again with from_snapshot={now_first - 1} or later",
                snapshot_id=from_snapshot + 1,
            ) from exc
        raise


def _read_range(
    ctx: TableContext, from_snapshot: int, to: int, mode: ChangeMode, columns: Sequence[str]
) -> pa.Table:
    """The changes of snapshots ``from_snapshot + 1`` … ``to`` in ``mode`` (``changelog`` or
    ``delta``)."""
    store, schema = ctx.store, ctx.schema
    reader = KeyValueReader(store.file_io, schema, store.schema, store.root)
    fields = schema.field_names
    locations = ctx.locations
    parts = []
    for sid in range(from_snapshot + 1, to + 1):
        # changelog of expired snapshots may have been kept (changelog/changelog-<id>)
        snapshot = store.changelog_or_snapshot(sid) if mode == "changelog" else store.snapshot(sid)
        entries: list[ManifestEntry]
        if mode == "changelog":
            if snapshot.commit_kind == "OVERWRITE":
                continue
            entries = store.changelog_entries(snapshot)
        else:
            if snapshot.commit_kind != "APPEND":
                continue
            entries = [e for e in store.delta_entries(snapshot) if e.kind == FileKind.ADD]
        for e in sorted(entries, key=lambda e: (e.partition, e.bucket)):
            records = reader.read(locations.bucket_path(e.partition, e.bucket), e.file, fields)
            parts.append(_with_kind(records, columns))
    return pa.concat_tables(parts) if parts else _empty(schema, columns)


def _first_readable(ctx: TableContext, mode: ChangeMode) -> int:
    """The oldest snapshot whose changes ``mode`` can still read: the earliest retained one,
    or in ``changelog`` mode the oldest of the changelogs kept longer right below it."""
    store = ctx.store
    earliest = store.earliest_snapshot_id() or 1
    if mode != "changelog":
        return earliest
    names = store.file_io.list_names(store.path(paths.CHANGELOG_DIR))
    kept = {int(n[10:]) for n in names if n.startswith("changelog-") and n[10:].isdigit()}
    first = earliest
    while first - 1 in kept:
        first -= 1
    return first


def _diff(
    ctx: TableContext,
    from_snapshot: int,
    to: int,
    columns: Sequence[str],
) -> pa.Table:
    schema = ctx.schema

    keys = list(dict.fromkeys([*schema.primary_keys]))
    names = schema.field_names
    old = read_state(ctx, from_snapshot) if from_snapshot else schema.arrow_schema().empty_table()
    new = read_state(ctx, to) if to else schema.arrow_schema().empty_table()
    suffix = "__old"
    old_r = old.rename_columns([c if c in keys else c + suffix for c in old.column_names])
    old_r = old_r.append_column("__in_old", pa.array(np.ones(old.num_rows, dtype=bool)))
    new_r = new.append_column("__in_new", pa.array(np.ones(new.num_rows, dtype=bool)))
    joined = new_r.join(old_r, keys=keys, join_type="full outer").sort_by(
        [(k, "ascending") for k in keys]
    )
    in_old = joined.column("__in_old").fill_null(False).to_numpy(zero_copy_only=False)
    in_new = joined.column("__in_new").fill_null(False).to_numpy(zero_copy_only=False)
    same = np.ones(joined.num_rows, dtype=bool)
    for c in names:
        if c in keys:
            continue
        a, b = joined.column(c), joined.column(c + suffix)
        eq = pc.equal(total_order(a), total_order(b)).fill_null(False)  # NaN equals NaN
        eq = eq.to_numpy(zero_copy_only=False).astype(bool)
        same &= eq | (
            a.is_null().to_numpy(zero_copy_only=False) & b.is_null().to_numpy(zero_copy_only=False)
        )
    pieces = []
    position = np.arange(joined.num_rows)

    def emit(mask: np.ndarray, kind: str, old_side: bool, slot: int) -> None:
        if not mask.any():
            return
        rows = joined.filter(pa.array(mask))
        cols = [rows.column(c if (c in keys or not old_side) else c + suffix) for c in columns]
        pieces.append(
            (
                position[mask],
                slot,
                pa.table(
                    [pa.array([kind] * rows.num_rows), *cols], names=[ROW_KIND_COLUMN, *columns]
                ),
            )
        )

    emit(in_new & ~in_old, "+I", False, 1)
    emit(in_new & in_old & ~same, "-U", True, 0)
    emit(in_new & in_old & ~same, "+U", False, 1)
    emit(~in_new & in_old, "-D", True, 0)
    if not pieces:
        return _empty(schema, columns)
    order_key = np.concatenate([pos * 2 + slot for pos, slot, _ in pieces])
    table = pa.concat_tables([t.cast(pieces[0][2].schema) for _, _, t in pieces])
    return table.take(pa.array(np.argsort(order_key, kind="stable")))
