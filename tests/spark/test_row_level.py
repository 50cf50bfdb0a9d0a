"""Row-level changes through ``lakeops.spark`` (delete, update, merge of a Spark DataFrame),
run on the driver, against a plain model of the rows; Spark reads the result through the
data source."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lakeops.spark as ls
from lakeops import Catalog

pytestmark = [pytest.mark.slow, pytest.mark.spark]

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])


@pytest.mark.parametrize("keyed", [True, False])
def test_delete_update_merge_through_spark(spark: Any, tmp_path: Path, keyed: bool) -> None:
    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    keys = ["id"] if keyed else []
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=keys, options={"bucket": "2"} if keyed else {}
    )
    table.write(pa.table({"id": [1, 2, 3, 4], "v": ["a", "b", "c", "d"]}, schema=SCHEMA))
    path = table.root
    assert ls.delete(path, pc.field("id") == 1).deleted == 1
    assert ls.update(path, pc.field("id") == 2, {"v": "B"}).updated == 1
    source = spark.createDataFrame([(3, "C"), (9, "new")], "id long, v string")
    done = (
        ls.merge(source, path, on=["id"])
        .when_matched_update({"v": pc.field("source.v")})
        .when_not_matched_insert_all()
        .execute()
    )
    assert (done.updated, done.inserted) == (1, 1)
    got = sorted(tuple(r) for r in ls.read(spark, path).collect())
    assert got == [(2, "B"), (3, "C"), (4, "d"), (9, "new")]
