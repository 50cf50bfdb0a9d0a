"""PySpark integration: the ``lakeops`` Python Data Source, a bucket-aware write helper, and
distributed compaction / level-0 flush / maintenance jobs (``python -m lakeops.spark.jobs``).

Needs ``pip install 'lakeops[spark]'`` (PySpark 4.x). Executors must be able to import lakeops:
install it in their environment or ship the wheel (``--py-files``)."""

from lakeops.spark.api import compact, read, register, write
from lakeops.spark.registry import register_tables

__all__ = ["compact", "read", "register", "register_tables", "write"]
