"""The rbm64 codec against byte fixtures Java Paimon 0.9 wrote (tests/data/agg_states/), and the
other binary aggregate states against Java's bytes."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from lakeops.errors import DataValidationError
from lakeops.format.types import DataType
from lakeops.merge import roaring64
from lakeops.merge.aggregators import FieldAggOptions, create_aggregator

pyroaring = pytest.importorskip("pyroaring")

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "agg_states"
INDEX: dict[str, dict[str, Any]] = json.loads((FIXTURES / "index.json").read_text("utf-8"))
MASK64 = (1 << 64) - 1
RBM64 = [n for n, e in INDEX.items() if e["kind"] == "rbm64"]
RBM32 = [n for n, e in INDEX.items() if e["kind"] == "rbm32"]


def _expand(spec: Any) -> list[int]:
    if isinstance(spec, list):
        return list(spec)
    out = list(spec.get("values", []))
    for start, stop, step in spec.get("ranges", []):
        out.extend(range(start, stop, step))
    return out


def _fixture(name: str) -> tuple[bytes, list[int]]:
    """Java's bytes and the values Java added (unsigned, ascending, distinct)."""
    mask = MASK64 if INDEX[name]["kind"] == "rbm64" else 0xFFFFFFFF
    values = sorted({v & mask for v in _expand(INDEX[name]["set"])})
    return (FIXTURES / f"{name}.bin").read_bytes(), values


def _agg(function: str) -> Any:
    return create_aggregator(function, "uv", DataType.parse("VARBINARY"), FieldAggOptions())


@pytest.mark.parametrize("name", RBM64)
def test_java_bytes_read_exactly(name: str) -> None:
    data, values = _fixture(name)
    assert roaring64.layout(data) == "java"
    assert roaring64.values_of(data).tolist() == values
    portable = roaring64.portable_from_any(data)
    assert list(pyroaring.BitMap64.deserialize(portable)) == values


@pytest.mark.parametrize("name", RBM64)
def test_written_bytes_equal_javas(name: str) -> None:
    data, values = _fixture(name)
    bitmap = pyroaring.BitMap64(values)
    assert roaring64.to_java(bitmap) == data
    assert roaring64.to_java(data) == data
    older = bytes(bitmap.serialize())  # what lakeops wrote before
    assert roaring64.layout(older) == "portable"
    assert roaring64.values_of(older).tolist() == values
    assert roaring64.to_java(pyroaring.BitMap64.deserialize(older)) == data
    assert roaring64.values_of(roaring64.to_java(older)).tolist() == values


def test_union_reads_both_layouts_and_writes_javas() -> None:
    java, java_values = _fixture("rbm64_signed")
    older = bytes(pyroaring.BitMap64([5, 2**40 + 6, 2**64 - 2]).serialize())
    out = _agg("rbm64").union(java, older)
    assert roaring64.layout(out) == "java"
    assert roaring64.values_of(out).tolist() == sorted({*java_values, 5, 2**40 + 6, 2**64 - 2})
    big, big_values = _fixture("rbm64_bitmap")
    run, run_values = _fixture("rbm64_run")
    out = _agg("rbm64").union(big, run)
    assert roaring64.values_of(out).tolist() == sorted({*big_values, *run_values})
    assert roaring64.to_java(pyroaring.BitMap64(sorted({*big_values, *run_values}))) == out


def test_unusual_java_containers() -> None:
    """Java may hold an array of more than 4096 values or a bitmap of fewer (legal there);
    the portable layout decides by cardinality, so they are converted, not copied."""
    many = np.arange(0, 10000, 2, dtype="<u2")
    few = np.zeros(1 << 16, dtype=bool)
    few[[3, 9, 60000]] = True
    containers = roaring64.Containers(
        np.array([0, 1], dtype=np.uint64),
        np.array([roaring64.ARRAY, roaring64.BITMAP], dtype=np.uint8),
        np.array([many.size, 3], dtype=np.int64),
        [many.tobytes(), np.packbits(few, bitorder="little").tobytes()],
    )
    data = roaring64._write_java(containers)
    expected = [*range(0, 10000, 2), 65536 + 3, 65536 + 9, 65536 + 60000]
    assert roaring64.values_of(data).tolist() == expected
    assert list(pyroaring.BitMap64.deserialize(roaring64.portable_from_any(data))) == expected


@pytest.mark.parametrize("name", RBM64[1:])
def test_damaged_java_bytes_are_named(name: str) -> None:
    data, _ = _fixture(name)
    for bad in (data[:-1], data + b"\x00", data[:20]):
        with pytest.raises(DataValidationError, match="rbm64"):
            roaring64.values_of(bad)
    with pytest.raises(DataValidationError, match="keys"):  # key count off by one
        roaring64.values_of(
            data[:1] + struct.pack("<Q", struct.unpack("<Q", data[1:9])[0] + 1) + data[9:]
        )


@pytest.mark.parametrize(
    "data",
    [b"", b"\x01", b"\x02" + bytes(20), bytes(9), b"\x00\x00", bytes(range(40)), b"\xff" * 64],
)
def test_neither_layout_is_a_named_error(data: bytes) -> None:
    with pytest.raises(DataValidationError, match="uv"):
        _agg("rbm64").union(data, _fixture("rbm64_one")[0])


def test_damaged_portable_bytes_are_named() -> None:
    older = bytes(pyroaring.BitMap64([1, 2**40, *range(100000, 130000)]).serialize())
    for bad in (older[:-1], older + b"\x00", older[:16] + b"\xff" + older[17:]):
        with pytest.raises(DataValidationError):
            roaring64.values_of(bad)


