"""Rewriting the file indexes of existing data files (Paimon's ``rewrite_file_index`` procedure,
``FileIndexProcessor``): after ``file-index.*`` options were added or changed, the files written
before get the indexes the table now asks for, without rewriting their data.

For every live data file of the chosen partitions (all without ``partitions``), the indexed
columns are read from the file and the table's current indexes built over them
(:mod:`lakeops.kv.file_index`: the same builder writes and compactions use); indexes the options
no longer name are dropped. The container is embedded in the file's manifest entry when it is
at most ``file-index.in-manifest-threshold``, else written as a new extra file next to the data
file — ``<data file>.index`` for a file that had none, else Paimon's next name for it
(``…-1.index``, ``…-2.index``; a written index file is never overwritten) — and any previous
index file leaves the entry's extra files. A file of an older schema is indexed under its own
column names (a column added since has no values in it and gets no index), as Paimon's
``colNameMapping`` does.

All files are published as one ``COMPACT`` commit that deletes each old entry and adds the same
file with its new index (same name and level: readers see the same rows). Nothing is deleted:
snapshot expiry deletes a replaced index file once no kept snapshot names it, orphan cleanup
deletes the index files of a run killed before its commit. A table whose indexes the options
cannot build is refused before anything is written (:func:`~lakeops.kv.file_index.plan_file_index`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lakeops.commit.committer import BATCH_COMMIT_IDENTIFIER, Committer
from lakeops.format.commit_message import CommitMessage
from lakeops.format.data_file import DataFileMeta
from lakeops.format.manifest import ManifestEntry
from lakeops.format.schema import TableSchema
from lakeops.kv.append_reader import AppendFileReader
from lakeops.kv.file_index import INDEX_SUFFIX, FileIndexPlan, plan_file_index
from lakeops.kv.reader import KeyValueReader
from lakeops.read.scan import partition_matches
from lakeops.store.context import TableContext

__all__ = ["RewriteFileIndexResult", "next_index_name", "rewrite_file_index"]


@dataclass(frozen=True)
class RewriteFileIndexResult:
    """What a run rewrote: the number of data files whose index it rewrote and the
    ``COMPACT`` snapshot that published them (None when there was no file)."""

    files: int
    snapshot_id: int | None


def next_index_name(name: str) -> str:
    """The name of the index file that replaces index file ``name`` (Paimon's
    ``DataFilePathFactory.createNewFileIndexFilePath``): ``…-<n>.index`` becomes
    ``…-<n+1>.index``, any other ``<stem>.<ext>`` becomes ``<stem>-1.index``."""
    dot, dash = name.rfind("."), name.rfind("-")
    if dash != -1:
        digits = name[dash + 1 : dot] if dot > dash else ""
        if digits.isascii() and digits.isdigit():
            return f"{name[: dash + 1]}{int(digits) + 1}{INDEX_SUFFIX}"
    return f"{name[:dot]}-1{INDEX_SUFFIX}"


def rewrite_file_index(
    context: TableContext,
    committer: Committer,
    partitions: Sequence[Mapping[str, str]] | None = None,
) -> RewriteFileIndexResult:
    """Rebuild the file indexes of every live data file of ``partitions`` (all without) as the
    table's current options ask, as one ``COMPACT`` commit (see the module docstring)."""
    schema = context.schema
    plan = plan_file_index(schema)  # refuses what cannot be built, before anything is written
    snapshot = context.store.latest_snapshot()
    if snapshot is None:
        return RewriteFileIndexResult(0, None)
    matches = partition_matches(schema, partitions)
    entries = [e for e in context.store.live_entries(snapshot) if matches(e.partition)]
    if not entries:
        return RewriteFileIndexResult(0, None)
    rewriter = _Rewriter(context, plan)
    messages: dict[tuple[bytes, int], tuple[int, list[DataFileMeta], list[DataFileMeta]]] = {}
    try:
        for e in entries:
            _, before, after = messages.setdefault(
                (e.partition, e.bucket), (e.total_buckets, [], [])
            )
            before.append(e.file)
            after.append(rewriter.rewrite(e))
    except BaseException:
        rewriter.abort()
        raise
    commit = [
        CommitMessage(
            partition,
            bucket,
            total,
            compact_before=tuple(before),
            compact_after=tuple(after),
            base_snapshot_id=snapshot.id,
        )
        for (partition, bucket), (total, before, after) in messages.items()
    ]
    # a failed commit leaves its index files to orphan cleanup: whether it published is not
    # always known here, and a published snapshot's files must never be deleted
    published = committer.commit(commit, BATCH_COMMIT_IDENTIFIER)
    return RewriteFileIndexResult(len(entries), None if published is None else published.id)


class _Rewriter:
    """Builds the new index of one file at a time; remembers the index files it wrote."""

    def __init__(self, context: TableContext, plan: FileIndexPlan | None) -> None:
        self.context = context
        self.plan = plan
        self.schema: TableSchema = context.schema
        store = context.store
        self.append = not self.schema.primary_keys
        self.append_reader = AppendFileReader(
            context.file_io, self.schema, store.schema, store.root
        )
        self.kv_reader = KeyValueReader(context.file_io, self.schema, store.schema, store.root)
        self.written: list[str] = []

    def rewrite(self, e: ManifestEntry) -> DataFileMeta:
        """``e``'s file with its index rebuilt (a new index file written when too large)."""
        f = e.file
        old_index = [x for x in f.extra_files if x.endswith(INDEX_SUFFIX)]
        extras = tuple(x for x in f.extra_files if not x.endswith(INDEX_SUFFIX))
        container = self._container(e) if self.plan is not None else None
        if container is None:
            return dataclasses.replace(f, extra_files=extras, embedded_file_index=None)
        assert self.plan is not None
        if len(container) <= self.plan.in_manifest_threshold:
            return dataclasses.replace(f, extra_files=extras, embedded_file_index=container)
        name = next_index_name(old_index[0]) if old_index else f.file_name + INDEX_SUFFIX
        data_path = self.context.locations.entry_path(
            e.partition, e.bucket, f.file_name, f.external_path
        )
        path = f"{data_path.rsplit('/', 1)[0]}/{name}"
        self.written.append(path)
        self.context.file_io.write_bytes(path, container)
        return dataclasses.replace(f, extra_files=(*extras, name), embedded_file_index=None)

    def _container(self, e: ManifestEntry) -> bytes | None:
        """The index container of ``e``'s file under its own column names (None: nothing to
        index in it)."""
        plan = self.plan
        assert plan is not None
        mapping = (self.append_reader if self.append else self.kv_reader).evolution.mapping(
            e.file.schema_id
        )
        present = [c for c in plan.columns if mapping.source_name(c) is not None]
        if not present:
            return None
        directory = self.context.bucket_path(e.partition, e.bucket)
        if self.append:
            table = self.append_reader.read(directory, e.file, present)
        else:
            table = self.kv_reader.read(directory, e.file, present)
        renamed = FileIndexPlan(
            tuple(
                i.renamed(mapping.source_name(i.source) or i.source)
                for i in plan.indexes
                if i.source in present
            ),
            plan.in_manifest_threshold,
        )
        columns = {mapping.source_name(c) or c: table.column(c) for c in present}
        return renamed.container(columns)

    def abort(self) -> None:
        """Delete every index file this run wrote (its commit did not publish)."""
        for path in self.written:
            self.context.file_io.delete(path)
        self.written.clear()
