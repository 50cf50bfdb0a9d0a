"""Registers the lakeops plugin: the table-health pages under ``/lakeops`` on the API server and
a "lakeops tables" entry in the Airflow UI navigation (see :mod:`lakeops.airflow.plugin`)."""

from __future__ import annotations

from typing import Any

from airflow.plugins_manager import AirflowPlugin

from lakeops.airflow.plugin import app


class LakeopsPlugin(AirflowPlugin):
    """The ``lakeops`` plugin."""

    name = "lakeops"
    fastapi_apps: list[Any] = [  # noqa: RUF012 - Airflow reads these class attributes
        {"app": app, "url_prefix": "/lakeops", "name": "lakeops tables"}
    ]
    external_views: list[Any] = [  # noqa: RUF012
        {
            "name": "lakeops tables",
            "href": "/lakeops/",
            "destination": "nav",
            "category": "browse",
            "url_route": "lakeops",
        }
    ]
