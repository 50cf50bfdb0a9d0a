"""``import lakeops`` stays cheap (issue 39): the readers, writers, compaction, the Spark and
Airflow integrations, the CLI's libraries, Avro and object-store clients are imported when a
name that needs them is first used, not by the package import.

Each check runs in a fresh interpreter and looks at ``sys.modules``: a structural check that
fails as soon as an eager import comes back, not a timing that a busy machine could break.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

import lakeops

#: what ``import lakeops`` must not load (the Spark/Airflow integrations and the CLI are only
#: ever imported by their users; pandas comes with pyarrow.dataset or any ``pa.array(list)``)
HEAVY_FOR_PACKAGE = [
    "lakeops.catalog",
    "lakeops.table",
    "lakeops.table.append",
    "lakeops.table.primary_key",
    "lakeops.changelog",
    "lakeops.compact",
    "lakeops.maintenance",
    "lakeops.merge",
    "lakeops.read",
    "lakeops.write",
    "lakeops.kv",
    "lakeops.io",
    "lakeops.format",
    "lakeops.spark",
    "lakeops.airflow",
    "lakeops.cli",
    "pandas",
    "fsspec",
    "s3fs",
    "fastavro",
    "pyroaring",
    "typer",
    "rich",
    "pyspark",
    "airflow",
    "sqlite3",
    "pyarrow.compute",
    "pyarrow.dataset",
    "pyarrow.parquet",
    "pyarrow.orc",
]

#: what ``from lakeops import Catalog`` must not load: the tables themselves come with
#: ``get_table`` / ``create_table``
HEAVY_FOR_CATALOG = [
    "lakeops.table",
    "lakeops.changelog",
    "lakeops.compact",
    "lakeops.maintenance",
    "lakeops.merge",
    "lakeops.read",
    "lakeops.write",
    "lakeops.kv",
    "lakeops.spark",
    "lakeops.airflow",
    "lakeops.cli",
    "pandas",
    "s3fs",
    "pyroaring",
    "typer",
    "rich",
    "pyspark",
    "airflow",
    "pyarrow.dataset",
]


def _loaded_after(statement: str, candidates: list[str]) -> list[str]:
    """Which of ``candidates`` are in ``sys.modules`` after ``statement`` in a fresh
    interpreter (no site customisation of the test run leaks in)."""
    code = textwrap.dedent(
        f"""
        import json, sys
        {statement}
        print(json.dumps([m for m in {candidates!r} if m in sys.modules]))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    loaded: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


def test_import_lakeops_loads_only_the_errors() -> None:
    assert _loaded_after("import lakeops", HEAVY_FOR_PACKAGE) == []


def test_the_catalog_does_not_load_the_tables() -> None:
    assert _loaded_after("from lakeops import Catalog", HEAVY_FOR_CATALOG) == []


def test_the_error_classes_come_with_the_package_import() -> None:
    """``except lakeops.LakeopsError`` costs nothing extra: the errors are not deferred."""
    statement = "import lakeops; assert 'LakeopsError' in vars(lakeops)"
    assert _loaded_after(statement, ["lakeops.catalog"]) == []


@pytest.mark.parametrize("name", lakeops.__all__)
def test_every_public_name_resolves_to_its_defining_object(name: str) -> None:
    """Each deferred name is the object its module defines (one place says where it lives)."""
    value = getattr(lakeops, name)
    module = lakeops._LAZY.get(name, "lakeops.errors")
    assert value is getattr(sys.modules[module], name)
    assert name in dir(lakeops)


def test_a_star_import_in_a_fresh_interpreter_binds_every_public_name() -> None:
    statement = (
        "from lakeops import *; import lakeops; assert not set(lakeops.__all__) - set(globals())"
    )
    _loaded_after(statement, [])


def test_the_deferred_names_are_exactly_the_public_ones_not_imported_eagerly() -> None:
    eager = {n for n in lakeops.__all__ if n in vars(sys.modules["lakeops.errors"])}
    assert set(lakeops._LAZY) == set(lakeops.__all__) - eager
    assert eager  # the error classes


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Tabel'"):
        _ = lakeops.Tabel  # type: ignore[attr-defined]
    with pytest.raises(ImportError):
        exec("from lakeops import Tabel", {})


def test_the_tables_load_without_pyarrow_dataset() -> None:
    """``pyarrow.dataset`` imports pandas wherever pandas is installed (about 0.1 s and 45
    MiB): the tables import it only where a row-level change evaluates an expression."""
    statement = "import lakeops.table.primary_key, lakeops.table.append, lakeops.read.merge_read"
    assert _loaded_after(statement, ["pyarrow.dataset", "pandas"]) == []
