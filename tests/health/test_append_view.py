"""The append table's page, checked against the data files on disk per partition."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pyarrow as pa

from lakeops import Catalog
from lakeops.health.append_view import render_append_table_html

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])
EVIL = '<b>&"x'


def test_partitions_match_the_files_on_disk(catalog: Catalog, warehouse: Path) -> None:
    table = catalog.create_table("db.log", schema=SCHEMA, partition_keys=["dt"])
    writes = [["a", "c"], ["a"], ["a", "b"]]
    for dts in writes:
        n = 1_200
        table.write(
            pa.table(
                {"dt": [d for d in dts for _ in range(n)], "id": list(range(n)) * len(dts),
                 "v": ["x" * 10] * (n * len(dts))},
                schema=SCHEMA,
            )
        )  # fmt: skip
    page = render_append_table_html("db.log", table, back_href="../")
    got = {
        html.unescape(p): (int(f), int(b))
        for p, f, b in re.findall(
            r'<tr class="partition" data-partition="([^"]*)" data-buckets="\d+" '
            r'data-files="(\d+)" data-bytes="(\d+)">',
            page,
        )
    }
    root = warehouse / "db.db" / "log"
    expected = {}
    for d in ("a", "b", "c"):
        files = [p for p in root.glob(f"dt={d}/bucket-*/*") if p.is_file()]
        expected[f"dt={d}"] = (len(files), sum(p.stat().st_size for p in files))
    assert got == expected
    # most files first; counts with separators
    assert next(iter(got)) == "dt=a"
    assert "<dt>records</dt><dd>6,000</dd>" in page
    assert "<td>3,600</td>" in page
    assert '<a class="back" href="../">all tables</a>' in page
    assert 'data-snapshot-id="3"' in page


def test_partition_values_are_escaped(catalog: Catalog) -> None:
    table = catalog.create_table("db.log", schema=SCHEMA, partition_keys=["dt"])
    table.write(pa.table({"dt": [EVIL], "id": [1], "v": ["x"]}, schema=SCHEMA))
    page = render_append_table_html("db.log", table)
    assert EVIL not in page and "<b>" not in page
    assert html.escape(f"dt={EVIL}") in page


def test_empty_append_table(catalog: Catalog) -> None:
    table = catalog.create_table("db.log", schema=SCHEMA)
    page = render_append_table_html("db.log", table)
    assert "The table holds no data files." in page and 'data-snapshot-id=""' in page
