"""lakeops.store.locations against Paimon's path rules (FileStorePathFactory, DataFilePathFactory,
RoundRobinExternalPathProvider, IndexInDataFileDirPathFactory), written out as plain cases."""

from __future__ import annotations

import re

import pytest

from lakeops.errors import ConfigurationError, UnsupportedFeatureError
from lakeops.format.index_manifest import HASH_INDEX, IndexFileMeta
from lakeops.format.paths import bucket_dir
from lakeops.store.locations import FileLocations, split_uri

EXT = {
    "data-file.external-paths": "file:///ext/one, file:/ext/two",
    "data-file.external-paths.strategy": "round-robin",
}


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("file:/a/b", ("file", "/a/b")),
        ("file:///a/b", ("file", "/a/b")),
        ("file://localhost/a/b", ("file", "/a/b")),
        ("/a/b", ("file", "/a/b")),
        ("s3://bkt/k/x", ("s3", "bkt/k/x")),
        ("HDFS://nn:8020/w/x", ("hdfs", "nn:8020/w/x")),
    ],
)
def test_split_uri(uri: str, expected: tuple[str, str]) -> None:
    assert split_uri(uri) == expected


def test_bucket_directory_with_path_directory() -> None:
    assert bucket_dir("dt=a", 3) == "dt=a/bucket-3"
    assert bucket_dir("", 0, "data") == "data/bucket-0"
    loc = FileLocations("/t", {"data-file.path-directory": "data/"})
    assert loc.bucket_dir("dt=a/h=1", 2) == "data/dt=a/h=1/bucket-2"
    assert FileLocations("/t", {"data-file.path-directory": ""}).bucket_dir("", 1) == "bucket-1"
    # Paimon resolves it against the table root as a URI: an absolute path, a scheme or '..'
    # would put Paimon's files outside the table, where lakeops would not look — refused
    for outside in ("../x", "a/../../x", "/data", "/", "file:/x", "s3://b/x", "a\\b", "a\x00"):
        with pytest.raises(ConfigurationError, match="path-directory"):
            FileLocations("/t", {"data-file.path-directory": outside})


def test_external_paths_are_followed_only_below_named_roots() -> None:
    loc = FileLocations("/t", EXT)
    assert loc.data_file("/t/bucket-0", "f.parquet", None) == "/t/bucket-0/f.parquet"
    assert loc.resolve_external("file:/ext/one/bucket-0/f.parquet") == "/ext/one/bucket-0/f.parquet"
    assert loc.resolve_external("file:///ext/two/b/f.parquet") == "/ext/two/b/f.parquet"
    for outside in (
        "file:/ext/three/f.parquet",
        "file:/ext/onex/f.parquet",  # a sibling whose name starts like a root
        "file:/ext/one/../../etc/passwd",
        "s3://ext/one/f.parquet",
        "file://otherhost/ext/one/f.parquet",
    ):
        with pytest.raises(UnsupportedFeatureError, match=r"data-file\.external-paths"):
            loc.resolve_external(outside)
    # the entry is named, and every way out is closed: '..' (even one that would come back),
    # NUL, another bucket on an object store, the root itself
    for outside in (
        "file:/ext/one/a/../b.parquet",
        "file:/ext/one/b\x00.parquet",
        "file:/ext/one",
        "file:/ext/one/",
    ):
        with pytest.raises(UnsupportedFeatureError, match=r"'data-x'.*data-file\.external-paths"):
            loc.data_file("/t/bucket-0", "data-x", outside)
    store = FileLocations("b/t", {"data-file.external-paths": "s3://b/ext/"}, "s3", False)
    assert store.resolve_external("s3://b/ext/f") == "b/ext/f"
    with pytest.raises(UnsupportedFeatureError, match="outside"):
        store.resolve_external("s3://other/ext/f")
    # a copy beside an external file stays beside it; a copy of a file outside is refused
    assert loc.sibling("file:/ext/one/bucket-0/f.parquet", "g.parquet") == (
        "file:/ext/one/bucket-0/g.parquet"
    )
    assert loc.sibling(None, "g.parquet") is None
    with pytest.raises(UnsupportedFeatureError, match="outside"):
        loc.sibling("file:/elsewhere/f.parquet", "g.parquet")
    # no roots named: nothing external is followed
    with pytest.raises(UnsupportedFeatureError, match="none"):
        FileLocations("/t", {}).resolve_external("file:/ext/one/f.parquet")


