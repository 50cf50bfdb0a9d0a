"""Read a table through its Iceberg metadata with pyiceberg (run by ``iceberg_oracle.py`` in
``.venv-iceberg``; never imported by the main venv).

Usage: ``pyiceberg_oracle.py <metadata.json> <out.parquet> [row filter [snapshot id]]``: every
row pyiceberg's scan of the metadata's current snapshot (or of the snapshot id: time travel)
returns (those the filter, in pyiceberg's expression syntax, keeps; empty: all), written as
Parquet; and ``<out.parquet>.json``: the snapshot ids,
the current one and the data file paths of its scan plan (pruned by the filter).
"""

from __future__ import annotations

import json
import sys

import pyarrow.parquet as pq
from pyiceberg.table import StaticTable


def main() -> None:
    metadata, out = sys.argv[1], sys.argv[2]
    table = StaticTable.from_metadata(metadata)
    row_filter = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] else None
    snapshot_id = int(sys.argv[4]) if len(sys.argv) > 4 else None
    kwargs = {"snapshot_id": snapshot_id} if snapshot_id is not None else {}
    scan = table.scan(row_filter=row_filter, **kwargs) if row_filter else table.scan(**kwargs)
    pq.write_table(scan.to_arrow(), out)
    info = {
        "current_snapshot_id": table.metadata.current_snapshot_id,
        "snapshot_ids": [s.snapshot_id for s in table.metadata.snapshots],
        "files": sorted(task.file.file_path for task in scan.plan_files()),
        "partition_fields": [f.name for f in table.spec().fields],
    }
    with open(out + ".json", "w") as f:
        json.dump(info, f)


if __name__ == "__main__":
    main()
