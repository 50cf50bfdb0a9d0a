"""The package is built in layers (ARCHITECTURE.md): every import lakeops makes of itself — at
module level, inside functions or for type checking only — points to its own folder or to a
layer below it, so no two folders import each other, and the package root holds only the ground
modules, ``catalog.py`` and ``demo.py``."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import lakeops

#: ground floor first: a folder (or root module) may import only itself and those before it
LAYERS = (
    ("errors",),
    ("parallel", "redact"),
    ("format",),
    ("io",),
    ("options",),
    ("merge",),
    ("store",),
    ("kv",),
    ("read",),
    ("changelog",),
    ("bucket",),
    ("compact",),
    ("write",),
    ("commit",),
    ("maintenance",),
    ("table",),
    ("catalog",),
    ("__init__",),  # the public face (``from lakeops import Catalog``) of what lies below
    ("health",),
    ("spark",),
    ("airflow",),
    ("cli",),
    ("demo",),
)
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}
ROOT = Path(next(iter(lakeops.__path__)))
ROOT_MODULES = {"__init__", "errors", "parallel", "redact", "catalog", "demo"}


def _unit(module: str) -> str:
    """The layer unit of a dotted ``lakeops`` module: its folder, or its root module name."""
    parts = module.split(".")
    return "__init__" if len(parts) == 1 else parts[1]


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every ``lakeops`` module ``path`` imports, wherever the import stands."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("lakeops")]
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            found.append((node.lineno, "<relative import>"))
        elif isinstance(node, ast.ImportFrom) and node.module == "lakeops":
            # ``from lakeops import x``: x is a root module or folder, or a name of __init__
            for alias in node.names:
                name = alias.name if alias.name in RANK else "__init__"
                found.append((node.lineno, f"lakeops.{name}" if name != "__init__" else "lakeops"))
        elif (
            isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("lakeops.")
        ):
            found.append((node.lineno, node.module))
    return found


def _sources() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        unit = rel.parts[0] if len(rel.parts) > 1 else rel.stem
        out.append((unit, path))
    return out


def test_every_folder_and_root_module_has_a_layer() -> None:
    units = {unit for unit, _ in _sources()}
    assert sorted(units - set(RANK)) == []


def test_root_holds_only_the_ground_modules_catalog_and_demo() -> None:
    assert sorted(p.stem for p in ROOT.glob("*.py")) == sorted(ROOT_MODULES)


def test_imports_point_only_down_the_layers() -> None:
    against = []
    for unit, path in _sources():
        for line, module in _imports(path):
            target = "?" if module.startswith("<") else _unit(module)
            if target == unit:
                continue
            if RANK.get(target, len(LAYERS)) >= RANK[unit]:
                against.append(f"{path.relative_to(ROOT)}:{line}: {unit} imports {module}")
    assert against == []


def test_architecture_table_lists_exactly_the_folders() -> None:
    text = (ROOT.parent / "ARCHITECTURE.md").read_text()
    listed = set(re.findall(r"`lakeops/([a-z_]+)/`", text))
    folders = {p.name for p in ROOT.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert sorted(listed) == sorted(folders)
