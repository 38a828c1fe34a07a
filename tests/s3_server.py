"""A real S3 server on loopback (moto in server mode) with an empty bucket, for the tests of
published versions in a bucket (``FINDATA_PUBLISHED_URL``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import boto3
import pytest
from moto.server import ThreadedMotoServer

from tests.api.server import free_port

#: the standard AWS variables boto3 reads (moto takes any credentials)
AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "test-key-id",
    "AWS_SECRET_ACCESS_KEY": "test-secret",
    "AWS_DEFAULT_REGION": "us-east-1",
}


@contextmanager
def s3_server(bucket: str) -> Iterator[str]:
    """The endpoint URL of a new S3 server holding the empty ``bucket``; the AWS variables are
    set in this process meanwhile (a child process needs ``AWS_ENV`` in its environment)."""
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    url = f"http://127.0.0.1:{port}"
    try:
        with pytest.MonkeyPatch.context() as patch:
            for name, value in AWS_ENV.items():
                patch.setenv(name, value)
            boto3.client("s3", endpoint_url=url).create_bucket(Bucket=bucket)
            yield url
    finally:
        server.stop()
