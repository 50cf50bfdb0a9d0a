"""Row ids and sequence numbers a row-tracking table's commit gives its new files, as Paimon's
``RowTrackingCommitUtils.assignRowTracking`` (and pypaimon's ``FileStoreCommit``) give them.

Computed on every commit attempt from the snapshot the attempt publishes on, so a commit that
lost a race to another writer re-plans with fresh ids (:meth:`Committer.commit_planned`):

* **sequence numbers**: an entry whose file's ``min_sequence_number`` is 0 (a new file)
  gets the new snapshot id as both its min and max sequence number; one whose max is 0 keeps
  its min and gets the snapshot id as max; any other keeps its own (a compacted file);
* **first row ids**: each ``ADD``/``DELETE`` entry in order whose file came from a write
  (``_FILE_SOURCE`` APPEND), has no ``_FIRST_ROW_ID`` yet and was not written with a
  ``_ROW_ID`` column gets the next free row id, starting at the latest snapshot's
  ``nextRowId`` (0 when it has none), which then moves on by the file's row count. A ``.blob``
  file (a BLOB column's rows of the data file before it) takes the row ids of that data file
  instead (per BLOB column, consecutive over the data file's blob files);
* the snapshot's ``nextRowId`` is the first row id left unassigned (the latest's when the
  commit adds no rows).

A new file that already has a first row id and sequence numbers 0 (an update of some columns
of existing rows, :mod:`lakeops.write.update_columns`) must still find a live data file of the
same rows (partition, bucket, first row id, row count; a ``.blob`` file of an update: a live
data file holding its rows) in the snapshot it is published on (:func:`stale_updates`):
else an overwrite or compaction replaced them meanwhile, and the commit is refused. Conversely a
commit that deletes files (a compaction merging row-id groups) must leave no two live data
files of a bucket whose row ids overlap without being the same (:func:`split_groups`): else an
update was written meanwhile into a range it merged, which no reader could line up.

Pure: no I/O (checked against a plain model in tests/commit/test_row_ids.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from lakeops.errors import CommitError
from lakeops.format.data_file import FILE_SOURCE_APPEND
from lakeops.format.manifest import FileKind, ManifestEntry
from lakeops.format.snapshot import Snapshot

__all__ = [
    "ROW_ID_COLUMN",
    "assign_row_tracking",
    "is_blob_file",
    "next_row_id_start",
    "split_groups",
    "stale_updates",
]

#: the row-id system column; a file written with it keeps the row ids it holds
ROW_ID_COLUMN = "_ROW_ID"


def is_blob_file(file_name: str) -> bool:
    """Whether ``file_name`` is a BLOB column's file (Paimon's ``BlobFileFormat.isBlobFile``)."""
    return file_name.endswith(".blob")


def next_row_id_start(latest: Snapshot | None) -> int:
    """The first row id a commit on ``latest`` may give (its ``nextRowId``, else 0)."""
    if latest is None or latest.next_row_id is None:
        return 0
    return latest.next_row_id


def _with_sequence(entry: ManifestEntry, snapshot_id: int) -> ManifestEntry:
    f = entry.file
    if f.min_sequence_number == 0:
        seqs = (snapshot_id, snapshot_id)
    elif f.max_sequence_number == 0:
        seqs = (f.min_sequence_number, snapshot_id)
    else:
        return entry
    new = replace(f, min_sequence_number=seqs[0], max_sequence_number=seqs[1])
    return replace(entry, file=new)


def assign_row_tracking(
    entries: Sequence[ManifestEntry], snapshot_id: int, first_row_id: int
) -> tuple[list[ManifestEntry], int]:
    """``entries`` with sequence numbers and first row ids assigned (see the module
    docstring) for snapshot ``snapshot_id`` whose first free row id is ``first_row_id``;
    returns them and the snapshot's ``nextRowId``."""
    start = first_row_id
    blob_default = first_row_id
    blob_starts: dict[str, int] = {}
    out: list[ManifestEntry] = []
    for entry in entries:
        entry = _with_sequence(entry, snapshot_id)
        f = entry.file
        if f.file_source is None:
            raise CommitError(
                f"data file {f.file_name} of a row-tracking table has no file source; its "
                "rows cannot be given row ids"
            )
        holds_row_ids = f.write_cols is not None and ROW_ID_COLUMN in f.write_cols
        if f.file_source != FILE_SOURCE_APPEND or f.first_row_id is not None or holds_row_ids:
            out.append(entry)  # a compacted file, or one whose rows have their ids
            continue
        if is_blob_file(f.file_name):
            if not f.write_cols:
                raise CommitError(f"blob file {f.file_name} names no column it was written for")
            column = f.write_cols[0]
            blob_start = blob_starts.get(column, blob_default)
            if blob_start >= start:
                raise CommitError(
                    f"blob file {f.file_name} does not follow a data file of its rows in the "
                    "commit; it cannot be given row ids"
                )
            out.append(replace(entry, file=replace(f, first_row_id=blob_start)))
            blob_starts[column] = blob_start + f.row_count
            continue
        out.append(replace(entry, file=replace(f, first_row_id=start)))
        blob_default = start
        blob_starts.clear()
        start += f.row_count
    return out, start


