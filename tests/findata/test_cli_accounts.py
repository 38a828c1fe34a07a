"""``findata accounts``, ``keys``, ``db upgrade`` and ``serve`` as a user runs them (a subprocess
with its own FINDATA_HOME), on the SQLite default and on a real PostgreSQL database."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from findata.accounts.keys import is_complete_key, key_hash
from tests.api.server import findata_serve
from tests.databases import upgraded
from tests.findata.cli_runner import Cli


@pytest.fixture
def new_cli(control_plane_url: str, tmp_path: Path) -> Cli:
    """The console script on a control plane never migrated (a new home, a new database)."""
    database_url = None if control_plane_url.startswith("sqlite") else control_plane_url
    return Cli(tmp_path / "home", database_url)


@pytest.fixture
def cli(new_cli: Cli) -> Cli:
    """The console script on a control plane migrated as `findata db upgrade` does."""
    upgraded(new_cli.url)
    return new_cli


def test_a_control_plane_never_migrated_is_refused_until_db_upgrade(new_cli: Cli) -> None:
    created = ("accounts", "create", "--email", "first@example.com", "--plan", "pro")
    refused = new_cli.run(*created)
    assert refused.returncode == 1 and refused.stdout == ""
    (line,) = refused.stderr.strip().splitlines()  # one log line, no traceback
    assert "has no findata schema yet: run `findata db upgrade` first" in line, line
    assert "newest schema" in new_cli.run("db", "upgrade").stdout
    assert new_cli.json(*created)["email"] == "first@example.com"


def test_accounts_and_keys_round_trip(cli: Cli) -> None:
    assert "newest schema" in cli.run("db", "upgrade").stdout
    account = cli.json("accounts", "create", "--email", "Ops@Example.com", "--plan", "max")
    account_id = str(account["account_id"])
    assert account["email"] == "ops@example.com" and account["state"] == "enabled"

    first = cli.json("keys", "create", "--account", account_id)
    second = cli.json("keys", "create", "--account", account_id, "--label", " ci runner ")
    assert (first["label"], second["label"]) == (None, "ci runner")
    for issued in (first, second):
        assert is_complete_key(str(issued["key"]))
        assert issued["account_id"] == account_id
    assert second["revoked_key_ids"] == []  # Max adds keys

    revoked = cli.json("keys", "revoke", str(first["key"]))
    assert revoked["key_id"] == first["key_id"] and revoked["revoked_at"]
    listed = json.loads(cli.run("keys", "list", "--account", account_id).stdout)
    assert [row["prefix"] for row in listed] == [second["prefix"], first["prefix"]]
    assert [row["label"] for row in listed] == ["ci runner", None]
    assert "key" not in listed[0] and "key_hash" not in listed[0]

    assert cli.json("accounts", "disable", account_id)["state"] == "disabled"
    assert cli.json("accounts", "enable", account_id)["state"] == "enabled"
    moved = cli.json("accounts", "set-plan", account_id, "free")
    assert moved["plan"] == "free" and moved["revoked_key_ids"] == []  # one active key left

    # the database holds hashes, never keys
    engine = sa.create_engine(cli.url, poolclass=sa.NullPool)
    with engine.connect() as connection:
        hashes = set(connection.execute(sa.text("SELECT key_hash FROM api_keys")).scalars())
    engine.dispose()
    assert hashes == {key_hash(str(first["key"])), key_hash(str(second["key"]))}


def test_keys_create_by_email_and_plan_regenerates_on_free(cli: Cli) -> None:
    first = cli.json("keys", "create", "--email", "solo@example.com", "--plan", "free")
    second = cli.json("keys", "create", "--email", "solo@example.com", "--plan", "free")
    assert first["account_id"] == second["account_id"]
    assert second["revoked_key_ids"] == [first["key_id"]]


def test_refusals_exit_1_with_the_reason_and_change_nothing(cli: Cli) -> None:
    cli.json("accounts", "create", "--email", "a@example.com", "--plan", "pro")
    cases = [
        (("accounts", "create", "--email", "a@example.com", "--plan", "pro"), "exists"),
        (("accounts", "create", "--email", "not-an-email", "--plan", "pro"), "e-mail"),
        (("accounts", "create", "--email", "b@example.com", "--plan", "gold"), "unknown plan"),
        (("keys", "create", "--email", "a@example.com", "--plan", "max"), "set-plan"),
        (("keys", "create", "--account", "acct_missing"), "no account"),
        (("keys", "create"), "--account"),
        (("keys", "revoke", "fdk_" + "0" * 32), "no such key"),
        (("accounts", "disable", "acct_missing"), "no account"),
    ]
    for args, reason in cases:
        result = cli.run(*args)
        assert result.returncode == 1, args
        assert reason in result.stderr, (args, result.stderr)
        assert result.stdout == ""
    engine = sa.create_engine(cli.url, poolclass=sa.NullPool)
    with engine.connect() as connection:
        assert connection.execute(sa.text("SELECT count(*) FROM accounts")).scalar() == 1
        assert connection.execute(sa.text("SELECT count(*) FROM api_keys")).scalar() == 0
    engine.dispose()


def test_max_refuses_a_sixth_key(cli: Cli) -> None:
    account_id = str(
        cli.json("accounts", "create", "--email", "m@example.com", "--plan", "max")["account_id"]
    )
    for _ in range(5):
        cli.json("keys", "create", "--account", account_id)
    result = cli.run("keys", "create", "--account", account_id)
    assert result.returncode == 1 and "allows 5 active keys" in result.stderr


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Cli]]:
    """``findata serve --workers 2``, stopped afterwards."""
    cli = Cli(tmp_path / "home", None)
    with findata_serve(cli.env, workers=2) as (url, printed):
        yield url, cli
    assert "fdk_" not in printed[0]  # nothing the server logged shows a key


def test_serve_answers_with_several_workers(served: tuple[str, Cli]) -> None:
    url, cli = served
    key = str(cli.json("keys", "create", "--email", "w@example.com", "--plan", "pro")["key"])
    with httpx.Client(base_url=url) as client:
        assert client.get("/v1/status").json()["status"] == "no_data"
        for _ in range(6):  # several connections, answered by either worker
            response = client.get(
                "/v1/auth/usage", params={"api_key": key}, headers={"Connection": "close"}
            )
            assert response.status_code == 200
            assert response.json()["daily_limit"] == 10_000
        assert client.get("/v1/auth/usage").status_code == 401


def test_ips_block_and_unblock(cli: Cli) -> None:
    assert cli.json("ips", "block", "192.0.2.7") == {"ip": "192.0.2.7", "blocked": True}
    assert cli.json("ips", "block", "2001:db8:0::1")["ip"] == "2001:db8::1"  # canonical form
    assert cli.json("ips", "unblock", "192.0.2.7")["was_blocked"] is True
    assert cli.json("ips", "unblock", "192.0.2.7")["was_blocked"] is False
    refused = cli.run("ips", "block", "not-an-ip")
    assert refused.returncode == 1 and "not an IP address" in refused.stderr
