"""The string modes of the public API, as ``Literal`` types a type checker can verify.

* :data:`WriteMode` — how a Spark or Airflow write lands: ``append`` adds rows (merged by key
  with what is there), ``overwrite`` replaces the partitions it writes (or the whole table).
* :data:`~lakeops.changelog.reader.ChangeMode` — what :meth:`lakeops.Table.read_changes` reads.
* :data:`~lakeops.format.snapshot.CommitKind` — the kind of a snapshot, as Paimon records it.
"""

from __future__ import annotations

from typing import Literal

from lakeops.changelog.reader import ChangeMode
from lakeops.format.snapshot import CommitKind

__all__ = ["ChangeMode", "CommitKind", "WriteMode"]

WriteMode = Literal["append", "overwrite"]
