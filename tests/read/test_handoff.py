"""Hand-offs to pandas, Polars and DuckDB: the same rows as a plain model, the extra named when
a library is missing."""

from __future__ import annotations

import builtins
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakeops import Catalog, ConfigurationError
from lakeops.read import handoff

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("v", pa.float64())])
ROWS = [
    {"id": 1, "name": "a", "v": 1.5},
    {"id": 2, "name": None, "v": None},
    {"id": 3, "name": "c", "v": -2.0},
]


@pytest.fixture
def table(catalog: Catalog) -> Any:
    t = catalog.create_table("db.h", schema=SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    t.write(pa.Table.from_pylist(ROWS, schema=SCHEMA))
    return t


def test_pandas(table: Any) -> None:
    frame = table.to_pandas(filter=pc.field("id") >= 2, columns=["id", "name"])
    got = sorted(frame.astype(object).where(frame.notna(), None).to_dict("records"), key=str)
    assert got == sorted(
        [{"id": r["id"], "name": r["name"]} for r in ROWS if r["id"] >= 2], key=str
    )


def test_polars(table: Any) -> None:
    import polars

    frame = table.to_polars(filter=pc.field("name").is_valid())
    assert isinstance(frame, polars.DataFrame)
    assert sorted(frame.to_dicts(), key=lambda r: r["id"]) == [r for r in ROWS if r["name"]]


@pytest.mark.parametrize("streaming", [False, True])
def test_duckdb(table: Any, streaming: bool) -> None:
    import duckdb

    con = duckdb.connect()
    rel = table.to_duckdb(connection=con, streaming=streaming, filter=pc.field("v") < 0)
    assert rel.fetchall() == [(3, "c", -2.0)]
    if not streaming:  # over a table the relation runs again
        assert rel.aggregate("count(*)").fetchall() == [(1,)]
    default = table.to_duckdb(streaming=streaming, columns=["id"])  # DuckDB's own connection
    assert sorted(default.fetchall()) == [(1,), (2,), (3,)]


@pytest.mark.parametrize(
    ("method", "module"),
    [("to_pandas", "pandas"), ("to_polars", "polars"), ("to_duckdb", "duckdb")],
)
def test_a_missing_library_names_its_extra(
    table: Any, method: str, module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_import = builtins.__import__

    def no_module(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == module or name.startswith(module + "."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_module)
    monkeypatch.setattr(handoff.importlib, "import_module", lambda name: no_module(name))
    with pytest.raises(ConfigurationError, match=rf"lakeops\[{module}\]"):
        getattr(table, method)()
