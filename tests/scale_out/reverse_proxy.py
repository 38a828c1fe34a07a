"""A real reverse proxy for the multi-host tests: Debian's nginx, run in the foreground as an
unprivileged user with a configuration, logs and temporary folders of the test's own, in front
of API hosts on loopback. A request a host refuses the connection to (it is stopping) or answers
502/503 is passed to the next host; its access log names the host (or hosts) that answered."""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.api.server import free_port

#: every request's upstream address(es), in the order tried ("a:1, b:2" when it was retried)
LOG_FORMAT = '$status $request_method "$request_uri" upstream=[$upstream_addr] [$upstream_status]'

CONFIG = """
daemon off;
worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/error.log notice;
events {{ worker_connections 512; }}
http {{
    log_format upstreams '{log_format}';
    access_log {dir}/access.log upstreams;
    client_body_temp_path {dir}/client_body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    upstream api {{
{servers}
        keepalive 16;
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://api;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
            # a host that is stopping refuses new connections: the request goes to the next
            # one. Not non_idempotent: a POST already sent to a host that then failed may have
            # been applied there, so it is not sent again.
            proxy_next_upstream error timeout http_502 http_503;
            proxy_next_upstream_tries 2;
            proxy_connect_timeout 2s;
            proxy_read_timeout 60s;
        }}
    }}
}}
"""


@dataclass
class ReverseProxy:
    """nginx serving ``url`` in front of ``upstreams``; ``access_log`` as it is written."""

    url: str
    upstreams: list[str]
    directory: Path

    def access_log(self) -> list[str]:
        """The access log's lines so far."""
        path = self.directory / "access.log"
        return path.read_text().splitlines() if path.exists() else []


def nginx_binary() -> str:
    """Debian's nginx, or a failure saying what to install."""
    found = shutil.which("nginx", path=f"{os.environ.get('PATH', '')}:/usr/sbin")
    if found is None:
        pytest.fail(
            "no nginx: the multi-host test runs a real reverse proxy; install Debian's "
            "nginx-light (.ci/run does)"
        )
    return found


def _unprivileged(directory: Path) -> list[str]:
    """The command prefix that runs nginx as ``nobody`` when this process is root (nginx would
    otherwise run its master as root); the folder is handed to that user."""
    if os.geteuid() != 0:
        return []
    nobody = pwd.getpwnam("nobody")
    for path in [directory, *directory.rglob("*")]:
        os.chown(path, nobody.pw_uid, nobody.pw_gid)
    return [
        "setpriv",
        f"--reuid={nobody.pw_uid}",
        f"--regid={nobody.pw_gid}",
        "--clear-groups",
        "--",
    ]


@contextmanager
def reverse_proxy(upstreams: list[str], port: int | None = None) -> Iterator[ReverseProxy]:
    """nginx on loopback (``port``, or a free one) balancing over ``upstreams`` (``host:port``),
    until the block ends (then stopped with SIGQUIT, its graceful stop)."""
    binary = nginx_binary()
    directory = Path(tempfile.mkdtemp(prefix="findata-nginx-"))
    port = port or free_port()
    servers = "\n".join(f"        server {address} max_fails=0;" for address in upstreams)
    config = directory / "nginx.conf"
    config.write_text(
        CONFIG.format(dir=directory, port=port, servers=servers, log_format=LOG_FORMAT)
    )
    command = [binary, "-p", str(directory), "-e", str(directory / "error.log"), "-c", str(config)]
    prefix = _unprivileged(directory)
    tested = subprocess.run([*prefix, *command, "-t"], capture_output=True, text=True)
    assert tested.returncode == 0, tested.stderr
    process = subprocess.Popen([*prefix, *command], stderr=subprocess.STDOUT)
    proxy = ReverseProxy(f"http://127.0.0.1:{port}", upstreams, directory)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{proxy.url}/v1/status", timeout=5)
                break
            except httpx.TransportError:
                error_log = (directory / "error.log").read_text(errors="replace")
                assert process.poll() is None and time.monotonic() < deadline, error_log
                time.sleep(0.1)
        yield proxy
    finally:
        process.send_signal(signal.SIGQUIT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)
        shutil.rmtree(directory, ignore_errors=True)
