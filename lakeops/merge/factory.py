"""The merge engine a table's ``merge-engine`` option names (the one place that knows every
engine)."""

from __future__ import annotations

from lakeops.errors import ConfigurationError
from lakeops.format.schema import TableSchema
from lakeops.merge.aggregation import AggregationEngine
from lakeops.merge.engine import DeduplicateEngine, FirstRowEngine, MergeEngine
from lakeops.merge.partial_update import PartialUpdateEngine
from lakeops.options import TableOptions

__all__ = ["create_merge_engine"]


def create_merge_engine(options: TableOptions, schema: TableSchema) -> MergeEngine:
    """The engine named by ``merge-engine``, with every engine option validated."""
    options.require_supported()
    if options.merge_engine == "first-row":
        if options.sequence_fields:
            raise ConfigurationError(
                "option 'sequence.field' cannot be used with merge-engine 'first-row' (it keeps "
                "the first record in input order)"
            )
        return FirstRowEngine(options)
    if options.merge_engine == "aggregation":
        return AggregationEngine(options, schema)
    if options.merge_engine == "partial-update":
        return PartialUpdateEngine(options, schema)
    return DeduplicateEngine(options)
