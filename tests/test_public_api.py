"""The public API (``lakeops.__all__``) is what the README's API reference lists, and its
methods keep one shape: arguments that name the thing positional, options keyword-only, every
parameter typed, every result type a frozen dataclass. The read methods take the arguments of
``scan`` as one typed keyword set (``**scan: Unpack[ScanArgs]``), which is exactly ``scan``'s."""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import lakeops
from lakeops.table.scan import ScanArgs

README = Path(__file__).resolve().parents[1] / "README.md"

#: positional parameters with a default that still name the thing (a snapshot range or id)
POSITIONAL_WITH_DEFAULT = {
    (cls, method): params
    for cls in ("Table", "AppendTable")
    for method, params in (
        ("read_changes", {"from_snapshot", "to_snapshot"}),
        ("commit_stats", {"snapshot_id"}),
        ("rollback_to", {"snapshot_id"}),
        ("create_tag", {"snapshot_id"}),
        ("replace_tag", {"snapshot_id"}),
    )
}


def _api_section() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("\n## API reference\n")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def _methods(cls: type) -> dict[str, Callable[..., Any]]:
    """The public methods of ``cls``, its own and those it inherits from lakeops' classes."""
    out: dict[str, Callable[..., Any]] = {}
    for owner in reversed(cls.__mro__):
        if owner.__module__.startswith("lakeops"):
            out.update(
                (name, member)
                for name, member in vars(owner).items()
                if not name.startswith("_") and inspect.isfunction(member)
            )
    return out


def _documented_signatures() -> dict[str, dict[str, list[str]]]:
    """``{"Catalog": {"create_table": ["identifier", "*", "schema", …], …}, "Table": …}`` from
    the code block of the API section (``__init__`` for the constructor line)."""
    block = _api_section().split("```python\n", 1)[1].split("```", 1)[0]
    found: dict[str, dict[str, list[str]]] = {}
    owner = ""
    lines: list[str] = []
    for raw in block.splitlines():
        code = raw.split("#", 1)[0]
        if lines and lines[-1].count("(") > lines[-1].count(")"):
            lines[-1] += " " + code.strip()  # a signature continued on the next line
        else:
            lines.append(code)
    for code in lines:
        if code and not code[0].isspace():  # a class: "Catalog(…)" or "Table"
            owner = code.split("(", 1)[0].strip()
            found[owner] = {}
        for match in re.finditer(r"(?:^(\w+)|\.(\w+))\(", code):
            name = "__init__" if match.group(1) else match.group(2)
            at = match.end()
            depth, end = 1, at
            while depth:
                depth += {"(": 1, ")": -1}.get(code[end], 0)
                end += 1
            found[owner][name] = [
                p.split("=", 1)[0].strip()
                for p in re.split(r",(?![^()]*\))", code[at : end - 1])
                if p.strip()
            ]
    return found


def test_the_readme_lists_exactly_what_lakeops_exports() -> None:
    names = re.findall(r"^\| `(\w+)` \|", _api_section(), re.MULTILINE)
    assert len(names) == len(set(names)), "a name is listed twice"
    assert sorted(names) == sorted(lakeops.__all__)
    for name in lakeops.__all__:
        assert getattr(lakeops, name) is not None


@pytest.mark.parametrize(
    "cls",
    [lakeops.Catalog, lakeops.Table, lakeops.AppendTable, lakeops.Scan],
    ids=lambda c: c.__name__,
)
def test_the_readme_shows_every_method_with_its_signature(cls: type) -> None:
    documented = _documented_signatures()[cls.__name__]
    methods = _methods(cls)
    expected_names = set(methods) | ({"__init__"} if cls is lakeops.Catalog else set())
    assert set(documented) == expected_names
    for name, params in documented.items():
        signature = inspect.signature(getattr(cls, name))
        actual: list[str] = []
        for p in list(signature.parameters.values())[1:]:  # self
            if p.kind is p.KEYWORD_ONLY and "*" not in actual:
                actual.append("*")
            actual.append(f"**{p.name}" if p.kind is p.VAR_KEYWORD else p.name)
        assert params == actual, name


@pytest.mark.parametrize(
    "cls",
    [lakeops.Catalog, lakeops.Table, lakeops.AppendTable, lakeops.Scan],
    ids=lambda c: c.__name__,
)
def test_options_are_keyword_only_and_everything_is_typed(cls: type) -> None:
    methods = {"__init__": vars(cls)["__init__"], **_methods(cls)}
    for name, method in methods.items():
        signature = inspect.signature(method)
        assert signature.return_annotation is not inspect.Signature.empty, name
        allowed = POSITIONAL_WITH_DEFAULT.get((cls.__name__, name), set())
        for p in list(signature.parameters.values())[1:]:
            assert p.annotation is not inspect.Parameter.empty, f"{name}({p.name}) is untyped"
            if p.kind is p.VAR_KEYWORD:  # only the scan's keyword set
                assert (p.name, p.annotation) == ("scan", "Unpack[ScanArgs]"), name
                continue
            assert p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY), f"{name}({p.name})"
            if p.kind is p.POSITIONAL_OR_KEYWORD and p.default is not p.empty:
                assert p.name in allowed, f"option {name}({p.name}) must be keyword-only"


@pytest.mark.parametrize("cls", [lakeops.Table, lakeops.AppendTable], ids=lambda c: c.__name__)
def test_the_scan_keyword_set_is_exactly_what_scan_takes(cls: type) -> None:
    """``read(**scan)``, ``to_pandas(**scan)`` … are typed by ``ScanArgs``; ``scan`` checks
    the names at run time: the two must name the same arguments with the same types."""
    scan = inspect.signature(cls.scan).parameters
    taken = {n: p.annotation for n, p in scan.items() if p.kind is p.KEYWORD_ONLY}
    # leaving one out of ``**scan`` means its default: none, or the merged read
    assert all(scan[n].default is None for n in taken if n != "mode")
    assert scan["mode"].default == "merged"
    assert taken == {n: t.__forward_arg__ for n, t in ScanArgs.__annotations__.items()}
    assert not ScanArgs.__required_keys__


def test_exported_result_types_are_frozen() -> None:
    results = [
        getattr(lakeops, n)
        for n in lakeops.__all__
        if dataclasses.is_dataclass(getattr(lakeops, n)) and n not in ("CommitMessage",)
    ]
    assert {r.__name__ for r in results} >= {
        "BucketHealth",
        "CheckReport",
        "CommitStats",
        "ExpireResult",
        "OrphanResult",
        "Problem",
        "Snapshot",
        "Split",
        "TableHealth",
        "Tag",
    }
    for result in results:
        assert result.__dataclass_params__.frozen, result.__name__  # type: ignore[attr-defined]
