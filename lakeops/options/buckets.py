"""Options of dynamic bucket mode and cross-partition upserts (``dynamic-bucket.*``,
``cross-partition-upsert.*``), parsed once with Paimon's defaults."""

from __future__ import annotations

from dataclasses import dataclass

from lakeops.errors import ConfigurationError
from lakeops.format.schema import TableSchema
from lakeops.options.parsing import parse_duration

__all__ = ["DynamicBucketOptions"]


def _positive(options: dict[str, str], key: str) -> int | None:
    if key not in options:
        return None
    try:
        value = int(options[key])
    except ValueError:
        raise ConfigurationError(
            f"option {key!r} must be an integer, got {options[key]!r}"
        ) from None
    if value <= 0:
        raise ConfigurationError(f"option {key!r} must be positive, got {value}")
    return value


@dataclass(frozen=True)
class DynamicBucketOptions:
    """Options of dynamic bucket mode and cross-partition upserts, with Paimon's defaults."""

    target_row_num: int = 2_000_000
    initial_buckets: int | None = None
    max_buckets: int = -1
    assigner_parallelism: int | None = None
    #: ``cross-partition-upsert.bootstrap-parallelism`` when set (Paimon's default is 10); the
    #: writer's ``parallelism`` argument wins over it, the cores available stand in for it
    bootstrap_parallelism: int | None = None
    index_ttl_ms: int | None = None

    @classmethod
    def from_schema(cls, schema: TableSchema) -> DynamicBucketOptions:
        o = schema.options
        max_buckets = int(o.get("dynamic-bucket.max-buckets", "-1"))
        if max_buckets == 0 or max_buckets < -1:
            raise ConfigurationError(
                "option 'dynamic-bucket.max-buckets' must be -1 (unlimited) or positive, "
                f"got {max_buckets}"
            )
        ttl = o.get("cross-partition-upsert.index-ttl")
        return cls(
            target_row_num=_positive(o, "dynamic-bucket.target-row-num") or 2_000_000,
            initial_buckets=_positive(o, "dynamic-bucket.initial-buckets"),
            max_buckets=max_buckets,
            assigner_parallelism=_positive(o, "dynamic-bucket.assigner-parallelism"),
            bootstrap_parallelism=_positive(o, "cross-partition-upsert.bootstrap-parallelism"),
            index_ttl_ms=parse_duration(ttl, "cross-partition-upsert.index-ttl") if ttl else None,
        )
