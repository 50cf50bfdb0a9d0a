"""The manifest format of a table (``manifest.format``, ``manifest.compression`` and the ORC /
Parquet codec options that win over it), read through the rows."""

from __future__ import annotations

from collections.abc import Mapping

from lakeops.format.manifest_format import ManifestFormat
from lakeops.options.rows_ignorable import ORC_OPTIONS, PARQUET_OPTIONS
from lakeops.options.rows_layout import MANIFEST_COMPRESSION, MANIFEST_FORMAT

__all__ = ["manifest_format"]


def manifest_format(options: Mapping[str, str]) -> ManifestFormat:
    """How a table with ``options`` writes its manifests; :class:`ConfigurationError` for a
    format or codec Paimon does not write (or lakeops cannot write exactly)."""
    return ManifestFormat.of(
        MANIFEST_FORMAT.get(options),
        MANIFEST_COMPRESSION.get(options),
        orc_compress=ORC_OPTIONS.find(options, key="orc.compress"),
        parquet_compression=PARQUET_OPTIONS.find(options, key="parquet.compression"),
    )
