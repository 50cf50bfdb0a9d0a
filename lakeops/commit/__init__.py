"""Committing: manifests, manifest lists and the exclusive publication of ``snapshot-N``."""
