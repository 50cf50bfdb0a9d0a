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
