"""Data files: the one layer that writes and reads them, below read, write, compaction and the
changelog.

A key-value file (a primary-key table's) holds a bucket's records as ``_KEY_<k>…,
_SEQUENCE_NUMBER, _VALUE_KIND`` plus the table's fields; an append table's file its fields only;
both in Parquet, ORC or Avro:

* :mod:`lakeops.kv.formats` picks each file's format and codec as Paimon does, with the
  per-format layouts (:mod:`~lakeops.kv.parquet_layout`, :mod:`~lakeops.kv.orc_layout`,
  :mod:`~lakeops.kv.avro_layout`) that give Paimon's physical types;
* :mod:`lakeops.kv.writer` writes rolling files with their metadata, in the key-value layout
  (key-sorted records) or an append table's (its fields only);
* :mod:`lakeops.kv.reader` reads any key-value file back in one record layout, through the
  schema it was written with (:mod:`lakeops.kv.evolution`); :mod:`lakeops.kv.append_reader`
  reads an append table's files as columns of its current schema.
"""
