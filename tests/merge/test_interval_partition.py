"""IntervalPartition: key-disjoint sections, each as the fewest sorted runs."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from lakeops.merge.interval_partition import partition_runs


def test_inclusive_ranges_overlap() -> None:
    files = [(0, 9), (9, 15), (16, 20)]
    assert partition_runs(files, lambda f: f) == [[[(0, 9)], [(9, 15)]], [[(16, 20)]]]


def test_fewest_runs() -> None:
    files = [(0, 10), (1, 2), (3, 4), (5, 6), (11, 12)]
    sections = partition_runs(files, lambda f: f)
    # (11, 12) starts after every key of the first section: a section of its own
    assert sections == [[[(0, 10)], [(1, 2), (3, 4), (5, 6)]], [[(11, 12)]]]


@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 10)), min_size=1, max_size=30))
def test_runs_are_sorted_and_sections_disjoint(spans: list[tuple[int, int]]) -> None:
    files = [(lo, lo + width) for lo, width in spans]
    sections = partition_runs(files, lambda f: f)
    assert sorted(f for s in sections for r in s for f in r) == sorted(files)
    for s in sections:
        for run in s:
            assert all(a[1] < b[0] for a, b in itertools.pairwise(run))
    bounds = [(min(f[0] for r in s for f in r), max(f[1] for r in s for f in r)) for s in sections]
    assert all(a[1] < b[0] for a, b in itertools.pairwise(bounds))
    # fewest runs: at least the maximum number of files covering any one key point
    for s in sections:
        points = {p for r in s for f in r for p in (f[0], f[1])}
        depth = max(sum(f[0] <= p <= f[1] for r in s for f in r) for p in points)
        assert len(s) == depth
