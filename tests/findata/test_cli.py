"""The ``findata`` console script, run as a user runs it: a subprocess with its own FINDATA_HOME."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from findata.accounts.logins import Logins
from findata.clock import SystemClock
from findata.control_plane.database import engine_for
from findata.local_secrets import dashboard_secret
from findata.settings import Settings

FINDATA = Path(sys.executable).parent / "findata"


def _run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FINDATA_HOME": str(home)}
    return subprocess.run(
        [str(FINDATA), *args], env=env, capture_output=True, text=True, timeout=300, check=False
    )


def test_demo_no_serve_writes_landing_that_the_readers_parse(tmp_path: Path) -> None:
    home = tmp_path / "home"
    result = _run(home, "demo", "--no-serve")
    assert result.returncode == 0, result.stderr
    version = result.stdout.strip().splitlines()[-1]
    assert (home / "published" / f"{version}.duckdb").exists()
    assert "dbt" not in result.stdout and "Running with dbt" in result.stderr  # logs on stderr
    # the demo account's sign-in it prints works (signed with the home's dashboard secret)
    found = re.search(r"sign in as (\S+) with password (\S+)", result.stdout)
    assert found is not None, result.stdout
    settings = Settings(home=home)
    logins = Logins(
        engine_for(settings.control_plane_url), SystemClock(), dashboard_secret(settings)
    )
    assert logins.sign_in(found[1], found[2], "127.0.0.1").account.email == found[1]
    scenarios = json.loads((home / "demo" / "scenarios.json").read_text())
    last_session = dt.date.fromisoformat(scenarios["as_of"])
    assert (
        dt.date.today() - dt.timedelta(days=6) <= last_session < dt.date.today() + dt.timedelta(1)
    )

    contracts = _run(home, "contracts", "check")
    assert contracts.returncode == 0, contracts.stderr
    report = json.loads(contracts.stdout)
    assert Path(report["data_docs"]).is_file()
    assert report["datasets"]["prices"]["success"] and report["datasets"]["prices"]["rows"] > 0

    check = _run(home, "landing", "check")
    assert check.returncode == 0, check.stderr
    summary = json.loads(check.stdout)
    assert summary["files"]["prices"] >= 5 and summary["rows"]["prices"] > 100_000
    assert all(rows > 0 for rows in summary["rows"].values()), summary

    # a second demo leaves a non-empty landing as it is
    before = (home / "landing/security_master/security_master.csv").read_bytes()
    again = _run(home, "demo", "--no-serve", "--seed", "7")
    assert again.returncode == 0 and "not empty" in again.stdout
    assert (home / "landing/security_master/security_master.csv").read_bytes() == before


def test_landing_check_names_a_malformed_file(tmp_path: Path) -> None:
    bad = tmp_path / "landing" / "prices" / "bad.csv"
    bad.parent.mkdir(parents=True)
    bad.write_text("entity_id,ticker,date,open,high,low,close,volume\n1,AAA,2024-02-30,1,2,1,1,5\n")
    result = _run(tmp_path, "landing", "check")
    assert result.returncode != 0
    assert "bad.csv" in result.stderr and "2024-02-30" in result.stderr
