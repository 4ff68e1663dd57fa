"""What the tests of checkpoints on s3:// share besides the ``s3`` fixture (``conftest.py``):
the environment that points a child process's fsspec at its server."""

from __future__ import annotations


def s3_env() -> dict[str, str]:
    """Environment variables that point a child process's fsspec at the ``s3`` fixture's server."""
    import fsspec

    conf = fsspec.config.conf["s3"]
    return {
        "FSSPEC_S3_ENDPOINT_URL": conf["client_kwargs"]["endpoint_url"],
        "FSSPEC_S3_KEY": conf["key"],
        "FSSPEC_S3_SECRET": conf["secret"],
        "AWS_EC2_METADATA_DISABLED": "true",
    }
