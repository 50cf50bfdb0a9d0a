"""Python code run in a process where ``import pandas`` fails, as in an install of lakeops
without its pandas extra (pyarrow then gives no Python value of a nanosecond timestamp)."""

from __future__ import annotations

import subprocess
import sys

#: makes every later ``import pandas`` fail, as a missing package does
_PRELUDE = """
import importlib.abc, sys
class _NoPandas(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] == "pandas":
            raise ImportError("pandas is not installed here")
sys.meta_path.insert(0, _NoPandas())
"""


def run_without_pandas(script: str, *args: str) -> list[str]:
    """The lines ``script`` prints, run with ``args`` as ``sys.argv[1:]`` where pandas cannot
    be imported; a failure of the script fails the caller, with its error output."""
    done = subprocess.run(
        [sys.executable, "-c", _PRELUDE + script, *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().split("\n")
