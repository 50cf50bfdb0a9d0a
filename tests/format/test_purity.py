"""The format layer (``lakeops/format``) is pure: every import it makes of lakeops — at
module level, inside functions or for type checking only — is of ``lakeops.errors`` or of
``lakeops.format`` itself (ARCHITECTURE.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import lakeops.format

ALLOWED = ("lakeops.errors", "lakeops.format")


def _lakeops_imports(tree: ast.AST) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("lakeops")]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "lakeops":
                found += [(node.lineno, f"lakeops.{a.name}") for a in node.names]
            elif node.module.startswith("lakeops."):
                found.append((node.lineno, node.module))
        elif isinstance(node, ast.ImportFrom) and node.level > 1:
            found.append((node.lineno, "." * node.level + (node.module or "")))
    return found


def test_spec_imports_only_errors_and_itself() -> None:
    root = Path(next(iter(lakeops.format.__path__)))
    impure = [
        f"{path.name}:{line}: {module}"
        for path in sorted(root.glob("*.py"))
        for line, module in _lakeops_imports(ast.parse(path.read_text(), str(path)))
        if not any(module == a or module.startswith(a + ".") for a in ALLOWED)
    ]
    assert impure == []
