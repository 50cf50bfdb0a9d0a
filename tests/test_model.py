"""Property test: random operation sequences give the same table as a tiny reference model.

The model applies records one by one, in the order Paimon defines (``sequence.field`` with nulls
first, then input order), keeping the last record of each key and dropping keys whose last
record is a retraction. lakeops must agree after every commit, however its buffers flush.
"""

from __future__ import annotations

import itertools
import tempfile

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakeops import Catalog

SCHEMA = pa.schema(
    [
        ("p", pa.string()),
        ("k", pa.int32()),
        ("v", pa.int64()),
        ("ts", pa.int64()),
        ("op", pa.string()),
    ]
)
KINDS = ["+I", "+U", "-U", "-D"]

record = st.tuples(
    st.sampled_from(["x", "y"]),
    st.integers(0, 12),
    st.integers(-5, 5),
    st.one_of(st.none(), st.integers(0, 4)),
    st.sampled_from([*KINDS, "+I", "+I"]),
)
commits = st.lists(st.lists(record, min_size=0, max_size=25), min_size=1, max_size=5)


class Model:
    """Per-record reference implementation of deduplicate with sequence.field.

    A retraction is forgotten once compaction writes it to the highest level (Paimon drops
    deletes there, as lakeops does), and the writer compacts when its runs pile up. So a record
    that arrives after a retraction of its key but sorts below it (an older ``sequence.field``)
    is kept or hidden depending on when compaction ran: such keys are *undetermined* and
    left out of the comparison (every other key must match exactly).
    """

    def __init__(self, use_sequence_field: bool, ignore_delete: bool) -> None:
        self.use_seq = use_sequence_field
        self.ignore_delete = ignore_delete
        self.best: dict[tuple[str, int], tuple[tuple[int, int, int], tuple]] = {}
        self.counter = itertools.count()
        self.undetermined: set[tuple[str, int]] = set()

    def apply(self, rec: tuple) -> None:
        p, k, _v, ts, op = rec
        if self.ignore_delete and op in ("-U", "-D"):
            return
        order_ts = (0, 0) if not self.use_seq else ((0, 0) if ts is None else (1, ts))
        rank = (*order_ts, next(self.counter))
        key = (p, k)
        if key not in self.best or rank > self.best[key][0]:
            self.best[key] = (rank, rec)  # beats every record of the key, compacted or not
            self.undetermined.discard(key)
        elif self.best[key][1][4] in ("-U", "-D"):
            self.undetermined.add(key)

    def rows(self) -> list[tuple]:
        return sorted(
            r
            for key, (_, r) in self.best.items()
            if r[4] in ("+I", "+U") and key not in self.undetermined
        )

    def determined(self, rows: list[tuple]) -> list[tuple]:
        """``rows`` without the undetermined keys."""
        return [r for r in rows if (r[0], r[1]) not in self.undetermined]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    commits=commits,
    use_seq=st.booleans(),
    ignore_delete=st.booleans(),
    tiny_buffer=st.booleans(),
    buckets=st.sampled_from([1, 3]),
)
def test_random_operations_match_model(
    commits, use_seq, ignore_delete, tiny_buffer, buckets
) -> None:
    options = {"bucket": str(buckets), "rowkind.field": "op"}
    if use_seq:
        options["sequence.field"] = "ts"
    if ignore_delete:
        options["ignore-delete"] = "true"
    if tiny_buffer:
        options["write-buffer-size"] = "300 b"
    with tempfile.TemporaryDirectory() as wh:
        catalog = Catalog(wh)
        catalog.create_database("db")
        table = catalog.create_table(
            "db.t", schema=SCHEMA, primary_keys=["p", "k"], partition_keys=["p"], options=options
        )
        model = Model(use_seq, ignore_delete)
        for batch in commits:
            data = pa.Table.from_pylist(
                [dict(zip(SCHEMA.names, r, strict=True)) for r in batch], schema=SCHEMA
            )
            writer = table.new_write()
            # split the commit into several write() calls to exercise buffer appends
            for chunk in (data.slice(0, 7), data.slice(7)):
                writer.write(chunk)
            table.commit(writer.prepare_commit())
            for r in batch:
                model.apply(r)
            got = sorted(tuple(r.values()) for r in table.read().to_pylist())
            assert model.determined(got) == model.rows()
