"""Provider metadata, exposed through the ``apache_airflow_provider`` entry point."""

from __future__ import annotations

from typing import Any

__all__ = ["get_provider_info"]


def get_provider_info() -> dict[str, Any]:
    """What ``airflow providers list`` shows and what Airflow registers for lakeops."""
    from lakeops import __version__

    return {
        "package-name": "lakeops",
        "name": "lakeops",
        "description": "Apache Paimon primary-key tables from Python: Spark write jobs, "
        "compaction, level-0 flushes, snapshot expiry and orphan cleanup.",
        "versions": [__version__],
        "connection-types": [
            {
                "connection-type": "lakeops",
                "hook-class-name": "lakeops.airflow.hook.LakeopsHook",
            }
        ],
        "hook-class-names": ["lakeops.airflow.hook.LakeopsHook"],
        "asset-uris": [{"schemes": ["lakeops"], "handler": "lakeops.airflow.assets.sanitize_uri"}],
        "operators": [
            {"integration-name": "lakeops", "python-modules": ["lakeops.airflow.operators"]}
        ],
        "sensors": [{"integration-name": "lakeops", "python-modules": ["lakeops.airflow.sensors"]}],
        "triggers": [
            {"integration-name": "lakeops", "python-modules": ["lakeops.airflow.triggers"]}
        ],
        "hooks": [{"integration-name": "lakeops", "python-modules": ["lakeops.airflow.hook"]}],
        "integrations": [
            {
                "integration-name": "lakeops",
                "external-doc-url": "https://paimon.apache.org/docs/master/concepts/spec/overview/",
                "tags": ["software"],
            }
        ],
        "extra-links": ["lakeops.airflow.links.LakeopsTableLink"],
    }
