"""The position of :class:`~lakeops.airflow.triggers.LakeopsCommitTrigger` as a Paimon consumer.

Paimon records how far a streaming reader got in ``<table>/consumer/consumer-<id>``:
``{"nextSnapshot": N}``, the snapshot it reads next (``ConsumerManager``). Keeping the trigger's
position there makes it durable (it lives with the table, so a restarted triggerer, another
triggerer host or a re-created trigger continues where the last one stopped) and visible to
Paimon: snapshot expiry (lakeops' and Java Paimon's) keeps snapshot N and every later one while
the consumer lives, so the trigger can still read the headers of the commits it has not seen;
``consumer.expiration-time`` on the table bounds how long a stopped trigger holds expiry back.

The files are read and written by :mod:`lakeops.store.consumers` (the one implementation, shared
with ``read_changes(consumer_id=…)``, the Spark source and ``$consumers``); this module names
what the trigger uses.
"""

from __future__ import annotations

from lakeops.store.consumers import (
    check_consumer_id,
    consumer_path,
    read_next_snapshot,
    write_next_snapshot,
)

__all__ = ["check_consumer_id", "consumer_path", "read_next_snapshot", "write_next_snapshot"]
