"""Key-value data files: the one layer that writes and reads them, below read, write, compaction
and the changelog.

A key-value file holds a bucket's records as ``_KEY_<k>…, _SEQUENCE_NUMBER, _VALUE_KIND`` plus
the table's fields, in Parquet, ORC or Avro:

* :mod:`lakeops.kv.formats` picks each file's format and codec as Paimon does, with the
  per-format layouts (:mod:`~lakeops.kv.parquet_layout`, :mod:`~lakeops.kv.orc_layout`,
  :mod:`~lakeops.kv.avro_layout`) that give Paimon's physical types;
* :mod:`lakeops.kv.writer` writes key-sorted records as rolling files with their metadata;
* :mod:`lakeops.kv.reader` reads any file back in one record layout, through the schema it was
  written with (:mod:`lakeops.kv.evolution`).
"""
