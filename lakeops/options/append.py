"""The options of append tables, with Paimon 0.9's defaults for tables without a primary key."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from lakeops.errors import ConfigurationError
from lakeops.options.rows_ignorable import COMPACTION_MAX_FILE_NUM, COMPACTION_MIN_FILE_NUM
from lakeops.options.rows_write import TARGET_FILE_SIZE

__all__ = ["AppendOptions"]


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
    def from_options(cls, o: Mapping[str, str]) -> AppendOptions:
        """The append options of a table with options ``o``."""
        target = TARGET_FILE_SIZE.get(o, primary_key=False, blank_is_unset=True)
        min_num = COMPACTION_MIN_FILE_NUM.get(o)
        max_num = COMPACTION_MAX_FILE_NUM.find(o)
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
