"""The ``lakeops`` command line: catalog, data and maintenance commands over Paimon tables.

Install with ``pip install 'lakeops[cli]'`` (typer and rich). Only this package imports typer and
rich; the core library never does. The entry point is :data:`lakeops.cli.main.app`::

    lakeops --warehouse /data/wh tables
    lakeops create db.orders --schema orders.json
    lakeops write db.orders part-0.parquet part-1.parquet
    lakeops --json health db.orders
"""
