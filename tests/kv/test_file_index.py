"""Which indexes a table's ``file-index.*`` options ask of each data file, and where the writer
puts them (Paimon's ``FileIndexOptions`` and ``DataFileIndexWriter``): embedded up to the
in-manifest threshold, else ``<data file>.index`` in ``_EXTRA_FILES``; refusals before anything
is written."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.errors import ConfigurationError, UnsupportedFeatureError
from lakeops.format.file_index import BloomFilter, fast_hash, read_container
from lakeops.format.schema_change import SetOption
from lakeops.format.types import DataType

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string()), ("b", pa.bool_())])


def _table(tmp_path: Path, options: dict[str, str], primary_keys: list[str] | None = None):  # type: ignore[no-untyped-def]
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    pk = primary_keys or []
    return catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=pk,
        options={"bucket": "1" if pk else "-1", **options},
    )


def _batch(n: int) -> pa.Table:
    return pa.table(
        {"id": list(range(n)), "s": [f"s{i}" for i in range(n)], "b": [True] * n}, schema=SCHEMA
    )


def _files(table):  # type: ignore[no-untyped-def]
    return [e.file for e in table.store.live_entries(table.store.latest_snapshot())]


@pytest.mark.parametrize("primary_keys", [None, ["id"]])
def test_small_index_is_embedded_and_large_one_is_an_extra_file(
    tmp_path: Path, primary_keys: list[str] | None
) -> None:
    table = _table(
        tmp_path,
        {
            "file-index.bloom-filter.columns": "id, s",
            "file-index.bloom-filter.id.items": "50",
            "file-index.bloom-filter.s.items": "50",
            "file-index.in-manifest-threshold": "2kb",
        },
        primary_keys,
    )
    table.write(_batch(30))
    (f,) = _files(table)
    assert f.extra_files == () and f.embedded_file_index is not None
    indexes = read_container(f.embedded_file_index)
    assert sorted(indexes) == ["id", "s"]
    bloom = BloomFilter.from_bytes(indexes["id"]["bloom-filter"] or b"")
    ids = fast_hash(pa.array(range(30), pa.int64()), DataType.parse("BIGINT"))
    assert bloom.might_contain(ids).all()

    table.alter(SetOption("file-index.in-manifest-threshold", "10 b"))
    table.write(_batch(40))
    table.compact(full=True)
    (f,) = _files(table)
    assert f.embedded_file_index is None
    assert f.extra_files == (f.file_name + ".index",)
    bucket = Path(table.store.root) / "bucket-0"
    extra = read_container((bucket / f.extra_files[0]).read_bytes())
    assert sorted(extra) == ["id", "s"]
    bloom = BloomFilter.from_bytes(extra["id"]["bloom-filter"] or b"")
    ids = fast_hash(pa.array(range(40), pa.int64()), DataType.parse("BIGINT"))
    assert bloom.might_contain(ids).all()


def test_options_refused_before_anything_is_written(tmp_path: Path) -> None:
    cases: list[tuple[dict[str, str], type[Exception], str]] = [
        ({"file-index.bloom-filter.columns": "nope"}, ConfigurationError, "nope"),
        ({"file-index.bloom-filter.columns": "id,,s"}, ConfigurationError, "empty column"),
        ({"file-index.bloom-filter.columns": "b"}, UnsupportedFeatureError, "BOOLEAN"),
        (
            {"file-index.bloom-filter.columns": "id", "file-index.bloom-filter.s.fpp": "0.1"},
            ConfigurationError,
            "not declared",
        ),
        (
            {"file-index.bloom-filter.columns": "id", "file-index.bloom-filter.id.fpp": "2"},
            ConfigurationError,
            "probability",
        ),
        (
            {"file-index.bloom-filter.columns": "id", "file-index.bloom-filter.id.items": "x"},
            ConfigurationError,
            "positive integer",
        ),
        (
            {"file-index.bitmap.columns": "s", "file-index.bitmap.s.version": "3"},
            ConfigurationError,
            "version 1",
        ),
        (
            {"file-index.bitmap.columns": "s", "file-index.bitmap.s.index-block-size": "x"},
            ConfigurationError,
            "memory size",
        ),
    ]
    for i, (options, error, match) in enumerate(cases):
        catalog = Catalog(str(tmp_path / f"wh{i}"))
        catalog.create_database("db")
        table = catalog.create_table("db.t", schema=SCHEMA, options={"bucket": "-1"})
        table.alter([SetOption(k, v) for k, v in options.items()])
        with pytest.raises(error, match=match):
            table.write(_batch(3))
        assert table.store.latest_snapshot_id() is None
        data = Path(table.store.root)
        assert not [p for p in data.rglob("data-*")], options


def test_an_unknown_index_type_is_refused(tmp_path: Path) -> None:
    table = _table(tmp_path, {})
    table.alter(SetOption("file-index.zonemap.columns", "id"))
    with pytest.raises(UnsupportedFeatureError, match="zonemap"):
        table.write(_batch(3))
    assert table.store.latest_snapshot_id() is None


def test_every_buildable_index_type_lands_in_each_file(tmp_path: Path) -> None:
    table = _table(
        tmp_path,
        {
            "file-index.bloom-filter.columns": "s",
            "file-index.bitmap.columns": "s,b",
            "file-index.bsi.columns": "id",
            "file-index.range-bitmap.columns": "id,s",
            "file-index.range-bitmap.s.chunk-size": "64 b",
            "file-index.in-manifest-threshold": "1 mb",
        },
    )
    table.write(_batch(25))
    (f,) = _files(table)
    indexes = read_container(f.embedded_file_index or b"")
    assert {c: sorted(t) for c, t in indexes.items()} == {
        "s": ["bitmap", "bloom-filter", "range-bitmap"],
        "b": ["bitmap"],
        "id": ["bsi", "range-bitmap"],
    }
    ranged = indexes["id"]["range-bitmap"] or b""
    assert ranged[4:13] == b"\x01" + (25).to_bytes(4, "big") * 2  # version, rows, distinct
    bsi = indexes["id"]["bsi"] or b""
    assert bsi[:5] == b"\x01\x00\x00\x00\x19"  # version 1, 25 rows
    assert (indexes["s"]["bitmap"] or b"")[:1] == b"\x01"  # every Paimon reads version 1


def test_bitmap_version_option_picks_the_layout(tmp_path: Path) -> None:
    """``file-index.bitmap.<col>.version`` = 2 writes Paimon 1.x's layout; unset, version 1."""
    table = _table(
        tmp_path,
        {
            "file-index.bitmap.columns": "s,b",
            "file-index.bitmap.b.version": "2",
            "file-index.bitmap.b.index-block-size": "1 kb",
            "file-index.in-manifest-threshold": "1 mb",
        },
    )
    table.write(_batch(25))
    (f,) = _files(table)
    indexes = read_container(f.embedded_file_index or b"")
    assert (indexes["s"]["bitmap"] or b"")[:1] == b"\x01"
    assert (indexes["b"]["bitmap"] or b"")[:1] == b"\x02"


