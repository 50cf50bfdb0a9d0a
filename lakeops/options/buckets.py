"""Options of dynamic bucket mode and cross-partition upserts (``dynamic-bucket.*``,
``cross-partition-upsert.*``), parsed once with Paimon's defaults."""

from __future__ import annotations

from dataclasses import dataclass

from lakeops.format.schema import TableSchema
from lakeops.options import rows_layout as L

__all__ = ["DynamicBucketOptions"]


@dataclass(frozen=True)
class DynamicBucketOptions:
    """Options of dynamic bucket mode and cross-partition upserts, with Paimon's defaults."""

    target_row_num: int = L.DYNAMIC_BUCKET_TARGET_ROW_NUM.get({})
    initial_buckets: int | None = None
    max_buckets: int = L.DYNAMIC_BUCKET_MAX_BUCKETS.get({})
    assigner_parallelism: int | None = None
    #: ``cross-partition-upsert.bootstrap-parallelism`` when set (Paimon's default is 10); the
    #: writer's ``parallelism`` argument wins over it, the cores available stand in for it
    bootstrap_parallelism: int | None = None
    index_ttl_ms: int | None = None

    @classmethod
    def from_schema(cls, schema: TableSchema) -> DynamicBucketOptions:
        o = schema.options
        return cls(
            target_row_num=L.DYNAMIC_BUCKET_TARGET_ROW_NUM.get(o),
            initial_buckets=L.DYNAMIC_BUCKET_INITIAL_BUCKETS.find(o),
            max_buckets=L.DYNAMIC_BUCKET_MAX_BUCKETS.get(o),
            assigner_parallelism=L.DYNAMIC_BUCKET_ASSIGNER_PARALLELISM.find(o),
            bootstrap_parallelism=L.CROSS_PARTITION_BOOTSTRAP_PARALLELISM.find(o),
            index_ttl_ms=L.CROSS_PARTITION_INDEX_TTL.find(o, blank_is_unset=True),
        )
