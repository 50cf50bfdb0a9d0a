"""The aggregation merge engine: every non-key field folds its records with its function.

``+I``/``+U`` records aggregate, ``-U``/``-D`` retract. The result kind is ``+I``, unless
``aggregation.remove-record-on-delete`` is set: then a ``-D`` deletes the row, and Paimon's
``initRow`` re-initialises it from *every* field of the ``-D`` record (Paimon 1.4.1 and later; 1.1
to 1.4.0 copied only the NOT NULL fields). Aggregation goes on from those values, so with ``sum``
``+I 5, +I 3, -D 1, +I 2`` gives 3; a key whose last record is ``-D`` is deleted and carries the
``-D`` record's values (so NOT NULL columns stay non-null in the files). Per-merge aggregator
state is not reset by the ``-D``: ``first_value`` keeps the ``-D`` value when an add came before
it in the same merge.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lakeops.errors import DataValidationError
from lakeops.format.kv import KIND, RowKind
from lakeops.format.schema import TableSchema
from lakeops.merge import roaring64
from lakeops.merge.aggregators import Rbm64, refuse_unretractable
from lakeops.merge.config import MergeConfig, parse_merge_config
from lakeops.merge.engine import MergeEngine, is_retraction
from lakeops.merge.segments import Segments, build_rows
from lakeops.options import TableOptions

__all__ = ["AggregationEngine"]


class AggregationEngine(MergeEngine):
    """Paimon's ``merge-engine = aggregation``."""

    name = "aggregation"

    def __init__(self, options: TableOptions, schema: TableSchema) -> None:
        super().__init__(options)
        self.config: MergeConfig = parse_merge_config(schema, options)

    def _retracting_rows(self, kinds: np.ndarray) -> np.ndarray:
        """Rows that call ``retract`` (a ``-D`` resets instead with remove-record-on-delete)."""
        result: np.ndarray = kinds == RowKind.UPDATE_BEFORE
        if not self.config.remove_record_on_delete:
            result = result | (kinds == RowKind.DELETE)
        return result

    def _named(self, exc: DataValidationError) -> DataValidationError:
        """``exc`` (a stored state lakeops cannot read) naming the table as well."""
        if not self.table or str(exc).startswith("table "):
            return exc
        return DataValidationError(f"table {self.table}: {exc}")

    def restate(self, records: pa.Table) -> pa.Table:
        """``rbm64`` states in Java Paimon's layout (:func:`roaring64.to_java_array`)."""
        try:
            return self._restate(records)
        except DataValidationError as exc:
            raise self._named(exc) from exc

    def _restate(self, records: pa.Table) -> pa.Table:
        for name, agg in self.config.aggregators.items():
            if isinstance(agg, Rbm64) and name in records.column_names:
                at = records.column_names.index(name)
                column = records.column(name).combine_chunks()
                what = f"field {name!r} (aggregate function 'rbm64')"
                records = records.set_column(
                    at, records.schema.field(at), roaring64.to_java_array(column, what)
                )
        return records

    def prepare(self, records: pa.Table) -> pa.Table:
        records = self.restate(super().prepare(records))
        kinds = records.column(KIND).to_numpy()
        if self._retracting_rows(kinds).any():
            refuse_unretractable(self.config.aggregators, "field")
        return records

    def merge(self, records: pa.Table, starts: np.ndarray) -> pa.Table:
        """One row per key group, each field aggregated by its function; a stored state an
        aggregate cannot read is a :class:`DataValidationError` naming the table, the field
        and the layout it expected."""
        try:
            return self._merge(records, starts)
        except DataValidationError as exc:
            raise self._named(exc) from exc

    def _merge(self, records: pa.Table, starts: np.ndarray) -> pa.Table:
        seg = Segments(starts, records.num_rows)
        kinds = records.column(KIND).to_numpy()
        active = np.ones(records.num_rows, dtype=bool)
        if self.options.ignore_delete:
            active &= ~is_retraction(records.column(KIND)).to_numpy(zero_copy_only=False)
        result_kind = np.full(seg.count, RowKind.INSERT, dtype=np.int8)
        retract = self._retracting_rows(kinds)
        values = {}
        if self.config.remove_record_on_delete:
            deletes = (kinds == RowKind.DELETE) & active
            last_delete = seg.last_index(deletes)
            after = seg.after(last_delete)
            prior = active & ~after & ~retract & (kinds != RowKind.DELETE)
            active &= after
            result_kind[last_delete == seg.ends] = RowKind.DELETE
            for name, agg in self.config.aggregators.items():
                if name in records.column_names:
                    column = records.column(name).combine_chunks()
                    values[name] = agg.reduce_from(column, retract, active, seg, last_delete, prior)
            return build_rows(records, seg, values, result_kind)
        for name, agg in self.config.aggregators.items():
            if name in records.column_names:
                column = records.column(name).combine_chunks()
                values[name] = agg.reduce(column, retract, active, seg)
        return build_rows(records, seg, values, result_kind)
