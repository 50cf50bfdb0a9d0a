"""The reader's conversion of a file's columns to the table's (``ReadPlan.conform``): a VARIANT
written shredded by Paimon (``variant.shreddingSchema``: a ``typed_value`` beside ``value`` and
``metadata``, ``value`` optional) is refused by name, never cast into a struct that drops the
shredded values; an unshredded one passes unchanged."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lakeops.errors import UnsupportedFeatureError
from lakeops.format.types import VARIANT_ARROW
from lakeops.kv.reader import ReadPlan

TARGET = pa.schema([("v", VARIANT_ARROW)])
META = bytes([1, 0, 0])


def _plan() -> ReadPlan:
    return ReadPlan(read_cols=["v"], sources={"v": "v"}, casts={})


def test_shredded_variant_is_refused_naming_the_column() -> None:
    shredded = pa.struct(
        [
            pa.field("metadata", pa.binary(), False),
            pa.field("value", pa.binary()),
            pa.field("typed_value", pa.int64()),
        ]
    )
    table = pa.table(
        {"v": pa.array([{"metadata": META, "value": None, "typed_value": 7}], shredded)}
    )
    with pytest.raises(UnsupportedFeatureError, match="'v' is a VARIANT stored shredded"):
        _plan().conform(table, TARGET)


def test_unshredded_variant_passes_unchanged() -> None:
    value = {"value": bytes([0x0C, 7]), "metadata": META}
    table = pa.table({"v": pa.array([value, None], VARIANT_ARROW)})
    assert _plan().conform(table, TARGET).column("v").to_pylist() == [value, None]