def stale_updates(entries: Sequence[ManifestEntry], live: Iterable[ManifestEntry]) -> list[str]:
    """Names of the new files of ``entries`` that update rows by id (an ``ADD`` from a write
    with a first row id and sequence numbers still 0) whose rows no file of ``live`` holds
    any more (see above)."""
    updates = [
        e
        for e in entries
        if e.kind == FileKind.ADD
        and e.file.first_row_id is not None
        and e.file.file_source == FILE_SOURCE_APPEND
        and e.file.max_sequence_number == 0  # not yet committed (a rollback re-adds others)
    ]
    if not updates:
        return []
    held = {
        (e.partition, e.bucket, e.file.first_row_id, e.file.row_count)
        for e in live
        if e.file.first_row_id is not None and not is_blob_file(e.file.file_name)
    }
    return [
        e.file.file_name
        for e in updates
        if not (
            _within(e, held)
            if is_blob_file(e.file.file_name)
            else (e.partition, e.bucket, e.file.first_row_id, e.file.row_count) in held
        )
    ]


def _within(entry: ManifestEntry, held: set[tuple[bytes, int, int, int]]) -> bool:
    """Whether the rows of a BLOB file lie within those of a ``held`` data file."""
    f = entry.file
    assert f.first_row_id is not None
    lo, hi = f.first_row_id, f.first_row_id + f.row_count
    return any(
        p == entry.partition and b == entry.bucket and start <= lo and hi <= start + rows
        for p, b, start, rows in held
    )


def split_groups(entries: Sequence[ManifestEntry], live: Iterable[ManifestEntry]) -> list[str]:
    """Names of the data files that, with ``entries`` applied to ``live``, would overlap
    another live data file of their bucket in row ids without covering the same ones (only
    buckets where ``entries`` delete a file are checked: nothing else can merge ranges)."""
    deleted = {
        (e.partition, e.bucket, e.file.file_name) for e in entries if e.kind == FileKind.DELETE
    }
    touched = {(p, b) for p, b, _ in deleted}
    if not touched:
        return []
    ranged: list[tuple[bytes, int, int, int, str]] = []
    for e in (*live, *(e for e in entries if e.kind == FileKind.ADD)):
        f = e.file
        if (
            (e.partition, e.bucket) in touched
            and (e.partition, e.bucket, f.file_name) not in deleted
            and f.first_row_id is not None
            and not is_blob_file(f.file_name)
        ):
            start = f.first_row_id
            ranged.append((e.partition, e.bucket, start, start + f.row_count, f.file_name))
    ranged.sort()
    bad: list[str] = []
    group: tuple[bytes, int, int, int] | None = None
    for partition, bucket, lo, hi, name in ranged:
        if group is not None and group[:2] == (partition, bucket) and lo < group[3]:
            if (lo, hi) != group[2:]:
                bad.append(name)
            continue
        group = (partition, bucket, lo, hi)
    return bad
