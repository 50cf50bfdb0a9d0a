"""The sample behavioural cases (copied into tests/data/examples/cases), run through the public API.

Each case defines a table, the records of one key in order, and the expected merged rows (or a
configuration / input error). Records are written with ``rowkind.field`` = an extra ``rk``
column: in one write for ``merge-function`` cases, one commit per record for ``table`` cases
(so the merge also happens across files on read), checking ``checkpoints`` along the way.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from lakeops import Catalog, LakeopsError
from lakeops.format.types import DataType
from tests.conftest import SHARED

CASES = [
    c for c in json.loads((SHARED / "examples" / "sample-cases.json").read_text()) if "table" in c
]


def _schema(case: dict) -> pa.Schema:
    fields = [
        pa.field(f["name"], DataType.parse(f["type"]).to_arrow()) for f in case["table"]["fields"]
    ]
    return pa.schema([*fields, pa.field("rk", pa.string())])


def _batch(schema: pa.Schema, records: list) -> pa.Table:
    rows = [{**row, "rk": kind} for kind, row in records]
    return pa.Table.from_pylist(rows, schema=schema)


def _read(table) -> list[dict]:
    # first-row tables need lookup, so every write lifts level 0 (lookup-compact=radical):
    # their rows are visible to batch reads right away
    names = [n for n in table.arrow_schema.names if n != "rk"]
    return sorted(table.read(columns=names).to_pylist(), key=lambda r: json.dumps(r))


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_sample_case(catalog: Catalog, case: dict) -> None:
    options = {"bucket": "1", "rowkind.field": "rk", **case["table"]["options"]}
    schema = _schema(case)
    expected = case["expected"]
    records = [r for r in case["input"] if isinstance(r, list)]

    def run() -> list[dict]:
        table = catalog.create_table(
            "db.t", schema=schema, primary_keys=case["table"]["primary_keys"], options=options
        )
        if case.get("level") == "table":
            checkpoints = {c["after"]: c["expected"] for c in case.get("checkpoints", [])}
            for i, record in enumerate(records, start=1):
                table.write(_batch(schema, [record]))
                if i in checkpoints:
                    assert _read(table) == [checkpoints[i]], f"after record {i}"
        elif records:
            table.write(_batch(schema, records))
        return _read(table)

    if isinstance(expected, dict) and "error" in expected:
        with pytest.raises(LakeopsError) as info:
            run()
        assert expected["error"] in str(info.value)
    else:
        assert run() == sorted(expected, key=lambda r: json.dumps(r))
