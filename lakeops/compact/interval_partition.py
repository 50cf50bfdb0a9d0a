"""IntervalPartition: split a bucket's files into sections of overlapping key ranges.

Files are sorted by (min key, max key) and swept left to right; a file whose min key is greater
than the largest max key of the current section starts a new section. Files of different
sections share no key, so each section is merged on its own, and a section of one file needs no
cross-file merge at all.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

__all__ = ["partition_sections"]

F = TypeVar("F")


def partition_sections(
    files: Sequence[F],
    key_range: Callable[[F], tuple[Any, Any]],
) -> list[list[F]]:
    """Group ``files`` into key-disjoint sections, in key order."""
    ordered = sorted(files, key=lambda f: key_range(f))
    sections: list[list[F]] = []
    bound: Any = None
    for f in ordered:
        lo, hi = key_range(f)
        if sections and lo <= bound:
            sections[-1].append(f)
            bound = max(bound, hi)
        else:
            sections.append([f])
            bound = hi
    return sections
