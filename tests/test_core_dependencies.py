"""lakeops' core works with its core dependencies alone (``pip install lakeops``, no extra).

A fresh interpreter refuses to import any top-level module that neither the standard library,
lakeops, nor a core dependency of ``pyproject.toml`` (or what one of them requires) provides —
as a core install lacks them — and then runs what every user of the core does: primary-key
tables with deletion vectors, partitions and a changelog producer, written, deleted from,
updated, compacted, rolled back, expired and checked, and an append table written, compacted
and read. An extra's module imported by that path fails the test with the import's traceback
(``pyroaring``, which deletion vectors need, was once only in the ``sketches`` extra).
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import tomllib
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _name(requirement: str) -> str:
    """The normalised distribution name of a requirement string."""
    match = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert match is not None, requirement
    return re.sub(r"[-_.]+", "-", match.group(0)).lower()


def _core_distributions() -> set[str]:
    """The core dependencies of ``pyproject.toml`` and, transitively, what they require
    (requirements behind an extra marker left out)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    todo = [
        _name(r)
        for r in project["dependencies"]
        if ";" not in r or "python_version" in r.split(";", 1)[1]
    ]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue  # a marker not met here (backports.zstd on Python 3.14)
        todo += [_name(r) for r in requires if "extra ==" not in r]
    return seen


def _allowed_modules() -> list[str]:
    """Top-level modules the core distributions provide."""
    core = _core_distributions()
    return sorted(
        module
        for module, dists in metadata.packages_distributions().items()
        if any(_name(d) in core for d in dists)
    )


_PRELUDE = """
import importlib.abc, sys
ALLOWED = set({allowed!r}) | set(sys.stdlib_module_names) | {{"lakeops", "tests"}}
class _CoreOnly(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        top = name.split(".")[0]
        if top not in ALLOWED and not top.startswith("_"):
            raise ImportError(f"{{top}} is not a core dependency of lakeops")
sys.meta_path.insert(0, _CoreOnly())
"""

_WORKLOAD = """
import sys
import pyarrow as pa
import pyarrow.compute as pc
from lakeops import Catalog

catalog = Catalog(sys.argv[1])
catalog.create_database("db")
schema = pa.schema([
    pa.field("p", pa.string(), nullable=False),
    pa.field("k", pa.int64(), nullable=False),
    ("v", pa.int64()),
    ("s", pa.string()),
])
t = catalog.create_table(
    "db.pk", schema=schema, primary_keys=["p", "k"], partition_keys=["p"],
    options={"bucket": "2", "deletion-vectors.enabled": "true",
             "changelog-producer": "lookup"},
)
rows = pa.table({"p": ["a", "b"] * 50, "k": list(range(100)), "v": list(range(100)),
                 "s": [f"x{i}" for i in range(100)]}, schema=schema)
t.write(rows)
t.write(rows.slice(0, 40).set_column(2, "v", pa.array([-1] * 40, pa.int64())))
t.delete(pc.field("k") < 10)
t.update(pc.field("k") == 50, {"v": 5000})
t.compact(full=True)
first = t.latest_snapshot().id
t.write(rows.slice(90, 10))
t.rollback_to(first)
got = t.read().sort_by("k")
assert got.num_rows == 90, got.num_rows
assert got.column("v").to_pylist()[:3] == [-1, -1, -1]
assert got.filter(pc.field("k") == 50).column("v").to_pylist() == [5000]
t.expire_snapshots(retain_max=1, retain_min=1)
assert t.check().ok

a = catalog.create_table("db.log", schema=schema, options={"bucket": "-1"})
a.write(rows)
a.write(rows)
a.compact(full=True)
assert a.read().num_rows == 200
print("ok")
"""


def test_the_core_runs_with_its_core_dependencies_alone(tmp_path: Path) -> None:
    allowed = _allowed_modules()
    assert "pyarrow" in allowed and "pyroaring" in allowed, allowed
    code = _PRELUDE.format(allowed=allowed) + textwrap.dedent(_WORKLOAD)
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "wh")],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        cwd=str(ROOT),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "ok"


def test_the_guard_refuses_what_is_not_core() -> None:
    """The check can fail: an extra's module is refused in that interpreter."""
    code = _PRELUDE.format(allowed=_allowed_modules()) + "import datasketches\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode != 0
    assert "datasketches is not a core dependency of lakeops" in done.stderr
