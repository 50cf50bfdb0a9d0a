"""Creates the demo table ``db.orders`` in the warehouse of a lakeops connection (idempotent),
for ``orders.jsonl`` beside this file. In the compose deployment:

    docker compose --env-file infra/.env -f infra/compose.yaml exec airflow-scheduler \
        python /opt/lakeops/demo/create_table.py [conn_id]

The connection is read the way the DAGs read it (``LakeopsHook``), so the table lands in the
warehouse and under the commit lock the DAGs use.
"""

from __future__ import annotations

import sys

import pyarrow as pa

IDENTIFIER = "db.orders"
# The types Spark infers from orders.jsonl (JSON integers are BIGINT, decimals DOUBLE).
SCHEMA = pa.schema(
    [
        ("dt", pa.string()),
        ("order_id", pa.int64()),
        ("customer", pa.string()),
        ("amount", pa.float64()),
    ]
)
# Re-ingesting the file is idempotent: a key's last record wins (deduplicate engine).
OPTIONS = {"bucket": "2"}


def create(catalog):  # type: ignore[no-untyped-def]
    """Create ``db`` and ``db.orders`` in ``catalog`` unless they exist; return the table."""
    catalog.create_database("db", ignore_if_exists=True)
    return catalog.create_table(
        IDENTIFIER,
        schema=SCHEMA,
        primary_keys=["dt", "order_id"],
        partition_keys=["dt"],
        options=OPTIONS,
        ignore_if_exists=True,
    )


def main(argv: list[str]) -> int:
    from lakeops.airflow.hook import LakeopsHook

    conn_id = argv[0] if argv else "lakeops_default"
    table = create(LakeopsHook(lakeops_conn_id=conn_id).get_catalog())
    print(f"{IDENTIFIER} ready in connection {conn_id!r}: {len(table.snapshots())} snapshot(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
