"""The native Spark write path builds the file indexes a table's ``file-index.*`` options ask
for (embedded in the manifest entry, or as the extra ``<data file>.index`` when larger than
``file-index.in-manifest-threshold``), judged by Java Paimon 0.9's ``FileIndexPredicate``:
every value a file holds may match, most absent values are ruled out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import lakeops.spark as ls
from lakeops import Catalog
from tests.interop.conftest import java_classpath  # noqa: F401  (the session fixture)
from tests.interop.java_oracle import run_ops
from tests.interop.test_file_index_interop import SCHEMA, _check_file, _probes

pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.interop]


@pytest.mark.parametrize("items", ["200", "20000"], ids=["embedded", "extra-file"])
def test_native_writes_build_the_indexes_java_uses(
    spark: Any,
    catalog: Catalog,
    warehouse: Path,
    java_classpath: str,  # noqa: F811
    items: str,
) -> None:
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["id"],
        options={
            "bucket": "1",
            "file-index.bloom-filter.columns": "id,s",
            "file-index.bloom-filter.id.items": items,
            "file-index.bloom-filter.s.items": items,
        },
    )
    rows = [(i, f"s{i}", i / 2) for i in range(0, 60)]
    df = spark.createDataFrame(rows, "id bigint, s string, v double")
    assert ls.write(df, table.root, via="native") == "native"
    (found,) = run_ops(
        java_classpath, warehouse, [{"op": "file_index", "table": "db.t", "probes": _probes()}]
    )
    files = found["files"]
    assert [f["row_count"] for f in files] == [60]
    embedded = items == "200"
    for f in files:
        assert f["embedded"] is embedded, f
        assert f["extra_files"] == ([] if embedded else [f["file"] + ".index"]), f
        _check_file(f, set(range(0, 60)))
    assert (warehouse / "db.db" / "t" / "bucket-0").exists()
    read = catalog.get_table("db.t").read()
    assert sorted(read.column("id").to_pylist()) == list(range(60))
