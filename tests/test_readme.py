"""The README's Python API sections run as written: their ``python`` code blocks, top to bottom,
as one script in a fresh directory (a subprocess of this venv, this checkout's lakeops)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: the sections of the README that show the Python API by example, in the README's order
PYTHON_API_SECTIONS = (
    "The Python API in one screen",
    "Tags, time travel and catalog operations",
    "Metadata tables",
)


def python_api_code(text: str) -> list[str]:
    """The ``python`` blocks of :data:`PYTHON_API_SECTIONS`, in order (each section must have
    one)."""
    blocks: list[str] = []
    for title in PYTHON_API_SECTIONS:
        start = text.index(f"\n## {title}\n")
        end = text.find("\n## ", start + 1)
        section = text[start : end if end != -1 else len(text)]
        found = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
        assert found, f"section {title!r} has no python block"
        blocks += found
    return blocks


def test_the_python_api_sections_run_as_written(tmp_path: Path) -> None:
    script = "\n".join(python_api_code(README.read_text(encoding="utf-8")))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    # what the examples did, seen on disk: the renamed table with its snapshots and tags
    table = tmp_path / "warehouse" / "db.db" / "orders_v1"
    assert (table / "snapshot").is_dir() and not (
        tmp_path / "warehouse" / "db.db" / "orders"
    ).exists()
    assert sorted(p.name for p in (table / "tag").iterdir()) == ["tag-eod-2024-05-01"]
    assert not (tmp_path / "warehouse" / "scratch.db").exists()


def test_the_multi_column_lookup_runs_and_prints_what_it_says(tmp_path: Path) -> None:
    """The README's lookup by a key of several columns: its block runs alone, as written, and
    prints the rows its comment shows (a key absent from the table returns no row)."""
    text = README.read_text(encoding="utf-8")
    start = text.index("\n## Compaction, level-0 flushes and lookups\n")
    section = text[start : text.find("\n## ", start + 1)]
    blocks = [b for b in re.findall(r"```python\n(.*?)```", section, re.DOTALL) if ".lookup(" in b]
    multi = [b for b in blocks if "primary_keys=" in b]
    assert len(multi) == 1, "the section shows one self-contained multi-column lookup"
    code = multi[0]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    shown = re.search(r"print\(.*?\)\n# (\[.*?\])", code, re.DOTALL)
    assert shown is not None
    expected = re.sub(r"\n#\s*", " ", shown.group(1))  # the comment, one line
    assert proc.stdout.split() == expected.split()
