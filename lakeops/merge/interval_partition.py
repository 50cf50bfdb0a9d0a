"""IntervalPartition: split files into key-disjoint sections, each as the fewest sorted runs.

Files are sorted by (min key, max key) and swept left to right; a file whose min key is greater
than the largest max key of the current section starts a new section (ranges are inclusive, so
[0, 9] and [9, 15] overlap). Inside a section, each file goes to the run whose last max key is
the smallest and strictly before the file's min key, or opens a new run — the greedy assignment
that yields the fewest runs. Sections share no key, so each is merged on its own.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

__all__ = ["partition_runs", "partition_sections"]

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


def partition_runs(
    files: Sequence[F],
    key_range: Callable[[F], tuple[Any, Any]],
) -> list[list[list[F]]]:
    """Sections, each a list of sorted runs (each a key-ordered list of files)."""
    out = []
    for section in partition_sections(files, key_range):
        runs: list[list[F]] = []
        heap: list[tuple[Any, int]] = []  # (last max key, run index)
        for f in section:  # already sorted by (min key, max key)
            lo, hi = key_range(f)
            if heap and heap[0][0] < lo:
                _, idx = heapq.heappop(heap)
                runs[idx].append(f)
            else:
                idx = len(runs)
                runs.append([f])
            heapq.heappush(heap, (hi, idx))
        out.append(runs)
    return out
