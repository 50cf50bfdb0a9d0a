"""The options of append tables, with Paimon 0.9's defaults for tables without a primary key."""

from __future__ import annotations

from dataclasses import dataclass

from lakeops.errors import ConfigurationError
from lakeops.options.parsing import parse_memory_size
from lakeops.store.context import TableContext

__all__ = ["AppendOptions"]

#: ``target-file-size`` of a table without a primary key (``CoreOptions.targetFileSize(false)``)
DEFAULT_TARGET_FILE_SIZE = 256 * 1024 * 1024


@dataclass(frozen=True)
class AppendOptions:
    """``target-file-size``, ``compaction.min.file-num`` and ``compaction.max.file-num``."""

    target_file_size: int
    min_file_num: int
    #: the fixed-bucket writer's default (5, ``AppendOnlyFileStoreWrite``)
    bucket_max_file_num: int
    #: the unaware-bucket coordinator's default (50)
    unaware_max_file_num: int

    @property
    def compaction_file_size(self) -> int:
        """Files below this size join an unaware-bucket compaction (70 % of the target,
        ``CoreOptions.compactionFileSize``)."""
        return self.target_file_size // 10 * 7

    @classmethod
    def of(cls, table: TableContext) -> AppendOptions:
        o = table.schema.options
        target = (
            parse_memory_size(o["target-file-size"], "target-file-size")
            if o.get("target-file-size")
            else DEFAULT_TARGET_FILE_SIZE
        )
        try:
            min_num = int(o.get("compaction.min.file-num", "5"))
            max_raw = o.get("compaction.max.file-num", o.get("compaction.early-max.file-num"))
            max_num = int(max_raw) if max_raw is not None else None
        except ValueError as exc:
            raise ConfigurationError(
                f"compaction file-number option has a bad value: {exc}"
            ) from None
        if min_num < 1 or (max_num is not None and max_num < 1):
            raise ConfigurationError(
                "options 'compaction.min.file-num' and 'compaction.max.file-num' must be positive"
            )
        return cls(
            target,
            min_num,
            max_num if max_num is not None else 5,
            max_num if max_num is not None else 50,
        )
