"""The README's Python API sections run as written: their ``python`` code blocks, top to bottom,
as one script in a fresh directory (a subprocess of this venv, this checkout's lakeops)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: the sections of the README that show the Python API by example, in the README's order
PYTHON_API_SECTIONS = (
    "The Python API in one screen",
    "Tags, time travel and catalog operations",
    "Changing rows",
    "Branches",
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


def _run_as_written(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run README ``code`` in a fresh interpreter in ``cwd``; it must succeed."""
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def test_the_python_api_sections_run_as_written(tmp_path: Path) -> None:
    script = "\n".join(python_api_code(README.read_text(encoding="utf-8")))
    _run_as_written(script, tmp_path)
    # what the examples did, seen on disk: the renamed table with its snapshots and tags
    table = tmp_path / "warehouse" / "db.db" / "orders_v1"
    assert (table / "snapshot").is_dir() and not (
        tmp_path / "warehouse" / "db.db" / "orders"
    ).exists()
    assert sorted(p.name for p in (table / "tag").iterdir()) == ["tag-eod-2024-05-01"]
    assert not (tmp_path / "warehouse" / "scratch.db").exists()


def section_code(text: str, title: str) -> list[str]:
    """The ``python`` blocks of the README's ``## title`` section, before its first ``###``
    subsection, in order."""
    start = text.index(f"\n## {title}\n")
    ends = [i for i in (text.find("\n## ", start + 1), text.find("\n### ", start + 1)) if i != -1]
    section = text[start : min(ends) if ends else len(text)]
    return re.findall(r"```python\n(.*?)```", section, re.DOTALL)


def _python_without_lakeops() -> str:
    """A ``python3`` outside this venv (the system's), which cannot import lakeops' deps."""
    for folder in ("/usr/bin", "/usr/local/bin"):
        candidate = Path(folder) / "python3"
        if candidate.is_file() and Path(sys.executable).parent != Path(folder):
            return str(candidate)
    pytest.skip("no system python3 outside the venv to stand in for a fresh machine's")


@pytest.mark.slow
@pytest.mark.spark
def test_the_spark_section_runs_as_written(tmp_path: Path) -> None:
    """As a new user runs it: from the venv's interpreter, with no ``PYSPARK_PYTHON`` /
    ``PYSPARK_DRIVER_PYTHON`` and a ``python3`` that cannot import lakeops first on ``PATH``
    (the one PySpark's workers start by default)."""
    blocks = section_code(README.read_text(encoding="utf-8"), "Spark")
    assert len(blocks) == 2, "the Spark section's python blocks changed: update this test"
    system = _python_without_lakeops()
    shadow = tmp_path / "bin"
    shadow.mkdir()
    (shadow / "python3").symlink_to(system)
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")
    }
    env.update(PYTHONPATH=str(ROOT), PATH=f"{shadow}{os.pathsep}{env.get('PATH', '')}")
    probe = subprocess.run(
        ["python3", "-c", "import lakeops.spark.datasource"],
        env=env,
        capture_output=True,
        check=False,
    )
    assert probe.returncode != 0, (
        "the python3 first on PATH imports lakeops: the test proves nothing"
    )
    work = tmp_path / "work"
    work.mkdir()
    proc = subprocess.run(
        [sys.executable, "-c", "\n".join(blocks)],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    # the SQL by name printed the one row with amount > 3
    assert re.search(r"\|\s*2\|\s*4\.0\|", proc.stdout), proc.stdout[-2000:]
    assert not re.search(r"\|\s*1\|\s*2\.5\|", proc.stdout)
    from lakeops import Catalog

    catalog = Catalog(str(work / "warehouse"))
    orders = catalog.get_table("db.orders").read().to_pylist()
    assert sorted((r["id"], r["name"], r["amount"]) for r in orders) == [
        (1, "a", 2.5),
        (2, "b", 4.0),
    ]
    totals = catalog.get_table("db.totals")
    assert sorted((r["id"], r["amount"]) for r in totals.read().to_pylist()) == [(1, 2.5), (2, 4.0)]
    assert [t.name for t in totals.tags()] == ["daily"]


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
    proc = _run_as_written(code, tmp_path)
    shown = re.search(r"print\(.*?\)\n# (\[.*?\])", code, re.DOTALL)
    assert shown is not None
    expected = re.sub(r"\n#\s*", " ", shown.group(1))  # the comment, one line
    assert proc.stdout.split() == expected.split()