def test_external_paths_on_object_stores_use_the_tables_file_system() -> None:
    opts = {
        "data-file.external-paths": "s3a://bkt/ext",
        "data-file.external-paths.strategy": "none",
    }
    loc = FileLocations("bkt/wh/t", opts, protocol="s3", is_local=False)
    assert loc.resolve_external("s3a://bkt/ext/bucket-0/f.parquet") == "bkt/ext/bucket-0/f.parquet"
    other = FileLocations("/t", {"data-file.external-paths": "oss://b/ext"})
    with pytest.raises(UnsupportedFeatureError, match="another file system"):
        other.resolve_external("oss://b/ext/f.parquet")


def test_round_robin_cycles_through_every_root() -> None:
    loc = FileLocations("/t", EXT)
    ext = loc.external_paths("dt=a", 1)
    assert ext is not None
    uris = [loc.new_file("/t/dt=a/bucket-1", "f", ext).external_path for i in range(4)]
    assert all(u is not None and u.endswith("/dt=a/bucket-1/f") for u in uris)
    assert uris[0] != uris[1] and uris[0] == uris[2] and uris[1] == uris[3]
    assert {str(u).rsplit("/", 3)[0] for u in uris} == {"file:///ext/one", "file:/ext/two"}
    new = loc.new_file("/t/dt=a/bucket-1", "f9", ext)
    assert new.path.startswith("/ext/") and new.path.endswith("/dt=a/bucket-1/f9")


def test_specific_fs_writes_to_roots_of_that_scheme() -> None:
    opts = {
        "data-file.external-paths": "s3://b/x,file:/ext/one",
        "data-file.external-paths.strategy": "specific-fs",
        "data-file.external-paths.specific-fs": "FILE",
    }
    loc = FileLocations("/t", opts)
    assert loc.write_roots == ("file:/ext/one",)
    ext = loc.external_paths("", 0)
    assert ext is not None
    assert loc.new_file("/t/bucket-0", "f", ext).path == "/ext/one/bucket-0/f"
    opts["data-file.external-paths.specific-fs"] = "oss"
    with pytest.raises(ConfigurationError, match="specific-fs"):
        FileLocations("/t", opts).check_writable()


def test_strategy_none_writes_into_the_table() -> None:
    loc = FileLocations("/t", {**EXT, "data-file.external-paths.strategy": "none"})
    assert loc.external_paths("", 0) is None
    assert loc.new_file("/t/bucket-0", "f", None).external_path is None


@pytest.mark.parametrize("strategy", ["entropy-inject", "weight-robin"])
def test_strategies_lakeops_does_not_write_are_refused(strategy: str) -> None:
    loc = FileLocations("/t", {**EXT, "data-file.external-paths.strategy": strategy})
    with pytest.raises(UnsupportedFeatureError, match=strategy):
        loc.check_writable()
    assert loc.resolve_external("file:/ext/one/f") == "/ext/one/f"  # reads still follow


def test_file_names_use_the_table_prefixes() -> None:
    pattern = r"{}[0-9a-f-]{{36}}-0\.parquet"
    default = FileLocations("/t", {})
    assert re.fullmatch(pattern.format("data-"), default.new_name(False))
    assert re.fullmatch(pattern.format("changelog-"), default.new_name(True))
    custom = FileLocations("/t", {"data-file.prefix": "d_", "changelog-file.prefix": "c_"})
    assert re.fullmatch(pattern.format("d_"), custom.new_name(False))
    assert re.fullmatch(pattern.format("c_"), custom.new_name(True))


def test_index_files_in_index_dir_or_bucket_dir() -> None:
    meta = IndexFileMeta(HASH_INDEX, "index-u-0", 4, 1)
    assert (
        FileLocations("/t", {}).index_file("dt=a", 0, meta.file_name, None) == "/t/index/index-u-0"
    )
    loc = FileLocations(
        "/t", {"index-file-in-data-file-dir": "true", "data-file.path-directory": "d"}
    )
    assert loc.index_file("dt=a", 0, "index-u-0", None) == "/t/d/dt=a/bucket-0/index-u-0"
    ext = FileLocations("/t", {**EXT, "index-file-in-data-file-dir": "true"})
    assert ext.index_file("", 0, "i", "file:/ext/two/bucket-0/i") == "/ext/two/bucket-0/i"
