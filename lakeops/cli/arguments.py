"""Argument and option declarations shared by several commands."""

from __future__ import annotations

from typing import Annotated

import typer

__all__ = ["ParallelismOpt", "PartitionOpt", "TableArg"]

TableArg = Annotated[
    str,
    typer.Argument(metavar="TABLE", help="The table, as database.table.", show_default=False),
]

PartitionOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--partition",
        "-p",
        metavar="K=V[,K=V]",
        help="Only this partition, as k=v[,k2=v2]; repeat for several (default: all).",
        show_default=False,
    ),
]

ParallelismOpt = Annotated[
    int | None,
    typer.Option(
        "--parallelism",
        min=1,
        metavar="N",
        help="Buckets written or compacted at once (default: the cores available, capped by "
        "the buckets in play). The result is the same at every value.",
        show_default=False,
    ),
]
