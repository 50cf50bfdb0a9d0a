"""Storage access: the only layer that touches fsspec."""