@pytest.mark.parametrize("name", RBM32)
def test_rbm32_bytes_equal_javas(name: str) -> None:
    data, values = _fixture(name)
    assert list(pyroaring.BitMap.deserialize(data)) == values
    ours = _agg("rbm32").union(data, bytes(pyroaring.BitMap(values[:1]).serialize()))
    assert ours == data  # run-optimized as Java's RoaringBitmap32.serialize


@pytest.mark.parametrize("function", ["rbm32", "hll_sketch", "theta_sketch"])
def test_unreadable_states_are_named(function: str) -> None:
    if function != "rbm32":
        pytest.importorskip("datasketches")
    with pytest.raises(DataValidationError, match=f"field 'uv' \\(aggregate function '{function}'"):
        _agg(function).union(b"\x07not a state", b"\x07not a state")


def test_sketches_read_javas_bytes() -> None:
    ds = pytest.importorskip("datasketches")
    hll = (FIXTURES / "hll_sketch_1000.bin").read_bytes()
    theta = (FIXTURES / "theta_sketch_1000.bin").read_bytes()
    assert (
        ds.hll_sketch.deserialize(hll).get_estimate() == INDEX["hll_sketch_1000"]["java_estimate"]
    )
    est = ds.compact_theta_sketch.deserialize(theta).get_estimate()
    assert est == INDEX["theta_sketch_1000"]["java_estimate"]
    # a union with an HLL_8 sketch gives HLL_4, as Paimon's HllSketchUtil.union
    other = ds.hll_sketch(12, ds.tgt_hll_type.HLL_8)
    for v in range(500, 1500):
        other.update(v)
    merged = ds.hll_sketch.deserialize(
        _agg("hll_sketch").union(hll, bytes(other.serialize_compact()))
    )
    assert merged.tgt_type == ds.tgt_hll_type.HLL_4
    assert merged.get_estimate() == pytest.approx(1500, rel=0.05)
    merged_theta = _agg("theta_sketch").union(theta, theta)
    assert ds.compact_theta_sketch.deserialize(merged_theta).get_estimate() == est


def test_layout_is_told_by_structure() -> None:
    """Byte 12 is a roaring cookie's low byte in the portable layout and the root node's
    prefix length (at most 6) in Java's, for every non-empty value of either."""
    for values in ([0], [2**64 - 1], list(range(70000)), [k << 32 for k in range(300)]):
        bitmap = pyroaring.BitMap64(values)
        older, java = bytes(bitmap.serialize()), roaring64.to_java(bitmap)
        assert older[12] in (0x3A, 0x3B) and java[12] <= 6
        assert roaring64.layout(older) == "portable" and roaring64.layout(java) == "java"
    assert roaring64.layout(bytes(8)) == "portable" and roaring64.layout(b"\x00") == "java"
    assert roaring64.values_of(bytes(8)).size == 0 and roaring64.values_of(b"\x00").size == 0


def test_through_the_table_written_values_are_javas(tmp_path: Path) -> None:
    from lakeops import Catalog

    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    schema = pa.schema([("k", pa.int32()), ("v", pa.binary())])
    table = catalog.create_table(
        "db.t",
        schema=schema,
        primary_keys=["k"],
        options={"merge-engine": "aggregation", "fields.v.aggregate-function": "rbm64"},
    )
    java, values = _fixture("rbm64_deep")
    older = bytes(pyroaring.BitMap64([1, 2]).serialize())
    table.write(pa.table({"k": [1], "v": [java]}, schema=schema))
    table.write(pa.table({"k": [1], "v": [older]}, schema=schema))
    [row] = table.read().to_pylist()
    assert roaring64.layout(row["v"]) == "java"
    assert roaring64.values_of(row["v"]).tolist() == sorted({1, 2, *values})


def test_damaged_values_are_named_or_read_consistently() -> None:
    """Random damage to values of both layouts: a DataValidationError, or values that every
    reading agrees on (pyroaring's included) — never another exception."""
    import random

    rnd = random.Random(7)
    samples = [_fixture(n)[0] for n in ("rbm64_signed", "rbm64_node16", "rbm64_deep", "rbm64_run")]
    samples += [
        bytes(pyroaring.BitMap64(v).serialize())
        for v in ([1, 2**40], list(range(0, 70000, 7)), [k << 16 for k in range(40)])
    ]
    for _ in range(1500):
        data = bytearray(rnd.choice(samples))
        for _ in range(rnd.randint(1, 3)):
            at = rnd.randrange(len(data))
            if rnd.random() < 0.7:
                data[at] = rnd.randrange(256)
            else:
                del data[at : at + rnd.randint(1, 4)]
        try:
            values = roaring64.values_of(bytes(data)).tolist()
        except DataValidationError:
            continue
        portable = roaring64.portable_from_any(bytes(data))
        assert list(pyroaring.BitMap64.deserialize(portable)) == values
        assert roaring64.values_of(roaring64.to_java(bytes(data))).tolist() == values


def test_hll_image_the_native_reader_would_crash_on_is_named() -> None:
    """An HLL_4 slot marked as kept in the exception table, with no table: the native library
    reads past its arrays on it (a crash), so it is refused before it gets there."""
    pytest.importorskip("datasketches")
    hll = bytearray((FIXTURES / "hll_sketch_1000.bin").read_bytes())
    hll[534] = 0xFF
    with pytest.raises(DataValidationError, match="exception table"):
        _agg("hll_sketch").union(bytes(hll), bytes(hll))
    with pytest.raises(DataValidationError, match="shorter"):
        _agg("hll_sketch").union(bytes(hll[:100]), bytes(hll))
