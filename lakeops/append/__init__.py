"""Append tables: Paimon tables without a primary key (logs, events, facts).

Every row written is a row of the table; nothing is merged. ``files`` writes and reads their
data files, ``write`` is the two-phase writer, ``scan`` plans reads (pruned by value
statistics), ``compact`` plans and runs Paimon's small-file compaction, and ``table`` holds
the public :class:`~lakeops.table.append.AppendTable`.
"""
