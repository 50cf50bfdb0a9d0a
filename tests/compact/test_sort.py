"""Sort compaction of append tables (``compact(order_by=…)``, ``clustering.columns``) and
``compact(where=…)``, against plain models: the rows are the same multiset after every
strategy, and their order is what a straightforward per-row Python reference of the same
ordering says (Paimon's ``ZOrderByteUtils.interleaveBits`` loop, Skilling's Hilbert transform,
Java's comparisons), computed here independently of :mod:`lakeops.compact.sort`."""

from __future__ import annotations

import datetime as dt
import itertools
import math
import random
import struct
from collections import Counter
from collections.abc import Callable, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakeops import Catalog
from lakeops.compact.sort import hilbert_index, interleave_bits
from lakeops.errors import CommitConflictError, ConfigurationError, UnsupportedFeatureError
from lakeops.format.deletion_vector import DELETION_VECTORS_INDEX
from lakeops.format.manifest import FileKind
from lakeops.format.schema_change import SetOption
from lakeops.options.registry import rule_for

SCHEMA = pa.schema(
    [
        ("dt", pa.string()),
        ("i", pa.int32()),
        ("d", pa.float64()),
        ("s", pa.string()),
        ("ts", pa.timestamp("us")),
        ("dec", pa.decimal128(10, 2)),
        ("b", pa.bool_()),
        ("day", pa.date32()),
        ("bin", pa.binary()),
    ]
)
SPECIAL_FLOATS = [float("nan"), -0.0, 0.0, float("inf"), float("-inf"), None, -1.5, 2.25]
WORDS = ["", "a", "ab", "abcdefghij", "abcdefgh", "zz", "é", "日本語テキスト", None, "ab\x00"]


def _batch(seed: int, n: int = 60) -> pa.Table:
    rnd = random.Random(seed)

    def maybe(value: Any) -> Any:
        return None if rnd.random() < 0.1 else value

    return pa.table(
        {
            "dt": [rnd.choice(["x", "y"]) for _ in range(n)],
            "i": [maybe(rnd.randint(-5, 5)) for _ in range(n)],
            "d": [rnd.choice([*SPECIAL_FLOATS, rnd.uniform(-9, 9)]) for _ in range(n)],
            "s": [rnd.choice(WORDS) for _ in range(n)],
            "ts": [
                maybe(
                    dt.datetime(2024, 1, 1)
                    + dt.timedelta(microseconds=rnd.randint(-(10**9), 10**9))
                )
                for _ in range(n)
            ],
            "dec": [maybe(Decimal(rnd.randint(-99999, 99999)).scaleb(-2)) for _ in range(n)],
            "b": [maybe(rnd.random() < 0.5) for _ in range(n)],
            "day": [
                maybe(dt.date(2024, 1, 1) + dt.timedelta(days=rnd.randint(-400, 400)))
                for _ in range(n)
            ],
            "bin": [
                maybe(bytes(rnd.randrange(256) for _ in range(rnd.randint(0, 10))))
                for _ in range(n)
            ],
        },
        schema=SCHEMA,
    )


def _rows(table: pa.Table) -> list[tuple[Any, ...]]:
    return [tuple(r.values()) for r in table.to_pylist()]


def _multiset(table: pa.Table) -> Counter[str]:
    """Rows as comparable text (NaN equals NaN here)."""
    return Counter(repr(r) for r in _rows(table))


# ------------------------------------------------------------ the plain reference model
def _java_double_bits(x: float) -> int:
    """``Double.doubleToLongBits`` (NaN canonical) as a signed 64-bit int."""
    if math.isnan(x):
        return 0x7FF8000000000000
    return struct.unpack(">q", struct.pack(">d", x))[0]


def _float_key(x: float) -> int:
    """A double's order-preserving unsigned key: ``Double.compare``'s total order."""
    bits = _java_double_bits(x) & (2**64 - 1)
    return (~bits & (2**64 - 1)) if bits >> 63 else bits | (1 << 63)


def _order_key(value: Any, column: str) -> tuple[Any, ...]:
    """Paimon's comparator: nulls first, floats as ``Double.compare``."""
    if value is None:
        return (0,)
    if column == "d":
        return (1, _float_key(value))
    return (1, value)


def _eight(u: int) -> bytes:
    return (u & (2**64 - 1)).to_bytes(8, "big")


