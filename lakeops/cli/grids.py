"""Tables for people at any terminal width: nothing is cut, sentences break between words.

Rich cuts a cell that does not fit its column with an ellipsis (``parti…``, ``dt=20…``) and
wraps a table's title to the table's own width — a heading longer than a narrow table breaks
mid-sentence whatever the terminal's width. :func:`grid` makes tables whose cells wrap between
words (folding only a word longer than its column), and :func:`print_grid` prints the heading
as a line of its own, which the console wraps at word boundaries at its full width.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table as RichTable

__all__ = ["grid", "print_grid"]


def grid(*headers: str) -> RichTable:
    """A table of ``headers`` (rich markup) whose cells and headers are never cut: text wraps
    between words, and a word wider than its column folds onto the next line (no column is
    given a minimum width, which would crop the table's right edge on a narrow terminal)."""
    table = RichTable()
    for header in headers:
        table.add_column(header, overflow="fold")
    return table


def print_grid(console: Console, title: str, table: RichTable) -> None:
    """``title`` (rich markup) as its own line, wrapped between words, then ``table``."""
    console.print(title)
    console.print(table)
