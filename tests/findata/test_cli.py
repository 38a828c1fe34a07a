"""The ``findata`` console script, run as a user runs it: a subprocess with its own FINDATA_HOME."""

from __future__ import annotations

import datetime as dt
import email
import email.policy
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from findata.accounts.logins import Logins
from findata.clock import SystemClock
from findata.control_plane.database import engine_for
from findata.local_secrets import dashboard_secret
from findata.settings import Settings, served_base_url
from tests.api.dashboard.people import CSRF, PASSWORD
from tests.api.server import free_port
from tests.findata.stopping import command_env, command_group, wait_answering

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


def verification_link(url: str, home: Path) -> str:
    """The link of the verification e-mail a new dashboard sign-up at ``url`` gets (written as
    an .eml file under ``home/mail``: no SMTP server is configured)."""
    with httpx.Client(base_url=url, timeout=30) as http:
        form = http.get("/dashboard/sign-up")
        token = CSRF.search(form.text)
        assert token is not None, form.text[:300]
        answer = http.post(
            "/dashboard/sign-up",
            data={"csrf_token": token[1], "email": "links@example.com", "password": PASSWORD},
        )
        assert answer.status_code == 303, answer.text
    deadline = time.monotonic() + 60  # sent right after the answer (by the same process)
    while not (written := _verification_mail_to("links@example.com", home)):
        assert time.monotonic() < deadline, "no verification e-mail"
        time.sleep(0.1)
    (body,) = written
    found = re.search(r"(\S+)/dashboard/verify\?token=", body.get_body().get_content())  # type: ignore[union-attr]
    assert found is not None
    return found[1]


def _verification_mail_to(address: str, home: Path) -> list[email.message.EmailMessage]:
    """The verification e-mails written under ``home/mail`` to ``address`` (a home copied from
    the session's shared one may hold other tests' mail)."""
    found = []
    for path in (home / "mail").glob("*-verify_email.eml"):
        message = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
        if message["To"] == address:
            found.append(message)
    return found  # type: ignore[return-value]


@pytest.mark.parametrize("command", ["serve", "demo"])
def test_mail_links_name_where_the_command_serves(
    published_home: Path, tmp_path: Path, command: str
) -> None:
    """Issue 42 point 5: with FINDATA_BASE_URL unset, the links in e-mail name the port the
    command serves on (the demo on a home refreshed already: it serves at once)."""
    home = tmp_path / "home"
    shutil.copytree(published_home, home, ignore=shutil.ignore_patterns("dagster", "mail"))
    port = free_port()
    env = command_env(home, 10, log_format="json")
    with (
        (tmp_path / "out.log").open("wb") as output,
        command_group([command, "--port", str(port)], env, output) as process,
    ):
        wait_answering(f"http://127.0.0.1:{port}/healthz", process)
        assert verification_link(f"http://127.0.0.1:{port}", home) == f"http://127.0.0.1:{port}"


def test_a_base_url_that_is_set_is_kept(published_home: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    port = free_port()
    env = command_env(home, 10, base_url="https://findata.example.com/")
    with (
        (tmp_path / "out.log").open("wb") as output,
        command_group(["serve", "--port", str(port)], env, output) as process,
    ):
        wait_answering(f"http://127.0.0.1:{port}/healthz", process)
        link = verification_link(f"http://127.0.0.1:{port}", home)
    assert link == "https://findata.example.com"


def test_a_wildcard_address_is_served_under_the_host_name() -> None:
    """0.0.0.0 and :: are no address to open: the links name this machine."""
    here = socket.gethostname()
    assert served_base_url("0.0.0.0", 8123) == f"http://{here}:8123"
    assert served_base_url("::", 8123) == f"http://{here}:8123"
    assert served_base_url("::1", 8123) == "http://[::1]:8123"
    assert served_base_url("api.internal", 80) == "http://api.internal:80"
