"""How the CLI reports failures: one line on stderr, exit code 1.

:class:`CliError` is what the CLI itself raises for bad input (a malformed ``k=v``, an unreadable
schema file, an option that is not JSON); it derives from
:class:`~lakeops.errors.ConfigurationError`, so every expected failure is a
:class:`~lakeops.errors.LakeopsError`. :func:`error_line` turns any exception into the single
line the user sees.
"""

from __future__ import annotations

from lakeops.errors import ConfigurationError, LakeopsError

__all__ = ["CliError", "error_line"]


class CliError(ConfigurationError):
    """A command-line argument, option or input file is invalid."""


def _one_line(text: str) -> str:
    """Collapse every run of whitespace (newlines included) to one space."""
    return " ".join(text.split())


def error_line(exc: BaseException) -> str:
    """The one-line message (without the ``error:`` prefix) reported for ``exc``.

    Library errors use their own message; missing or unreadable files name the path; anything
    unexpected names its type and points at ``--debug``.
    """
    if isinstance(exc, LakeopsError):
        return _one_line(str(exc))
    if isinstance(exc, OSError):
        reason = exc.strerror or str(exc) or type(exc).__name__
        if exc.filename is not None:
            return _one_line(f"{reason.lower()}: {exc.filename}")
        return _one_line(reason)
    detail = _one_line(str(exc))
    head = type(exc).__name__ + (f": {detail}" if detail else "")
    return f"{head} (unexpected; rerun with --debug for the traceback)"
