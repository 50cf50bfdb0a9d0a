"""Deterministic crash points for SIGKILL tests: a child process kills itself at its N-th
storage call, so every kind of point (before a data file, after one is written, before a
manifest, before and after the snapshot is published, before a hint is replaced) is reached
without timing a kill from outside."""

from __future__ import annotations

import os
import signal
from typing import Any

from lakeops.io.file_io import FileIO

#: FileIO calls counted as crash points (a directory made before every data file and manifest,
#: a size read after every data file is closed, and every write, replacement, publish, delete)
POINTS = ("mkdirs", "size", "write_bytes", "overwrite_atomic", "publish_exclusive", "delete")


def die_at(n: int, counted: Any | None = None) -> None:
    """Make this process SIGKILL itself at its ``n``-th storage call (0: never).

    ``counted`` (a shared ``multiprocessing.Value``), when given, holds the number of calls so
    far, so the parent can size the range of points. Call it in the child before any work.
    """
    calls = [0]

    for name in POINTS:
        original = getattr(FileIO, name)

        def wrapped(self: FileIO, *args: Any, _original: Any = original, **kw: Any) -> Any:
            calls[0] += 1
            if counted is not None:
                counted.value = calls[0]
            if calls[0] == n:
                os.kill(os.getpid(), signal.SIGKILL)
            return _original(self, *args, **kw)

        setattr(FileIO, name, wrapped)
