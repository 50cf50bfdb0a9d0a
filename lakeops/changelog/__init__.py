"""Changelog producers (``changelog-producer``) and incremental reads of what changed."""
