"""The S3 test server of the storage tests, for the commit protocol's fault tests."""

from tests.io.conftest import s3_endpoint, s3_warehouse

__all__ = ["s3_endpoint", "s3_warehouse"]
