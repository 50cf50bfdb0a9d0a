"""The deletion vectors of Iceberg format-version-3 metadata: a Paimon table with
``deletion-vectors.enabled`` exposes its vectors to Iceberg readers as position-delete entries
(``content = 1``, format ``PUFFIN``) of a delete manifest, each naming the data file it
deletes rows of (``referenced_data_file``), where its blob lies (``content_offset``,
``content_size_in_bytes``) and its cardinality (``record_count``), as Paimon's
``IcebergCommitCallback`` does with ``metadata.iceberg.format-version = 3``.

Where the blobs live differs from Paimon, deliberately: Paimon points Iceberg at its own
deletion-vector index files, which are not Puffin files (they start with a version byte and
have no footer), so readers that open the whole Puffin file — pyiceberg among them — cannot
read them. lakeops writes one real Puffin file per Paimon index file, ``<index file
name>.puffin`` in the Iceberg metadata directory, holding the same blobs: a 64-bit blob is
Iceberg's ``deletion-vector-v1`` byte for byte and is copied; a 32-bit one (Paimon 0.9's, or
``deletion-vectors.bitmap64 = false``) is re-encoded as 64-bit, so every vector reaches Iceberg
(Paimon exports vectors only with ``bitmap64``). Index files never change, so a Puffin file is
written once and reused by later versions (its footer says where each blob is); one cut short
by a crash is rewritten. The footer's property ``paimon-index-file`` names its index file:
a Puffin file goes (:func:`sweep_puffins`) only once that index file is gone — Paimon's expiry
deletes an index file only when no snapshot it keeps names it, so no Iceberg version of a live
snapshot, being written or published, can still need it.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from typing import Any

from lakeops.errors import CorruptTableError
from lakeops.format.deletion_vector import DeletionFile, deletion_files, iceberg_blob
from lakeops.format.puffin import PuffinBlob, encode_puffin, read_puffin_footer
from lakeops.format.snapshot import Snapshot
from lakeops.io.file_io import FileIO, join
from lakeops.store import TableStore
from lakeops.store.locations import FileLocations

__all__ = ["PATH_FIELD_ID", "deletion_vector_records", "sweep_puffins"]

log = logging.getLogger(__name__)

#: Iceberg's reserved ``file_path`` field of position deletes: delete files carry the path they
#: apply to as its lower and upper bound, which readers use to match them to one data file
PATH_FIELD_ID = 2147483546
_PUFFIN_SUFFIX = ".puffin"
_INDEX_FILE_PROPERTY = "paimon-index-file"

#: footers of whole Puffin files read by this process, by (store, path): ((size, modification
#: time), blobs, properties). A whole Puffin file never changes (a file is written once; only
#: one cut short is rewritten, and that one never parses), so a footer is read once per
#: process; a cached one serves only while the file is there with the same size and time.
_FOOTERS: dict[tuple[str, str], tuple[tuple[int, float], list[PuffinBlob], dict[str, str]]] = {}
_FOOTERS_MAX = 4096


def deletion_vector_records(
    store: TableStore,
    locations: FileLocations,
    snapshot: Snapshot,
    meta_dir: str,
    data_paths: Mapping[tuple[bytes, int, str], str],
    exported: set[tuple[bytes, int, str]],
) -> tuple[list[tuple[bytes, dict[str, Any]]], set[str]]:
    """The delete-manifest ``data_file`` records of ``snapshot``'s deletion vectors of the data
    files Iceberg sees (``exported``, keys of ``data_paths``: the paths of the snapshot's live
    data files by (partition, bucket, file name)), each with its partition, and the Puffin files
    they name (written here when missing). A Puffin file holds every vector of its index file,
    so what it holds does not depend on which files a version exports."""
    entries = store.index_entries(snapshot)
    index_paths = {
        e.file.file_name: locations.index_entry_path(e.partition, e.bucket, e.file) for e in entries
    }
    by_index: dict[str, list[tuple[tuple[bytes, int, str], DeletionFile]]] = {}
    for key, df in deletion_files(entries, index_paths).items():
        if key in data_paths:
            by_index.setdefault(df.path, []).append((key, df))
    records: list[tuple[bytes, dict[str, Any]]] = []
    named: set[str] = set()
    for index_path, vectors in sorted(by_index.items()):
        wanted = [(key, df) for key, df in vectors if key in exported]
        if not wanted:
            continue
        puffin_path, placed, size = _puffin(store, meta_dir, index_path, vectors, data_paths)
        named.add(puffin_path)
        for key, _ in wanted:
            blob = placed[data_paths[key]]
            path_bound = blob.referenced_data_file.encode()
            records.append(
                (
                    key[0],
                    {
                        "content": 1,
                        "file_path": puffin_path,
                        "file_format": "PUFFIN",
                        "record_count": blob.cardinality,
                        "file_size_in_bytes": size,
                        "null_value_counts": [],
                        "lower_bounds": [{"key": PATH_FIELD_ID, "value": path_bound}],
                        "upper_bounds": [{"key": PATH_FIELD_ID, "value": path_bound}],
                        "referenced_data_file": blob.referenced_data_file,
                        "content_offset": blob.offset,
                        "content_size_in_bytes": blob.length,
                    },
                )
            )
    return records, named


def _puffin(
    store: TableStore,
    meta_dir: str,
    index_path: str,
    vectors: list[tuple[tuple[bytes, int, str], DeletionFile]],
    data_paths: Mapping[tuple[bytes, int, str], str],
) -> tuple[str, dict[str, PuffinBlob], int]:
    """The path, blobs (by referenced data file) and size of the Puffin file of
    ``index_path``: ``<index file name>.puffin`` as already written when it holds every one of
    ``vectors``; else a new one of them, written there when that file is missing or unreadable
    (a write cut short: no metadata names it), or under a name of its own when it holds other
    vectors (a published version may name it, so it is never rewritten)."""
    io = store.file_io
    puffin_path = join(meta_dir, index_path.rsplit("/", 1)[-1] + _PUFFIN_SUFFIX)
    needed = {data_paths[key] for key, _ in vectors}
    try:
        size, blobs, _ = _footer(io, puffin_path)
        found = {b.referenced_data_file: b for b in blobs}
        if needed <= found.keys():
            return puffin_path, found, size
        puffin_path = puffin_path[: -len(_PUFFIN_SUFFIX)] + f"-{uuid.uuid4()}{_PUFFIN_SUFFIX}"
    except (FileNotFoundError, CorruptTableError):
        pass
    index = io.read_bytes(index_path)
    encoded = []
    for key, df in sorted(vectors, key=lambda v: v[1].offset):
        blob, cardinality = iceberg_blob(index, df, index_path)
        encoded.append((data_paths[key], blob, cardinality))
    data, placed = encode_puffin(
        encoded, {"created-by": "lakeops", _INDEX_FILE_PROPERTY: index_path}
    )
    io.overwrite_atomic(puffin_path, data)
    return puffin_path, {b.referenced_data_file: b for b in placed}, len(data)


def sweep_puffins(store: TableStore, meta_dir: str, keep: set[str]) -> None:
    """Delete the Puffin files of ``meta_dir`` whose Paimon index file is gone (expired), but
    for those of ``keep`` (named by the metadata just written); an unreadable one is left
    for a later sweep."""
    io = store.file_io
    if not io.exists(meta_dir):
        return
    for name in io.list_names(meta_dir):
        path = join(meta_dir, name)
        if not name.endswith(_PUFFIN_SUFFIX) or path in keep:
            continue
        try:
            _, _, properties = _footer(io, path)
        except (OSError, CorruptTableError):
            continue
        index_path = properties.get(_INDEX_FILE_PROPERTY)
        if index_path and not io.exists(index_path):
            io.delete(path)


def _footer(io: FileIO, path: str) -> tuple[int, list[PuffinBlob], dict[str, str]]:
    """(size, blobs, properties) of the whole Puffin file at ``path``: read and parsed once
    per process (:data:`_FOOTERS`), afterwards only its size and time checked. A missing file is
    :class:`FileNotFoundError`, one that is not a whole Puffin file
    :class:`~lakeops.errors.CorruptTableError` (never cached)."""
    key = (f"{io.protocol}:{io.endpoint}", path)
    stamp = (io.size(path), io.modified_ms(path))
    cached = _FOOTERS.get(key)
    if cached is not None and cached[0] == stamp:
        return stamp[0], cached[1], cached[2]
    data = io.read_bytes(path)
    blobs, properties = read_puffin_footer(data, path)
    if len(_FOOTERS) >= _FOOTERS_MAX:
        _FOOTERS.clear()
    if len(data) == stamp[0]:  # not replaced between the look and the read
        _FOOTERS[key] = (stamp, blobs, properties)
    return len(data), blobs, properties
