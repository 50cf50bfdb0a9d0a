"""Data-file metadata (``DataFileMeta``) and simple stats, as stored in manifests."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = ["DataFileMeta", "FILE_SOURCE_APPEND", "FILE_SOURCE_COMPACT", "SimpleStats"]

FILE_SOURCE_APPEND = 0
FILE_SOURCE_COMPACT = 1

#: A serialized BinaryRow with zero fields: arity 0 + an 8-byte header.
EMPTY_ROW = bytes(12)


@dataclass(frozen=True)
class SimpleStats:
    """Min/max values (serialized BinaryRows) and null counts of some columns."""

    min_values: bytes = EMPTY_ROW
    max_values: bytes = EMPTY_ROW
    null_counts: tuple[int | None, ...] = ()

    def to_avro(self) -> dict[str, Any]:
        return {
            "_MIN_VALUES": self.min_values,
            "_MAX_VALUES": self.max_values,
            "_NULL_COUNTS": list(self.null_counts),
        }

    @classmethod
    def from_avro(cls, d: dict[str, Any]) -> SimpleStats:
        return cls(
            bytes(d["_MIN_VALUES"]), bytes(d["_MAX_VALUES"]), tuple(d.get("_NULL_COUNTS") or ())
        )


@dataclass(frozen=True)
class DataFileMeta:
    """One data file of an LSM bucket: its key range, sequence range and level."""

    file_name: str
    file_size: int
    row_count: int
    min_key: bytes
    max_key: bytes
    key_stats: SimpleStats
    value_stats: SimpleStats
    min_sequence_number: int
    max_sequence_number: int
    schema_id: int
    level: int
    extra_files: tuple[str, ...] = ()
    creation_time_millis: int | None = None
    delete_row_count: int | None = 0
    embedded_file_index: bytes | None = None
    file_source: int | None = FILE_SOURCE_APPEND
    value_stats_cols: tuple[str, ...] | None = ()
    external_path: str | None = None
    first_row_id: int | None = None
    write_cols: tuple[str, ...] | None = None
    write_cols_sequences: tuple[int, ...] | None = None
    _extra: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def upgrade(self, level: int) -> DataFileMeta:
        """The same file at another level (compaction upgrades only change the level)."""
        return replace(self, level=level)

    def to_avro(self) -> dict[str, Any]:
        return {
            "_FILE_NAME": self.file_name,
            "_FILE_SIZE": self.file_size,
            "_ROW_COUNT": self.row_count,
            "_MIN_KEY": self.min_key,
            "_MAX_KEY": self.max_key,
            "_KEY_STATS": self.key_stats.to_avro(),
            "_VALUE_STATS": self.value_stats.to_avro(),
            "_MIN_SEQUENCE_NUMBER": self.min_sequence_number,
            "_MAX_SEQUENCE_NUMBER": self.max_sequence_number,
            "_SCHEMA_ID": self.schema_id,
            "_LEVEL": self.level,
            "_EXTRA_FILES": list(self.extra_files),
            "_CREATION_TIME": self.creation_time_millis,
            "_DELETE_ROW_COUNT": self.delete_row_count,
            "_EMBEDDED_FILE_INDEX": self.embedded_file_index,
            "_FILE_SOURCE": self.file_source,
            "_VALUE_STATS_COLS": None
            if self.value_stats_cols is None
            else list(self.value_stats_cols),
            "_EXTERNAL_PATH": self.external_path,
            "_FIRST_ROW_ID": self.first_row_id,
            "_WRITE_COLS": None if self.write_cols is None else list(self.write_cols),
            "_WRITE_COLS_SEQUENCES": None
            if self.write_cols_sequences is None
            else list(self.write_cols_sequences),
        }

    @classmethod
    def from_avro(cls, d: dict[str, Any]) -> DataFileMeta:
        created = d.get("_CREATION_TIME")
        if isinstance(created, dt.datetime):
            # Avro timestamp-millis: Paimon stores local wall-clock millis; keep them as stored
            aware = created if created.tzinfo else created.replace(tzinfo=dt.UTC)
            created = int(aware.timestamp() * 1000)
        vcols = d.get("_VALUE_STATS_COLS")
        wcols = d.get("_WRITE_COLS")
        wseq = d.get("_WRITE_COLS_SEQUENCES")
        return cls(
            file_name=d["_FILE_NAME"],
            file_size=int(d["_FILE_SIZE"]),
            row_count=int(d["_ROW_COUNT"]),
            min_key=bytes(d["_MIN_KEY"]),
            max_key=bytes(d["_MAX_KEY"]),
            key_stats=SimpleStats.from_avro(d["_KEY_STATS"]),
            value_stats=SimpleStats.from_avro(d["_VALUE_STATS"]),
            min_sequence_number=int(d["_MIN_SEQUENCE_NUMBER"]),
            max_sequence_number=int(d["_MAX_SEQUENCE_NUMBER"]),
            schema_id=int(d["_SCHEMA_ID"]),
            level=int(d["_LEVEL"]),
            extra_files=tuple(d.get("_EXTRA_FILES") or ()),
            creation_time_millis=created,
            delete_row_count=d.get("_DELETE_ROW_COUNT"),
            embedded_file_index=d.get("_EMBEDDED_FILE_INDEX"),
            file_source=d.get("_FILE_SOURCE"),
            value_stats_cols=None if vcols is None else tuple(vcols),
            external_path=d.get("_EXTERNAL_PATH"),
            first_row_id=d.get("_FIRST_ROW_ID"),
            write_cols=None if wcols is None else tuple(wcols),
            write_cols_sequences=None if wseq is None else tuple(wseq),
        )
