"""The write path: validate input, route rows to buckets, buffer, merge, write level-0 files."""
