"""``k=v`` assignments, partition specs and JSON options."""

from __future__ import annotations

import pytest

from lakeops.cli.errors import CliError
from lakeops.cli.parsing import parse_assignments, parse_json_object, parse_partitions
from lakeops.errors import LakeopsError


def test_assignments() -> None:
    assert parse_assignments("dt=2024-01-01,id=7", "key") == {"dt": "2024-01-01", "id": "7"}
    assert parse_assignments("a=x=y", "key") == {"a": "x=y"}
    assert parse_assignments(" a =", "key") == {"a": ""}


@pytest.mark.parametrize("text", ["", "a", "=1", "a=1,,b=2", "a=1,a=2"])
def test_bad_assignments(text: str) -> None:
    with pytest.raises(CliError) as info:
        parse_assignments(text, "--partition")
    assert isinstance(info.value, LakeopsError)
    assert str(info.value).startswith(f"--partition {text!r}")


def test_partitions() -> None:
    assert parse_partitions(None) is None and parse_partitions([]) is None
    assert parse_partitions(["dt=1", "dt=2,h=3"]) == [{"dt": "1"}, {"dt": "2", "h": "3"}]


def test_json_object() -> None:
    assert parse_json_object(None, "--x") is None and parse_json_object("  ", "--x") is None
    assert parse_json_object('{"a": 1}', "--x") == {"a": 1}
    with pytest.raises(CliError, match="--x must be a JSON object"):
        parse_json_object("[1]", "--x")
    with pytest.raises(CliError, match="line 1 column 9") as info:
        parse_json_object('{"key": s3cr3t}', "--x")
    assert "s3cr3t" not in str(info.value)
