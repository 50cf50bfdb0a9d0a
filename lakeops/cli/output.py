"""Rendering for people (rich, on a terminal) or for machines (``--json``).

In JSON mode a command prints exactly one JSON document on stdout and nothing else there;
progress bars and spinners are suppressed. In human mode results go to stdout through rich, and
progress bars and spinners go to stderr, so stdout stays pipeable.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import decimal
import json
import math
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TextIO

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from lakeops.compact.planner import CompactionProgress
from lakeops.health.view import human_bytes

__all__ = ["Output", "human_bytes", "jsonable"]


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON data: dataclasses and mappings become objects (keys as strings),
    dates and times ISO 8601 strings, decimals strings (exact), bytes base64, NaN/±inf null."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return jsonable(dataclasses.asdict(value))
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return str(value)


def _ignore(*_: object) -> None:
    """A progress callback that shows nothing (JSON mode)."""


def _pipe_width(stream: TextIO) -> int | None:
    """Rich's width for a stream: its own guess on a terminal (or with ``COLUMNS`` set), else
    160 columns, so tables piped to files and logs are not squeezed to 80."""
    isatty = getattr(stream, "isatty", None)
    if (isatty is not None and isatty()) or os.environ.get("COLUMNS"):
        return None
    return 160


class Output:
    """Where and how one command invocation prints.

    Attributes:
        json_mode: machine output (``--json``).
        console: rich console on stdout (human results).
        status: rich console on stderr (progress, spinners, notes).
    """

    def __init__(self, json_mode: bool) -> None:
        self.json_mode = json_mode
        self.console = Console(highlight=False, width=_pipe_width(sys.stdout))
        self.status = Console(stderr=True, highlight=False, width=_pipe_width(sys.stderr))

    def result(self, data: Mapping[str, Any], human: Callable[[Console], None]) -> None:
        """Print a command's result: ``data`` as one JSON document, or ``human(console)``."""
        if self.json_mode:
            typer.echo(json.dumps(jsonable(data), indent=2, allow_nan=False))
        else:
            human(self.console)

    def note(self, text: str) -> None:
        """A remark for people on stderr (never in JSON mode)."""
        if not self.json_mode:
            self.status.print(text, markup=False)

    @contextmanager
    def progress(self, description: str, total: int | None) -> Iterator[Callable[[int], None]]:
        """A progress bar counting rows (``total`` None: unknown); yields ``advance(n)``."""
        if self.json_mode:
            yield _ignore
            return
        columns = (
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("rows"),
            TimeElapsedColumn(),
        )
        with Progress(*columns, console=self.status) as bar:
            task = bar.add_task(description, total=total)
            yield lambda n: bar.advance(task, n)

    @contextmanager
    def buckets(self, description: str) -> Iterator[Callable[[CompactionProgress], None]]:
        """A progress bar over buckets (with their input files and bytes) for compaction and
        level-0 flush; yields the ``progress=`` callback of
        :meth:`~lakeops.Table.compact` / :meth:`~lakeops.Table.flush_level0`. Nothing in JSON
        mode."""
        if self.json_mode:
            yield _ignore
            return
        columns = (
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("buckets, {task.fields[files]} files, {task.fields[size]}"),
            TimeElapsedColumn(),
        )
        with Progress(*columns, console=self.status) as bar:
            task = bar.add_task(description, total=None, files="0/0", size="0 B")

            def update(p: CompactionProgress) -> None:
                bar.update(
                    task,
                    total=p.buckets,
                    completed=p.buckets_done,
                    files=f"{p.files_done}/{p.files}",
                    size=f"{human_bytes(p.bytes_done)}/{human_bytes(p.bytes)}",
                )

            yield update

    @contextmanager
    def files(
        self, description: str, unit: str = "files deleted"
    ) -> Iterator[Callable[[int, int], None]]:
        """A progress bar over files deleted (``unit``: what the counts are, after them);
        yields the ``progress(done, total)`` callback of
        :meth:`~lakeops.Table.expire_snapshots` / :meth:`~lakeops.Table.remove_orphan_files`.
        Nothing in JSON mode."""
        if self.json_mode:
            yield _ignore
            return
        columns = (
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn(unit.replace("[", "\\[")),
            TimeElapsedColumn(),
        )
        with Progress(*columns, console=self.status) as bar:
            task = bar.add_task(description, total=None)
            yield lambda done, total: bar.update(task, total=total, completed=done)

    @contextmanager
    def spinner(self, description: str) -> Iterator[None]:
        """A spinner on a terminal while a long call runs (nothing in JSON mode or when stderr
        is not a terminal)."""
        if self.json_mode or not self.status.is_terminal:
            yield
            return
        columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
        with Progress(*columns, console=self.status, transient=True) as bar:
            bar.add_task(description, total=None)
            yield
