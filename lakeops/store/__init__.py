"""One table's metadata and where its files live.

:mod:`lakeops.store.table_store` reads a table's metadata (schemas, snapshots, manifests and
live files; :class:`TableStore`); :mod:`lakeops.store.locations` resolves where each data,
changelog and index file lives and names new ones (:class:`~lakeops.store.locations.FileLocations`).
"""

from __future__ import annotations

from lakeops.store.table_store import (
    MAX_AVRO_METADATA_BYTES,
    MAX_JSON_METADATA_BYTES,
    TableStore,
    fold_entries,
)

__all__ = ["MAX_AVRO_METADATA_BYTES", "MAX_JSON_METADATA_BYTES", "TableStore", "fold_entries"]
