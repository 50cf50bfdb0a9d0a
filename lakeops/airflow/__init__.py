"""lakeops as an Airflow 3 provider: the ``lakeops`` connection and hook, thin operators over the
library and the Spark jobs, deferrable sensors, table Assets, and the tables view plugin.

Importing this package needs ``apache-airflow`` (the ``[airflow]`` extra); the core library never
imports it.
"""
