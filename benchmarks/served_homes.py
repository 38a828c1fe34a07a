"""What the API benchmarks share: the ``findata`` command on a home, a home with a published demo
and a Redistribution key, a free loopback port, and a server's process tree and its memory."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import suppress
from pathlib import Path
from typing import Any

import httpx

FINDATA = Path(sys.executable).parent / "findata"


def findata_env(home: Path, database_url: str | None = None) -> dict[str, str]:
    """The environment of ``findata`` on ``home`` (and, given, a control plane elsewhere)."""
    env = {**os.environ, "FINDATA_HOME": str(home)}
    if database_url:
        env["FINDATA_DATABASE_URL"] = database_url
    return env


def run_findata(home: Path, *args: str, database_url: str | None = None) -> str:
    """``findata ARGS`` on ``home``; its output (exits with its error output on failure)."""
    env = findata_env(home, database_url)
    result = subprocess.run(
        [str(FINDATA), *args], env=env, capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        sys.stderr.write(result.stderr[-3000:])
        raise SystemExit(f"findata {' '.join(args)} failed")
    return result.stdout


def prepare_home(
    home: Path | None, prefix: str, database_url: str | None = None
) -> tuple[Path, str]:
    """The home (the small demo built when it has no published version) and a new
    Redistribution key: its allowances (500,000 requests a day, 50,000,000 rows an hour) are
    not what the benchmarks measure. With ``database_url`` the home's published versions are
    recorded on that control plane too (once), and the key is made there."""
    home = home or Path(tempfile.mkdtemp(prefix=prefix))
    if not list((home / "published").glob("*.duckdb")):
        print(f"building the small demo in {home} (about 2 minutes) …", file=sys.stderr)
        run_findata(home, "demo", "--no-serve")
    if database_url:
        _record_versions(home, database_url)
    email = f"{prefix}{os.getpid()}-{int(time.time())}@example.com"
    created = run_findata(
        home,
        *("keys", "create", "--email", email, "--plan", "redistribution"),
        database_url=database_url,
    )
    return home, json.loads(created)["key"]


def _record_versions(home: Path, database_url: str) -> None:
    """The home's ``versions`` rows on another control plane (migrated first), unless there."""
    import sqlalchemy as sa

    from findata.control_plane.database import engine_for, upgrade
    from findata.control_plane.schema import versions
    from findata.settings import Settings

    upgrade(database_url)
    with engine_for(Settings(home=home).control_plane_url).connect() as connection:
        rows = [dict(row._mapping) for row in connection.execute(sa.select(versions))]
    with engine_for(database_url).begin() as connection:
        known = set(connection.execute(sa.select(versions.c.label)).scalars())
        fresh = [row for row in rows if row["label"] not in known]
        if fresh:
            connection.execute(versions.insert(), fresh)


def wait_until_answering(url: str, process: subprocess.Popen[Any], seconds: float = 120) -> bool:
    """Whether ``url`` answered (any status) before ``process`` exited or ``seconds`` passed."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and process.poll() is None:
        try:
            httpx.get(url, timeout=2)
            return True
        except httpx.TransportError:
            time.sleep(0.2)
    return False


def free_port() -> int:
    """A loopback port no one listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def process_tree(pid: int) -> list[int]:
    """``pid`` and every process below it (uvicorn's workers are its children)."""
    found = [pid]
    for parent in found:
        for task in Path(f"/proc/{parent}/task").glob("*"):
            with suppress(OSError):
                found += [int(c) for c in (task / "children").read_text().split()]
    return found


def rss_mib(pids: list[int]) -> float:
    """The summed resident memory of ``pids`` in MiB (processes gone count 0)."""
    total = 0
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        total += next(int(line.split()[1]) for line in status.splitlines() if line[:6] == "VmRSS:")
    return total / 1024