def test_map_entry_indexes_index_each_rows_value_of_the_key(tmp_path: Path) -> None:
    """``m[a]`` indexes, per row, the value of key ``a`` (null where the map lacks it or is
    null: Paimon's ``MapFileIndexMaintainer``), named ``m[a]`` in the container; a map
    column's options (``file-index.<type>.m.<option>``) apply to all its entries under each
    entry's own. Judged by a plain bitmap reader over the rows' dict lookups and the bloom
    filter's size formula."""
    import math

    from tests.format.test_file_index import _model_read_bitmap

    schema = pa.schema([("id", pa.int64()), ("m", pa.map_(pa.string(), pa.string()))])
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    table = catalog.create_table(
        "db.m",
        schema=schema,
        options={
            "bucket": "-1",
            "file-index.bitmap.columns": "m[a]",
            "file-index.bitmap.m.version": "1",
            "file-index.bloom-filter.columns": "m[a],m[b]",
            "file-index.bloom-filter.m.fpp": "0.01",
            "file-index.bloom-filter.m[a].items": "100",
            "file-index.in-manifest-threshold": "100 mb",
        },
    )
    maps = [{"a": "x", "b": "y"}, {"b": "z"}, None, {"a": "x"}, {"a": "w", "c": "v"}, {}]
    rows = [None if m is None else list(m.items()) for m in maps]
    table.write(pa.table({"id": list(range(len(maps))), "m": rows}, schema=schema))
    (f,) = _files(table)
    indexes = read_container(f.embedded_file_index or b"")
    assert {c: sorted(t) for c, t in indexes.items()} == {
        "m[a]": ["bitmap", "bloom-filter"],
        "m[b]": ["bloom-filter"],
    }
    count, got = _model_read_bitmap(indexes["m[a]"]["bitmap"] or b"", "STRING")
    expected: dict[object, set[int]] = {}
    for row, m in enumerate(maps):
        expected.setdefault((m or {}).get("a"), set()).add(row)
    assert count == len(maps) and got == expected

    def bloom_size(items: int, fpp: float) -> int:
        nb = int(-items * math.log(fpp) / (math.log(2) ** 2))
        return 4 + (nb + 8 - nb % 8) // 8

    assert len(indexes["m[a]"]["bloom-filter"] or b"") == bloom_size(100, 0.01)
    assert len(indexes["m[b]"]["bloom-filter"] or b"") == bloom_size(1_000_000, 0.01)


def test_map_entries_of_non_string_keyed_maps_or_non_maps_are_refused(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("m", pa.map_(pa.int32(), pa.string()))])
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    table = catalog.create_table("db.m", schema=schema, options={"bucket": "-1"})
    batch = pa.table({"id": [1], "m": [[(1, "x")]]}, schema=schema)
    for option, error, match in (
        ("m[1]", UnsupportedFeatureError, "string keys"),
        ("id[1]", ConfigurationError, "not a map"),
    ):
        table.alter(SetOption("file-index.bloom-filter.columns", option))
        with pytest.raises(error, match=match):
            catalog.get_table("db.m").write(batch)
    assert table.store.latest_snapshot_id() is None