def _zbytes(value: Any, column: str, var_length: int = 8) -> bytes:
    """One value's z-order bytes, as Paimon's ZIndexer (floats IEEE-flipped correctly,
    decimals by their unscaled value)."""
    if column in ("s", "bin"):
        raw = b"" if value is None else (value.encode() if isinstance(value, str) else value)
        return raw[:var_length].ljust(var_length, b"\x00")
    if value is None:
        return bytes(8)
    if column == "d":
        return _eight(_float_key(value))
    if column == "b":
        return b"\x81" + bytes(7) if value else bytes(8)
    if column == "ts":
        micros = (value - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)
        return _eight((micros // 1000) ^ (1 << 63))
    if column == "day":
        return _eight((value - dt.date(1970, 1, 1)).days ^ (1 << 63))
    if column == "dec":
        return _eight(int(value.scaleb(2)) ^ (1 << 63))
    return _eight(value ^ (1 << 63))


def _java_interleave(columns: Sequence[bytes]) -> bytes:
    """``ZOrderByteUtils.interleaveBits``, line by line."""
    total = sum(len(c) for c in columns)
    out = bytearray(total)
    column = byte = 0
    bit = 7
    out_byte, out_bit = 0, 7
    while out_byte < total:
        out[out_byte] |= ((columns[column][byte] >> bit) & 1) << out_bit
        out_bit -= 1
        if out_bit == -1:
            out_byte, out_bit = out_byte + 1, 7
        if out_byte == total:
            break
        while True:
            column += 1
            if column == len(columns):
                column, bit = 0, bit - 1
                if bit == -1:
                    byte, bit = byte + 1, 7
            if len(columns[column]) > byte:
                break
    return bytes(out)


def _skilling(coords: list[int], bits: int) -> int:
    """The Hilbert index of one point: Skilling's AxesToTranspose, then the transposed
    coordinates' bits interleaved, most significant first."""
    x = list(coords)
    n = len(x)
    m = 1 << (bits - 1)
    q = m
    while q > 1:
        p = q - 1
        for i in range(n):
            if x[i] & q:
                x[0] ^= p
            else:
                t = (x[0] ^ x[i]) & p
                x[0] ^= t
                x[i] ^= t
        q >>= 1
    for i in range(1, n):
        x[i] ^= x[i - 1]
    t = 0
    q = m
    while q > 1:
        if x[n - 1] & q:
            t ^= q - 1
        q >>= 1
    x = [v ^ t for v in x]
    index = 0
    for j in range(bits - 1, -1, -1):
        for i in range(n):
            index = (index << 1) | ((x[i] >> j) & 1)
    return index


def _hilbert_keys(rows: list[dict[str, Any]], columns: Sequence[str]) -> list[int]:
    """Each row's Hilbert index over the columns' dense ranks (NULL lowest), stretched to a
    common grid of as many bits as the column with the most distinct values needs."""
    ranks: list[list[int]] = []
    counts = []
    for c in columns:
        values = sorted({_order_key(r[c], c) for r in rows})
        position = {v: i for i, v in enumerate(values)}
        ranks.append([position[_order_key(r[c], c)] for r in rows])
        counts.append(len(values))
    bits = min(max((max(counts) - 1).bit_length(), 1), 32)
    top = float((1 << bits) - 1)
    scaled = [
        [min(math.floor(r * (top / max(count - 1, 1))), int(top)) for r in column]
        for column, count in zip(ranks, counts, strict=True)
    ]
    return [_skilling([s[k] for s in scaled], bits) for k in range(len(rows))]


def _reference_keys(rows: list[dict[str, Any]], columns: Sequence[str], strategy: str) -> list[Any]:
    if strategy == "order":
        return [tuple(_order_key(r[c], c) for c in columns) for r in rows]
    if strategy == "zorder":
        return [_java_interleave([_zbytes(r[c], c) for c in columns]) for r in rows]
    return _hilbert_keys(rows, columns)


def _partition_rows(table: pa.Table, value: str) -> list[dict[str, Any]]:
    """The rows of partition ``dt = value`` in the order the table reads them."""
    return table.filter(pc.field("dt") == value).to_pylist()


def _table(catalog: Catalog, name: str = "db.t", **options: str) -> Any:
    table = catalog.create_table(
        name,
        schema=SCHEMA,
        partition_keys=["dt"],
        options={"target-file-size": "2 kb", **options},
    )
    for seed in range(5):
        table.write(_batch(seed))
    return table


# -------------------------------------------------------------------------- orderings
@pytest.mark.parametrize("strategy", ["order", "zorder", "hilbert"])
@pytest.mark.parametrize(
    "columns", [["d", "s"], ["i", "ts", "dec"], ["b", "day", "bin", "s"], ["s", "i"]]
)
def test_rows_unchanged_and_sorted_as_the_reference_says(
    catalog: Catalog, strategy: str, columns: list[str]
) -> None:
    table = _table(catalog)
    before = table.read()
    snapshot = table.compact(order_by=columns, strategy=strategy)  # type: ignore[arg-type]
    assert snapshot is not None and snapshot.commit_kind == "OVERWRITE"
    after = table.read()
    assert _multiset(after) == _multiset(before)
    for part in ("x", "y"):
        old, new = _partition_rows(before, part), _partition_rows(after, part)
        # a stable sort of the rows as they were read: exactly the reference's order
        keys = _reference_keys(old, columns, strategy)
        expected = [old[i] for i in sorted(range(len(old)), key=keys.__getitem__)]
        assert [repr(r) for r in new] == [repr(r) for r in expected], (part, strategy)
    # one snapshot replaced every file of both partitions, with sequence numbers from 0
    delta = table.store.delta_entries(snapshot)
    assert {e.kind for e in delta} == {FileKind.ADD, FileKind.DELETE}
    for split in table.splits():
        files = split.files
        assert files[0].min_sequence_number == 0 and all(f.file_source == 0 for f in files)
        for a, b in itertools.pairwise(files):
            assert b.min_sequence_number == a.max_sequence_number + 1


def test_many_files_and_every_parallelism_give_the_same_files(tmp_path: Path) -> None:
    """Rows enough for several output files (the first written alone until it rolls — files
    roll between writes of 65,536 rows, as every lakeops writer's — the rest at once): each
    file holds the next rows in order, whatever the parallelism."""
    results = []
    for parallelism in (1, 3):
        catalog = Catalog(str(tmp_path / f"wh{parallelism}"))
        catalog.create_database("db")
        schema = pa.schema([("x", pa.int64()), ("y", pa.int64())])
        table = catalog.create_table("db.t", schema=schema, options={"target-file-size": "40 kb"})
        rng = np.random.default_rng(7)
        for _ in range(4):
            table.write(
                pa.table({"x": rng.integers(0, 10**6, 50_000), "y": rng.integers(0, 99, 50_000)})
            )
        table.compact(order_by=["y", "x"], parallelism=parallelism)
        (split,) = table.splits()
        assert [f.row_count for f in split.files] == [65_536] * 3 + [200_000 - 3 * 65_536]
        data = table.read()
        assert data.equals(data.sort_by([("y", "ascending"), ("x", "ascending")]))
        results.append((data, [f.row_count for f in split.files]))
    assert results[0][0].equals(results[1][0]) and results[0][1] == results[1][1]


def test_interleave_matches_paimons_loop_for_any_widths() -> None:
    rnd = random.Random(3)
    for widths in [(8, 8), (8, 3, 8), (2, 5), (8,), (1,) * 10, (3, 8, 8, 8, 8, 8, 8, 8, 8, 8)]:
        planes = [
            np.array([[rnd.randrange(256) for _ in range(40)] for _ in range(w)], dtype=np.uint8)
            for w in widths
        ]
        got = interleave_bits(planes)
        for row in range(40):
            expected = _java_interleave([bytes(p[:, row]) for p in planes])
            assert bytes(got[:, row]) == expected, (widths, row)


@pytest.mark.parametrize(("dims", "side"), [(2, 256), (3, 16), (4, 8)])
def test_hilbert_visits_a_full_grid_one_step_at_a_time(dims: int, side: int) -> None:
    """On every point of a grid the curve moves to a neighbour at each step (the defining
    property of a Hilbert curve), and its positions are those of the per-point reference."""
    points = np.array(list(itertools.product(range(side), repeat=dims)), dtype=np.uint64)
    planes = hilbert_index([points[:, i] for i in range(dims)], 8)
    positions = [int.from_bytes(bytes(planes[:, k]), "big") for k in range(len(points))]
    assert sorted(positions) == sorted(set(positions))
    sample = random.Random(1).sample(range(len(points)), 200)
    assert all(positions[k] == _skilling([int(v) for v in points[k]], 8) for k in sample)
    walk = points[np.argsort(positions)].astype(np.int64)
    assert (np.abs(np.diff(walk, axis=0)).sum(axis=1) == 1).all()


def test_zorder_boxes_prune_far_more_files(catalog: Catalog) -> None:
    """Many small files of random (x, y): a box filter's splits hold every file before, far
    fewer after a zorder compaction on (x, y) (the files whose min/max statistics overlap the
    box), and the filtered read is the same. (Files roll between writes of 65,536 rows, so
    20 output files need 1.3 M rows.)"""
    schema = pa.schema([("x", pa.int64()), ("y", pa.int64())])
    table = catalog.create_table("db.p", schema=schema, options={"target-file-size": "24 kb"})
    rng = np.random.default_rng(11)
    for _ in range(60):
        n = 22_000
        table.write(pa.table({"x": rng.integers(0, 10**6, n), "y": rng.integers(0, 10**6, n)}))
    box = (
        (pc.field("x") >= 200_000)
        & (pc.field("x") < 250_000)
        & (pc.field("y") >= 700_000)
        & (pc.field("y") < 750_000)
    )

    def opened() -> int:
        return sum(len(s.files) for s in table.splits(filter=box))

    wanted = sorted(_rows(table.read(filter=box)))
    before = opened()
    table.compact(order_by=["x", "y"], strategy="zorder")
    files = sum(len(s.files) for s in table.splits())
    after = opened()
    assert before == 60 and files >= 20
    assert after * 6 <= before and after <= files // 4, (before, after, files)
    assert sorted(_rows(table.read(filter=box))) == wanted


# ------------------------------------------------------------------ deletion vectors
def test_deleted_rows_stay_deleted_and_vectors_are_retired(catalog: Catalog) -> None:
    table = _table(catalog, **{"deletion-vectors.enabled": "true"})
    table.delete(pc.field("i") == 3)
    table.delete(pc.field("s") == "zz")
    latest = table.latest_snapshot()
    assert any(
        e.file.index_type == DELETION_VECTORS_INDEX for e in table.store.index_entries(latest)
    )
    model = _multiset(table.read())
    snapshot = table.compact(order_by=["i"], strategy="order", where=pc.field("dt") == "x")
    assert snapshot is not None and snapshot.commit_kind == "OVERWRITE"
    assert _multiset(table.read()) == model
    left = {e.partition for e in table.store.index_entries(snapshot)}
    assert left and all(b"x" not in p for p in left)  # only partition y keeps its vectors
    table.compact(order_by=["i"])
    assert not table.store.index_entries(table.latest_snapshot())
    assert _multiset(table.read()) == model


# ------------------------------------------------------------------------ refusals
def _state(root: Path) -> tuple[Any, ...]:
    return tuple(sorted(str(p.relative_to(root)) for p in root.rglob("*")))


@pytest.mark.parametrize(
    ("make", "kwargs", "error", "match"),
    [
        ("pk", {"order_by": ["v"]}, UnsupportedFeatureError, "primary key"),
        ("fixed", {"order_by": ["v"]}, UnsupportedFeatureError, "bucket = 2"),
        ("tracked", {"order_by": ["v"]}, UnsupportedFeatureError, "row ids"),
        ("append", {"order_by": ["nope"]}, ConfigurationError, "not columns"),
        ("append", {"order_by": ["dt"]}, ConfigurationError, "partition columns"),
        ("append", {"order_by": ["tags"]}, UnsupportedFeatureError, "cannot be sorted"),
        ("append", {"order_by": ["v"], "strategy": "hilbert"}, ConfigurationError, "two"),
        ("append", {"order_by": ["v"], "strategy": "z"}, ConfigurationError, "sort strategy"),
        ("append", {"order_by": "v"}, ConfigurationError, "sequence"),
        ("append", {"strategy": "zorder"}, ConfigurationError, "order_by"),
        ("append", {"where": pc.field("v") > 1}, ConfigurationError, "only partition"),
        ("append", {"where": [("v", "=", 1)]}, ConfigurationError, "only partition"),
        ("append", {"where": [("nope", "=", 1)]}, ConfigurationError, "not in the table"),
        ("pk", {"where": pc.field("v") > 1}, ConfigurationError, "only partition"),
        ("clustered", {"full": True}, ConfigurationError, "clustering.columns"),
    ],
)
def test_refusals_write_nothing(
    catalog: Catalog,
    warehouse: Path,
    make: str,
    kwargs: dict[str, Any],
    error: type[Exception],
    match: str,
) -> None:
    schema = pa.schema([("dt", pa.string()), ("v", pa.int64()), ("tags", pa.list_(pa.string()))])
    options = {
        "pk": {"bucket": "2"},
        "fixed": {"bucket": "2", "bucket-key": "v"},
        "tracked": {"row-tracking.enabled": "true"},
        "append": {},
        "clustered": {"clustering.columns": "v", "clustering.strategy": "hilbert"},
    }[make]
    table = catalog.create_table(
        "db.r",
        schema=schema,
        primary_keys=["dt", "v"] if make == "pk" else (),
        partition_keys=["dt"],
        options=options,
    )
    for k in range(3):
        table.write(
            pa.table({"dt": ["a", "b"], "v": [k, k + 10], "tags": [["t"], None]}, schema=schema)
        )
    state = _state(warehouse)
    with pytest.raises(error, match=match):
        table.compact(**kwargs)
    assert _state(warehouse) == state


@pytest.mark.parametrize("change", ["append", "delete"])
def test_a_concurrent_change_fails_the_commit_and_leaves_no_file(
    catalog: Catalog, change: str
) -> None:
    """The partitions changed after they were read — rows appended, or deleted through a new
    deletion vector: nothing is published, the sorted files are deleted, and the other
    commit's change is kept."""
    table = _table(catalog, **{"deletion-vectors.enabled": "true"})
    late = _batch(99, 5)
    rows = pa.concat_tables([_batch(s) for s in range(5)])

    def meddle(progress: Any) -> None:
        if progress.buckets_done == progress.buckets:
            other = catalog.get_table("db.t")
            if change == "append":
                other.write(late)
            else:
                other.delete(pc.field("i") == 2)

    before = table.latest_snapshot()
    files_before = {p.name for p in Path(table.root).rglob("data-*")}
    with pytest.raises(CommitConflictError, match="changed the files or deletion vectors"):
        table.compact(order_by=["i"], progress=meddle)
    table = catalog.get_table("db.t")
    assert table.latest_snapshot().id == before.id + 1  # only the other commit
    live = {f.file_name for s in table.splits() for f in s.files}
    assert {p.name for p in Path(table.root).rglob("data-*")} == files_before | live
    if change == "append":
        expected = pa.concat_tables([rows, late])
    else:
        expected = rows.filter(pc.fill_null(pc.not_equal(rows.column("i"), 2), True))
    assert _multiset(table.read()) == _multiset(expected)


def test_zorder_var_length_contribution_is_honoured(catalog: Catalog) -> None:
    """``zorder.var-length-contribution`` = 3: a string gives its first 3 bytes, so columns
    of 3 and 8 bytes interleave (the shorter one drops out once its bytes end)."""
    table = _table(catalog, **{"zorder.var-length-contribution": "3"})
    table.compact(order_by=["s", "i"], strategy="zorder")
    for part in ("x", "y"):
        rows = _partition_rows(table.read(), part)
        keys = [_java_interleave([_zbytes(r["s"], "s", 3), _zbytes(r["i"], "i")]) for r in rows]
        assert keys == sorted(keys)


# --------------------------------------------------------------------- clustering
def test_clustering_columns_sort_a_full_compaction(catalog: Catalog) -> None:
    assert rule_for("clustering.columns").status == "honoured"  # type: ignore[union-attr]
    assert rule_for("clustering.strategy").status == "honoured"  # type: ignore[union-attr]
    table = _table(catalog, **{"clustering.columns": "d, s"})  # auto: zorder for 2 columns
    before = table.read()
    compacted = table.compact()  # small files packed, not sorted
    assert compacted is None or compacted.commit_kind == "COMPACT"
    snapshot = table.compact(full=True)
    assert snapshot is not None and snapshot.commit_kind == "OVERWRITE"
    after = table.read()
    assert _multiset(after) == _multiset(before)
    for part in ("x", "y"):
        keys = _reference_keys(_partition_rows(after, part), ["d", "s"], "zorder")
        assert keys == sorted(keys)
    table.alter(SetOption("clustering.strategy", "order"))
    table.compact(full=True)
    for part in ("x", "y"):
        keys = _reference_keys(_partition_rows(table.read(), part), ["d", "s"], "order")
        assert keys == sorted(keys)


def test_clustering_is_ignored_where_paimon_ignores_it(catalog: Catalog) -> None:
    schema = pa.schema([("k", pa.int64()), ("v", pa.int64())])
    table = catalog.create_table(
        "db.f", schema=schema, options={"bucket": "1", "bucket-key": "k", "clustering.columns": "v"}
    )
    for k in range(3):
        table.write(pa.table({"k": [k], "v": [-k]}, schema=schema))
    snapshot = table.compact(full=True)
    assert snapshot is not None and snapshot.commit_kind == "COMPACT"


# ------------------------------------------------------------------------ where=
DAYS = ("2024-01-01", "2024-01-02", "2024-01-03")


def _parts(primary: bool) -> list[tuple[str, str | None]]:
    """The (dt, region) partitions; a primary key's columns are never NULL."""
    return [(d, r) for d in DAYS for r in ("eu", "us", "ap" if primary else None)]


def _where_table(catalog: Catalog, primary: bool) -> Any:
    schema = pa.schema(
        [("dt", pa.date32()), ("region", pa.string()), ("k", pa.int64()), ("v", pa.int64())]
    )
    table = catalog.create_table(
        "db.w",
        schema=schema,
        primary_keys=["dt", "region", "k"] if primary else (),
        partition_keys=["dt", "region"],
        options={"bucket": "1"} if primary else {},
    )
    for round_ in range(3):
        table.write(
            pa.table(
                {
                    "dt": [dt.date.fromisoformat(d) for d, _ in _parts(primary)],
                    "region": [r for _, r in _parts(primary)],
                    "k": [round_] * len(DAYS) * 3,
                    "v": list(range(len(DAYS) * 3)),
                },
                schema=schema,
            )
        )
    return table


def _compacted_partitions(table: Any) -> set[tuple[str, str | None]]:
    snapshot = table.latest_snapshot()
    types = table.schema.types_of(table.schema.partition_keys)
    from lakeops.format import binary_row

    out = set()
    for e in table.store.delta_entries(snapshot):
        if e.kind == FileKind.DELETE:
            day, region = binary_row.deserialize(e.partition, types)
            out.add((day.isoformat(), region))
    return out


@pytest.mark.parametrize("primary", [True, False], ids=["pk", "append"])
@pytest.mark.parametrize(
    ("where", "partitions", "model"),
    [
        (pc.field("dt") >= dt.date(2024, 1, 2), None, lambda d, r: d >= "2024-01-02"),
        (
            [("region", "in", ["eu", "us"]), ("dt", "!=", dt.date(2024, 1, 2))],
            None,
            lambda d, r: r in ("eu", "us") and d != "2024-01-02",
        ),
        (pc.field("region").is_null(), None, lambda d, r: r is None),
        (
            pc.field("region") == "us",
            [{"dt": "2024-01-03"}, {"dt": "2024-01-01", "region": "eu"}],
            lambda d, r: r == "us" and d == "2024-01-03",
        ),
        (pc.field("region") == "nowhere", None, lambda d, r: False),
    ],
)
def test_where_selects_exactly_the_partitions_a_plain_model_says(
    catalog: Catalog,
    primary: bool,
    where: Any,
    partitions: Any,
    model: Callable[[str, str | None], bool],
) -> None:
    table = _where_table(catalog, primary)
    before = table.read()
    latest = table.latest_snapshot()
    snapshot = table.compact(full=True, where=where, partitions=partitions)
    expected = {(d, r) for d, r in _parts(primary) if model(d, r)}
    if not expected:
        assert snapshot is None and table.latest_snapshot() == latest
        return
    assert snapshot is not None and snapshot.commit_kind == "COMPACT"
    assert _compacted_partitions(table) == expected
    assert _multiset(table.read()) == _multiset(before)


def test_where_moves_and_compacts_only_the_selected_postponed_partitions(
    catalog: Catalog,
) -> None:
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])
    table = catalog.create_table(
        "db.pp",
        schema=schema,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "-2", "postpone.batch-write-fixed-bucket": "false"},
    )
    for day in ("a", "b"):
        table.write(
            pa.table({"dt": [day] * 3, "id": [1, 2, 3], "v": ["p", "q", "r"]}, schema=schema)
        )
    with pytest.raises(ConfigurationError, match="only partition"):
        table.compact(where=pc.field("id") == 1)
    with pytest.raises(UnsupportedFeatureError, match="primary key"):
        table.compact(order_by=["v"])
    assert [e.bucket for e in table.store.live_entries(table.latest_snapshot())] == [-2, -2]
    table.compact(where=pc.field("dt") == "a")
    buckets = {(e.partition, e.bucket) for e in table.store.live_entries(table.latest_snapshot())}
    assert sorted(b for p, b in buckets if b"b" in p) == [-2]  # b stays postponed
    assert all(b >= 0 for p, b in buckets if b"a" in p)
    assert table.read().column("dt").to_pylist() == ["a"] * 3  # postponed rows are unseen
