"""Validating input is linear in the number of fields: columns are matched by hashing, not by
scanning a list per field (which made one row at 8,000 fields cost 35 s). Counted, not timed;
the timing is ``benchmarks/bench_wide_write.py``."""

from __future__ import annotations

import dataclasses

import pyarrow as pa

from lakeops import Catalog
from lakeops.write.records import to_records


class CountingName(str):
    """A field name that counts how often it is compared."""

    comparisons = 0

    def __eq__(self, other: object) -> bool:
        CountingName.comparisons += 1
        return str.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        CountingName.comparisons += 1
        return str.__ne__(self, other)

    __hash__ = str.__hash__


def _comparisons(catalog: Catalog, fields: int) -> int:
    schema = pa.schema([("id", pa.int64())] + [(f"c{i}", pa.int64()) for i in range(fields - 1)])
    table = catalog.create_table(
        f"db.w{fields}", schema=schema, primary_keys=["id"], options={"bucket": "1"}
    )
    counting = dataclasses.replace(
        table.schema,
        fields=[dataclasses.replace(f, name=CountingName(f.name)) for f in table.schema.fields],
    )
    row = pa.table({f.name: pa.array([1], f.type) for f in schema})
    CountingName.comparisons = 0
    records = to_records(row, counting, table.options)
    assert records.num_rows == 1 and records.num_columns == fields + 1
    return CountingName.comparisons


def test_name_comparisons_grow_linearly_with_the_number_of_fields(catalog: Catalog) -> None:
    narrow, wide = _comparisons(catalog, 100), _comparisons(catalog, 800)
    assert wide <= 2 * 8 * max(narrow, 1), (narrow, wide)
