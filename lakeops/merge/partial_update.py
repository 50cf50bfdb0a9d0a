"""The partial-update merge engine, vectorised.

Without sequence groups every non-null input field overwrites (the last non-null value of each
field wins). Retractions are refused unless ``ignore-delete`` drops them or
``partial-update.remove-record-on-delete`` makes a ``-D`` delete the row (later records start
again from the key columns).

With sequence groups (``fields.<s…>.sequence-group = <f…>``), each group decides per record:
a record whose sequence fields are all null skips the group; otherwise it is *newer-or-equal* when
its sequence values are at least the running maximum of the group so far (left to right, nulls
smallest). The group's fields then take the newest such record's values (including nulls; a
retraction nulls them), while aggregated fields fold every record (``aggReversed`` for older ones,
``retract`` for retractions). ``partial-update.remove-record-on-sequence-group`` makes a winning
``-D`` of those groups delete the whole row. All of it is computed per field over whole arrays:
running maxima of dense sequence ranks, and last/first index reductions per key.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeops.errors import DataValidationError
from lakeops.format.floats import total_order
from lakeops.format.kv import KIND, RowKind
from lakeops.format.schema import TableSchema
from lakeops.merge.aggregators import refuse_unretractable
from lakeops.merge.config import MergeConfig, SequenceGroup, parse_merge_config
from lakeops.merge.engine import MergeEngine
from lakeops.merge.segments import Segments, build_rows, rows_of, take_or_null
from lakeops.options import TableOptions

__all__ = ["PartialUpdateEngine", "dense_rank"]

DELETE_ERROR = (
    "By default, Partial update can not accept delete records: the input has '-U'/'-D' rows. "
    "Choose one of: 1. set 'ignore-delete' = 'true' to ignore them; 2. set "
    "'partial-update.remove-record-on-delete' = 'true' to remove the whole row on '-D'; "
    "3. configure sequence groups ('fields.<seq>.sequence-group') to retract partial columns "
    "(and 'partial-update.remove-record-on-sequence-group' to remove the row by group)"
)


def dense_rank(records: pa.Table, columns: tuple[str, ...]) -> np.ndarray:
    """Rank of every row by ``columns`` (lexicographic, nulls smallest, floats in Java's total
    order: one NaN, the greatest; ``-0.0 < 0.0``); equal rows share one."""
    n = records.num_rows
    names = list(dict.fromkeys(columns))
    ordered = pa.table([total_order(records.column(c)) for c in names], names=names)
    order = pc.sort_indices(
        ordered, sort_keys=[(c, "ascending", "at_start") for c in columns]
    ).to_numpy()
    change = np.zeros(n, dtype=bool)
    for c in columns:
        col = ordered.column(c).take(pa.array(order)).combine_chunks()
        nulls = col.is_null().to_numpy(zero_copy_only=False)
        if n > 1:
            differ = pc.not_equal(col.slice(1), col.slice(0, n - 1)).fill_null(False)
            change[1:] |= differ.to_numpy(zero_copy_only=False) | (nulls[1:] != nulls[:-1])
    ranks = np.empty(n, dtype=np.int64)
    ranks[order] = np.cumsum(change)
    return ranks


def _nonnull(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    return ~np.asarray(column.is_null().to_numpy(zero_copy_only=False), dtype=bool)


class PartialUpdateEngine(MergeEngine):
    """Paimon's ``merge-engine = partial-update``."""

    name = "partial-update"

    def __init__(self, options: TableOptions, schema: TableSchema) -> None:
        super().__init__(options)
        self.config: MergeConfig = parse_merge_config(schema, options)
        self.key_fields = set(schema.primary_keys)
        self.grouped = {f for g in self.config.groups for f in g.sequence_fields + g.protected}

    def merge_columns(self) -> tuple[str, ...]:
        """Every group's sequence fields: they decide which record wins any field."""
        return tuple(f for g in self.config.groups for f in g.sequence_fields)

    def prepare(self, records: pa.Table) -> pa.Table:
        records = super().prepare(records)
        kinds = records.column(KIND).to_numpy()
        retract = (kinds == RowKind.UPDATE_BEFORE) | (kinds == RowKind.DELETE)
        if retract.any() and not self.config.groups and not self.config.remove_record_on_delete:
            raise DataValidationError(DELETE_ERROR)
        if retract.any() and self.config.groups:
            grouped = {n: a for n, a in self.config.aggregators.items() if n in self.grouped}
            refuse_unretractable(grouped, "sequence-group field")
        return records

    # ------------------------------------------------------------------ merge
    def merge(self, records: pa.Table, starts: np.ndarray) -> pa.Table:
        seg = Segments(starts, records.num_rows)
        kinds = records.column(KIND).to_numpy()
        retract = (kinds == RowKind.UPDATE_BEFORE) | (kinds == RowKind.DELETE)
        if self.options.ignore_delete:
            live = ~retract
        else:
            if retract.any() and not self.config.groups and not self.config.remove_record_on_delete:
                raise DataValidationError(DELETE_ERROR)
            live = np.ones(records.num_rows, dtype=bool)
        adds = live & ~retract
        if self.config.groups:
            cutoff, reset_rows = self._resets(records, seg, kinds, live)
        else:
            deletes = (
                (kinds == RowKind.DELETE) & live
                if self.config.remove_record_on_delete
                else np.zeros(records.num_rows, dtype=bool)
            )
            cutoff = seg.last_index(deletes)
            reset_rows = deletes
        active = live & seg.after(cutoff)
        # Paimon's initRow: the row restarts from every field of the last reset (-D) record, or,
        # before any reset, of a leading retraction (even an ignored one)
        leading = np.where(retract[seg.starts], seg.starts, -1)
        base = np.maximum(cutoff, leading)
        base_rows = rows_of(base, records.num_rows)
        # a reset -D or an ignored leading retraction only initialises; a live leading
        # retraction initialises and is then applied as a retraction
        init_only = base_rows & (reset_rows | ~live)
        values: dict[str, pa.Array] = {}
        for group in self.config.groups:
            values.update(self._merge_group(records, seg, group, retract, active, base, init_only))
        for f in records.column_names:
            if (
                f in values
                or f in self.key_fields
                or f in self.grouped
                or f.startswith("_")
                or f in self.options.sequence_fields
            ):
                continue
            column = records.column(f).combine_chunks()
            last = seg.last_index(adds & active & _nonnull(column))
            values[f] = take_or_null(column, np.where(last < 0, base, last))
        deleted = reset_rows[seg.ends] | ~seg.any(adds)
        result_kind = np.where(deleted, RowKind.DELETE, RowKind.INSERT).astype(np.int8)
        return build_rows(records, seg, values, result_kind)

    def _group_state(
        self,
        records: pa.Table,
        seg: Segments,
        group: SequenceGroup,
        active: np.ndarray,
        init_only: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """(contributes, newer): rows whose group is non-empty, and which of them are
        newer-or-equal than every earlier contributing row of their key. An ``init_only`` row
        (the row Paimon's ``initRow`` copied) counts with its sequence values."""
        nonempty = np.zeros(records.num_rows, dtype=bool)
        for f in group.sequence_fields:
            nonempty |= _nonnull(records.column(f))
        contributes = nonempty & (active | init_only)
        ranks = dense_rank(records, group.sequence_fields)
        newer = contributes & (ranks >= seg.running_max_before(ranks, contributes))
        return contributes, newer

    def _resets(
        self,
        records: pa.Table,
        seg: Segments,
        kinds: np.ndarray,
        live: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Per key, the last row that deleted the whole row (a winning ``-D`` of a
        remove-record-on-sequence-group group); rows after it start from the key alone."""
        cutoff = np.full(seg.count, -1, dtype=np.int64)
        resets = np.zeros(records.num_rows, dtype=bool)
        groups = [
            g
            for g in self.config.groups
            if set(g.sequence_fields) & set(self.config.remove_on_groups)
        ]
        if not groups:
            return cutoff, resets
        deletes = (kinds == RowKind.DELETE) & live
        while True:  # one pass per reset of the key that resets most; usually one or two
            after = seg.after(cutoff)
            active = live & after
            candidate = np.zeros(records.num_rows, dtype=bool)
            for g in groups:
                _, newer = self._group_state(
                    records, seg, g, active, rows_of(cutoff, records.num_rows)
                )
                candidate |= newer & deletes & after
            first = seg.first_index(candidate)
            if (first < 0).all():
                return cutoff, resets
            found = first >= 0
            cutoff[found] = first[found]
            resets[first[found]] = True

    def _merge_group(
        self,
        records: pa.Table,
        seg: Segments,
        group: SequenceGroup,
        retract: np.ndarray,
        active: np.ndarray,
        base: np.ndarray,
        init_only: np.ndarray,
    ) -> dict[str, pa.Array]:
        """The group's fields: the newest contributing record's values (a retraction clears
        the protected ones); before any such record, the values of the ``base`` row that
        initialised the row. Aggregated fields fold from the base row's value."""
        contributes, newer = self._group_state(records, seg, group, active, init_only)
        retract = retract & ~init_only
        winner = seg.last_index(newer)
        winner_retracts = (winner >= 0) & retract[np.maximum(winner, 0)]
        current = np.where(winner < 0, base, winner)
        out: dict[str, pa.Array] = {}
        for f in group.sequence_fields:
            if f in records.column_names:
                out[f] = take_or_null(records.column(f).combine_chunks(), current)
        cleared = np.where(winner_retracts, -1, current)
        # the base row's value is the initial accumulator (even for a group it leaves empty);
        # a live leading retraction is then also folded, as a retraction
        folded = contributes & ~init_only
        older = folded & ~newer
        then_retract = (base >= 0) & ~init_only[np.maximum(base, 0)]
        no_base = np.zeros(records.num_rows, dtype=bool)
        for f in group.protected:
            if f not in records.column_names:
                continue
            column = records.column(f).combine_chunks()
            agg = self.config.aggregators.get(f)
            if agg is None:
                out[f] = take_or_null(column, cleared)
                continue
            if agg.commutative and not (agg.name == "product" and (retract & folded).any()):
                start = np.where(then_retract, -1, base)
                value = agg.reduce_from(column, retract, folded, seg, start, no_base)
            else:
                value = agg.reduce_sequential(column, retract, folded, older, seg, init=base)
                out[f] = value
                continue
            if then_retract.any():
                start = take_or_null(column, np.where(then_retract, base, -1))
                combined = agg.fold_into(start, value, then_retract)
                if combined is None:  # no whole-array form: replay those keys in order
                    combined = agg.reduce_sequential(
                        column, retract, folded, older, seg, then_retract, value, base
                    )
                value = combined
            out[f] = value
        return out
