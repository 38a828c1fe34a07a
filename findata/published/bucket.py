"""Published versions in an S3-compatible bucket (``FINDATA_PUBLISHED_URL=s3://bucket/prefix``).

The bucket holds a published folder's layout (``findata/published/versions.py``) under its prefix:
``<label>.duckdb`` and ``parts/<stem>.parquet``. The pipeline uploads a version's missing parts,
then its file, before the control-plane transaction that makes it current
(``findata/published/publish.py``): a version file in the bucket has its parts there, and a version
row its file. Every API host fetches the version it is to serve, its file and the parts it
lacks, into its own published folder (``fetch_version``) and DuckDB reads it there, never the
bucket. A fetch is atomic: each object is downloaded to a temporary name and renamed, the
version file last, so a version file in a folder has all its parts, as when publish writes it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
from collections.abc import Iterable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

from findata.published.versions import PARTS_DIR, read_part_files
from findata.settings import Settings

#: the prefix of a download not yet renamed into place (removed by the next fetch if left)
FETCHING = ".fetching-"
#: S3's error codes for an object that is not there
_MISSING = {"404", "NoSuchKey", "NotFound"}


class PublishedBucket:
    """The bucket and prefix of ``url`` (``s3://bucket/prefix``) on the S3 server at
    ``endpoint_url`` (AWS's when None); names are relative to the prefix, as paths are to a
    published folder."""

    def __init__(self, url: str, endpoint_url: str | None = None) -> None:
        parts = urlsplit(url)
        if parts.scheme != "s3" or not parts.netloc:
            raise ValueError(f"not an s3://bucket/prefix URL: {url}")
        self.url = url
        self.bucket = parts.netloc
        prefix = parts.path.strip("/")
        self.prefix = f"{prefix}/" if prefix else ""
        import boto3  # here: boto3 takes a while to import, and only a bucket needs it

        # credentials and region from the standard AWS environment; a client is thread-safe
        self._client = boto3.client("s3", endpoint_url=endpoint_url)

    def key(self, name: str) -> str:
        """The object key of ``name`` (a version file or ``parts/…``)."""
        return self.prefix + name

    def names(self, under: str = "") -> set[str]:
        """The names of the objects under ``under`` (``parts/``, or "" for all of them)."""
        found = set()
        pages = self._client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=self.key(under)
        )
        for page in pages:
            found.update(item["Key"][len(self.prefix) :] for item in page.get("Contents", []))
        return found

    def version_names(self) -> set[str]:
        """The version files in the bucket (``<label>.duckdb``, beside ``parts/``)."""
        return {n for n in self.names() if "/" not in n and n.endswith(".duckdb")}

    def upload(self, path: Path, name: str) -> None:
        """Store the file ``path`` as ``name`` (an object appears whole or not at all)."""
        self._client.upload_file(str(path), self.bucket, self.key(name))

    def download(self, name: str, target: Path) -> None:
        """Copy object ``name`` to ``target``: downloaded under a temporary name beside it,
        then renamed. FileNotFoundError when the bucket does not hold it."""
        from botocore.exceptions import ClientError

        staging = target.with_name(f"{FETCHING}{secrets.token_hex(6)}-{target.name}")
        try:
            self._client.download_file(self.bucket, self.key(name), str(staging))
            os.replace(staging, target)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in _MISSING:
                raise FileNotFoundError(f"{self.url}: no {name}") from error
            raise
        finally:
            staging.unlink(missing_ok=True)  # nothing once renamed; a partial file otherwise

    def delete(self, names: Iterable[str]) -> None:
        """Remove the objects ``names`` (those already gone are no error)."""
        keys = [{"Key": self.key(n)} for n in sorted(set(names))]
        for start in range(0, len(keys), 1000):  # S3 deletes at most 1000 keys a request
            answer = self._client.delete_objects(
                Bucket=self.bucket, Delete={"Objects": keys[start : start + 1000], "Quiet": True}
            )
            if answer.get("Errors"):
                raise OSError(f"{self.url}: could not delete {answer['Errors']}")


def bucket_for(settings: Settings) -> PublishedBucket | None:
    """The bucket of ``published_url``, or None when versions live in the published folder
    alone."""
    if settings.published_url is None:
        return None
    return PublishedBucket(settings.published_url, settings.s3_endpoint_url)


def version_parts_in_bucket(bucket: PublishedBucket, name: str, scratch: Path) -> list[str]:
    """The part files the version ``name`` in the bucket reads (its file fetched to
    ``scratch``, a folder, and read there)."""
    copy = scratch / name
    bucket.download(name, copy)
    try:
        return read_part_files(copy)
    finally:
        copy.unlink(missing_ok=True)


def fetch_version(bucket: PublishedBucket, published: Path, file_name: str) -> Path:
    """The version ``file_name`` in ``published``, fetched from the bucket with the parts it
    reads that the folder lacks if it is not there yet; its path. FileNotFoundError when the
    bucket does not hold it (retention removed it).

    The parts come first, the version file last, each renamed into place whole: a version file
    in the folder can be opened at once. One process of the host fetches at a time (a file
    lock in the folder); one that waited finds the version there."""
    target = published / file_name
    if target.exists():
        return target
    (published / PARTS_DIR).mkdir(parents=True, exist_ok=True)
    with _fetch_lock(published):
        if target.exists():
            return target
        _remove_partial_downloads(published)
        staging = published / f"{FETCHING}{secrets.token_hex(6)}-{file_name}"
        try:
            bucket.download(file_name, staging)
            for file in read_part_files(staging):
                if not (published / file).exists():
                    bucket.download(file, published / file)
            os.replace(staging, target)
        finally:
            staging.unlink(missing_ok=True)
    return target


def prune_copy(bucket: PublishedBucket, published: Path, named: set[str]) -> list[str]:
    """Delete from ``published`` (an API host's copy) the version files that have a version
    row (``named``: the rows' file names) but are gone from the bucket (retention removed
    them), and the parts they read that no version file left reads; the version files
    deleted. A file without a row is left alone: it may be a version a pipeline sharing the
    folder is about to upload and commit. A worker still reading a deleted version reads its
    open file on, but not its deleted parts: retention removes only versions replaced long ago
    (``FINDATA_VERSION_RETENTION_HOURS``), which the workers closed when idle."""
    with _fetch_lock(published):  # no fetch of this host is between its parts and its file
        held = bucket.version_names()
        versions = sorted(published.glob("*.duckdb"))
        gone = [v for v in versions if v.name in named and v.name not in held]
        if not gone:
            return []
        unread = {f for v in gone for f in read_part_files(v)}
        for version in [v for v in versions if v not in gone]:
            unread.difference_update(read_part_files(version))
        for version in gone:
            version.unlink(missing_ok=True)
        for file in unread:
            (published / file).unlink(missing_ok=True)
    return [v.name for v in gone]


@contextlib.contextmanager
def _fetch_lock(published: Path) -> Iterator[None]:
    published.mkdir(parents=True, exist_ok=True)
    with open(published / ".fetch.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _remove_partial_downloads(published: Path) -> None:
    """Delete what a fetch that died left (the lock is held: no download of this host is
    running)."""
    for folder in (published, published / PARTS_DIR):
        for entry in folder.glob(f"{FETCHING}*"):
            entry.unlink(missing_ok=True)
