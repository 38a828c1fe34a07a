"""What the API benchmarks share: the ``findata`` command on a home, a home with a published demo
and a Redistribution key, and a free loopback port."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FINDATA = Path(sys.executable).parent / "findata"


def run_findata(home: Path, *args: str) -> str:
    """``findata ARGS`` on ``home``; its output (exits with its error output on failure)."""
    env = {**os.environ, "FINDATA_HOME": str(home)}
    result = subprocess.run(
        [str(FINDATA), *args], env=env, capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        sys.stderr.write(result.stderr[-3000:])
        raise SystemExit(f"findata {' '.join(args)} failed")
    return result.stdout


def prepare_home(home: Path | None, prefix: str) -> tuple[Path, str]:
    """The home (the small demo built when it has no published version) and a new
    Redistribution key: its allowances (500,000 requests a day, 50,000,000 rows an hour) are
    not what the benchmarks measure."""
    home = home or Path(tempfile.mkdtemp(prefix=prefix))
    if not list((home / "published").glob("*.duckdb")):
        print(f"building the small demo in {home} (about 2 minutes) …", file=sys.stderr)
        run_findata(home, "demo", "--no-serve")
    email = f"{prefix}{os.getpid()}-{int(time.time())}@example.com"
    created = run_findata(home, "keys", "create", "--email", email, "--plan", "redistribution")
    return home, json.loads(created)["key"]


def free_port() -> int:
    """A loopback port no one listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
