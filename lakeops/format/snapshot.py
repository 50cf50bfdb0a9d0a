"""Snapshot files (``snapshot/snapshot-N``): the commit point of a table."""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Any

from lakeops.errors import CorruptTableError
from lakeops.format.paths import check_file_name

__all__ = ["CommitKind", "Snapshot"]


class CommitKind(StrEnum):
    """Paimon's ``commitKind``: what a snapshot did. A member is its JSON string (it compares
    equal to it and serializes as it), so snapshots read from storage keep plain strings and
    still compare equal to the members."""

    #: new data files (and their changelog)
    APPEND = "APPEND"
    #: files compaction replaced, with what it produced
    COMPACT = "COMPACT"
    #: every live file of some partitions replaced (also lakeops' rollback)
    OVERWRITE = "OVERWRITE"
    #: statistics only (written by Paimon's ANALYZE, never by lakeops)
    ANALYZE = "ANALYZE"


#: Python attribute -> JSON key, in the order Paimon writes them.
_KEYS = {
    "version": "version",
    "id": "id",
    "schema_id": "schemaId",
    "base_manifest_list": "baseManifestList",
    "delta_manifest_list": "deltaManifestList",
    "changelog_manifest_list": "changelogManifestList",
    "index_manifest": "indexManifest",
    "commit_user": "commitUser",
    "commit_identifier": "commitIdentifier",
    "commit_kind": "commitKind",
    "time_millis": "timeMillis",
    "total_record_count": "totalRecordCount",
    "delta_record_count": "deltaRecordCount",
    "changelog_record_count": "changelogRecordCount",
    "watermark": "watermark",
    "base_manifest_list_size": "baseManifestListSize",
    "delta_manifest_list_size": "deltaManifestListSize",
    "changelog_manifest_list_size": "changelogManifestListSize",
    "next_row_id": "nextRowId",
}


@dataclass(frozen=True)
class Snapshot:
    """One snapshot. ``base_manifest_list`` lists every live file as of the previous snapshot;
    ``delta_manifest_list`` holds this commit's ADD/DELETE entries."""

    id: int
    schema_id: int
    base_manifest_list: str
    delta_manifest_list: str
    commit_user: str
    commit_identifier: int
    commit_kind: CommitKind
    time_millis: int
    total_record_count: int
    delta_record_count: int
    version: int = 3
    changelog_manifest_list: str | None = None
    index_manifest: str | None = None
    changelog_record_count: int | None = None
    watermark: int | None = None
    base_manifest_list_size: int | None = None
    delta_manifest_list_size: int | None = None
    changelog_manifest_list_size: int | None = None
    #: a row-tracking table's first row id not yet given to a row (Paimon's ``nextRowId``)
    next_row_id: int | None = None

    def to_json(self) -> str:
        """Paimon's JSON form; null fields are omitted, as pypaimon and Java both accept."""
        doc: dict[str, Any] = {}
        for attr, key in _KEYS.items():
            value = getattr(self, attr)
            if value is not None:
                doc[key] = value
        return json.dumps(doc, indent=2)

    @classmethod
    def from_json(cls, text: str | bytes, source: str = "snapshot file") -> Snapshot:
        """Parse a snapshot (or kept changelog) file; ``source`` is its path relative to the
        table, for errors. Its manifest list and index manifest names must be plain names
        (:func:`~lakeops.format.paths.check_file_name`)."""
        try:
            d = json.loads(text)
            known = {f.name for f in fields(cls)}
            kwargs = {
                attr: d.get(key)
                for attr, key in _KEYS.items()
                if attr in known and d.get(key) is not None
            }
            kwargs.setdefault("total_record_count", 0)
            kwargs.setdefault("delta_record_count", 0)
            snapshot = cls(**kwargs)
        except RecursionError:
            raise CorruptTableError(
                f"malformed snapshot file {source}: nested too deeply"
            ) from None
        except (TypeError, ValueError, AttributeError) as exc:
            raise CorruptTableError(f"malformed snapshot file {source}: {exc}") from exc
        for attr in _NAMED_FILES:
            name = getattr(snapshot, attr)
            if name is not None or attr in ("base_manifest_list", "delta_manifest_list"):
                check_file_name(name, _KEYS[attr], source)
        return snapshot


#: the attributes that name files in ``manifest/``
_NAMED_FILES = (
    "base_manifest_list",
    "delta_manifest_list",
    "changelog_manifest_list",
    "index_manifest",
)
