"""PySpark integration: the ``lakeops`` Python Data Source, a bucket-aware write helper, and
distributed compaction / level-0 flush / maintenance jobs (``python -m lakeops.spark.jobs``),
and a warehouse's tables by name in Spark SQL (:func:`register_tables`).

Needs ``pip install 'lakeops[spark]'`` (PySpark 4.x). Executors must be able to import lakeops:
on a ``local`` master the workers start the interpreter running lakeops unless the user chose
one (:mod:`lakeops.spark.workers`); on a cluster install it in the executors' environment or
ship the wheel (``--py-files``)."""

from lakeops.spark.api import compact, delete, merge, read, register, rescale, update, write
from lakeops.spark.registry import register_tables

__all__ = [
    "compact",
    "delete",
    "merge",
    "read",
    "register",
    "register_tables",
    "rescale",
    "update",
    "write",
]
