"""The one-line error messages."""

from __future__ import annotations

from lakeops.cli.errors import CliError, error_line
from lakeops.errors import LakeopsError, TableNotFoundError


def test_error_lines() -> None:
    assert error_line(TableNotFoundError("table 'db.x'\n  does not exist")) == (
        "table 'db.x' does not exist"
    )
    assert isinstance(CliError("x"), LakeopsError)
    assert error_line(FileNotFoundError(2, "No such file or directory", "a.csv")) == (
        "no such file or directory: a.csv"
    )
    assert error_line(PermissionError(13, "Permission denied")) == "Permission denied"
    assert error_line(KeyError("k")) == (
        "KeyError: 'k' (unexpected; rerun with --debug for the traceback)"
    )
