"""Partition directories escape like Paimon and can never leave the table directory."""

from __future__ import annotations

import datetime as dt
import posixpath

import pytest

from lakeops.spec.paths import escape_path_name, partition_dir


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2024-01-01", "dt=2024-01-01"),
        ("../x", "dt=..%2Fx"),
        ("a/b", "dt=a%2Fb"),
        ("k=v:1?#%", "dt=k%3Dv%3A1%3F%23%25"),
        ("..", "dt=.."),
        (None, "dt=__DEFAULT_PARTITION__"),
        ("  ", "dt=__DEFAULT_PARTITION__"),
    ],
)
def test_escaping(value: str | None, expected: str) -> None:
    assert partition_dir(["dt"], [value]) == expected


@pytest.mark.parametrize("value", ["../../etc", "/abs", "a/../../b", "\\..\\x", "..\x00/"])
def test_no_value_escapes_the_table(value: str) -> None:
    rel = partition_dir(["p"], [value])
    assert "/" not in rel
    assert posixpath.normpath(posixpath.join("/table", rel, "bucket-0")).startswith("/table/")


def test_typed_values_and_multi_level() -> None:
    assert (
        partition_dir(["d", "n", "b"], [dt.date(2024, 1, 2), 7, True]) == "d=2024-01-02/n=7/b=true"
    )
    assert escape_path_name("ok_name-1") == "ok_name-1"
