"""``findata webhooks`` as an operator runs it (a subprocess with its own FINDATA_HOME and the
default SQLite control plane), delivering to the real HTTPS test receiver under the UNSAFE
loopback setting; what arrives is verified with the ``standardwebhooks`` library."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
import standardwebhooks

from tests.api.server import findata_serve
from tests.databases import upgraded
from tests.webhooks.receiver import LoopbackCertificates, Received, Receiver

FINDATA = Path(sys.executable).parent / "findata"


class Cli:
    """The console script on one FINDATA_HOME (SQLite control plane under it)."""

    def __init__(self, home: Path, certificates: LoopbackCertificates) -> None:
        self.home = home
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("FINDATA_")}
        self.env.update(
            FINDATA_HOME=str(home),
            FINDATA_WEBHOOKS_ALLOW_PRIVATE="1",  # UNSAFE: the receiver is on loopback
            FINDATA_WEBHOOKS_CA_BUNDLE=str(certificates.ca),
        )
        self.url = f"sqlite:///{home.resolve() / 'control.sqlite'}"

    def command(self, *args: str) -> list[str]:
        return [str(FINDATA), *args]

    def run(
        self, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.command(*args),
            env=env or self.env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def json(self, *args: str) -> Any:
        result = self.run(*args)
        assert result.returncode == 0, (args, result.stderr)
        return json.loads(result.stdout)

    def refused(self, *args: str, env: dict[str, str] | None = None) -> str:
        """The reason (stderr) of a refused command, which exits 1 and prints nothing."""
        result = self.run(*args, env=env)
        assert result.returncode == 1, (args, result.stdout, result.stderr)
        assert result.stdout == "", args
        return result.stderr

    def count(self, sql: str) -> int:
        engine = sa.create_engine(self.url, poolclass=sa.NullPool)
        try:
            with engine.connect() as connection:
                return int(connection.execute(sa.text(sql)).scalar_one())
        finally:
            engine.dispose()


@pytest.fixture
def cli(tmp_path: Path, test_certificates: LoopbackCertificates) -> Cli:
    """The console script on a new home, migrated as `findata db upgrade` does."""
    cli = Cli(tmp_path / "home", test_certificates)
    upgraded(cli.url)
    return cli


def path_of(receiver: Receiver, url: str) -> str:
    return url.removeprefix(f"https://localhost:{receiver.port}")


def verify(request: Received, secret: str) -> dict[str, Any]:
    """The body, once a subscriber holding ``secret`` accepted the request."""
    return standardwebhooks.Webhook(secret).verify(request.body, request.headers)


def test_an_endpoint_through_its_life_with_the_cli(cli: Cli, receiver: Receiver) -> None:
    account_id = cli.json("accounts", "create", "--email", "hooks@example.com", "--plan", "max")[
        "account_id"
    ]
    url = receiver.url()
    path = path_of(receiver, url)
    added = cli.json("webhooks", "add", "--account", account_id, url)
    endpoint_id, secret = added["endpoint_id"], added["secret"]
    assert endpoint_id.startswith("we_") and secret.startswith("whsec_")
    assert (added["account_id"], added["url"], added["state"]) == (account_id, url, "active")
    assert len(base64.b64decode(secret.removeprefix("whsec_"))) == 32

    listing = cli.run("webhooks", "list", "--account", account_id)
    assert listing.returncode == 0
    (listed,) = json.loads(listing.stdout)
    assert listed["endpoint_id"] == endpoint_id and "secret" not in listed
    assert secret.removeprefix("whsec_") not in listing.stdout

    # a test event, sent by one round of the worker, signed with the endpoint's secret
    queued = cli.json("webhooks", "test", endpoint_id)
    assert (queued["status"], queued["event_type"]) == ("Pending", "webhook.test")
    assert cli.json("webhooks", "worker", "--once")["outcomes"] == {"delivered": 1}
    (first,) = receiver.received(path)
    body = verify(first, secret)
    assert body["id"] == queued["event_id"] == first.headers["webhook-id"]
    assert body["type"] == "webhook.test"

    log = cli.json("webhooks", "log", endpoint_id)
    assert [(e["delivery_id"], e["status"], e["http_status"], e["attempt"]) for e in log] == [
        (queued["delivery_id"], "Delivered", 200, 1)
    ]

    # paused: nothing can be sent to it; resumed: active again
    paused = cli.json("webhooks", "pause", endpoint_id)
    assert paused["state"] == "paused"
    assert "paused" in cli.refused("webhooks", "test", endpoint_id)
    assert cli.json("webhooks", "resume", endpoint_id)["state"] == "active"

    # a rotation: the next delivery carries two signatures, one verifiable with each secret;
    # the receiver answers it 500, so it fails
    rotated = cli.json("webhooks", "rotate-secret", endpoint_id)
    new_secret = rotated["secret"]
    assert new_secret.startswith("whsec_") and new_secret != secret
    receiver.answer(path, 500)
    failing = cli.json("webhooks", "test", endpoint_id)
    assert cli.json("webhooks", "worker", "--once")["outcomes"] == {"failed": 1}
    second = receiver.received(path)[1]
    assert len(second.headers["webhook-signature"].split(" ")) == 2
    assert verify(second, secret)["id"] == verify(second, new_secret)["id"] == failing["event_id"]

    log = cli.json("webhooks", "log", endpoint_id)
    assert [(e["delivery_id"], e["status"], e["http_status"]) for e in log] == [
        (failing["delivery_id"], "Failed", 500),
        (queued["delivery_id"], "Delivered", 200),
    ]
    assert log[0]["next_attempt_at"] is not None

    # a resend is a new delivery of the same event, due now: the same webhook-id arrives again
    resent = cli.json("webhooks", "resend", failing["delivery_id"])
    assert resent["delivery_id"] not in (failing["delivery_id"], queued["delivery_id"])
    assert (resent["event_id"], resent["resend_of"], resent["status"]) == (
        failing["event_id"],
        failing["delivery_id"],
        "Pending",
    )
    # the failed original's retry is a minute away; only the resend is due
    assert cli.json("webhooks", "worker", "--once")["outcomes"] == {"delivered": 1}
    third = receiver.received(path)[2]
    assert third.headers["webhook-id"] == failing["event_id"]
    assert verify(third, new_secret)["id"] == verify(third, secret)["id"] == failing["event_id"]
    assert len(receiver.received(path)) == 3

    # a Delivered delivery cannot be resent
    assert "only Failed" in cli.refused("webhooks", "resend", queued["delivery_id"])

    final = cli.run("webhooks", "log", endpoint_id)
    assert [(e["delivery_id"], e["status"]) for e in json.loads(final.stdout)] == [
        (resent["delivery_id"], "Delivered"),
        (failing["delivery_id"], "Failed"),
        (queued["delivery_id"], "Delivered"),
    ]

    # neither secret is anywhere but in the two outputs that showed it once: not in list or log
    # output, not in the control-plane file's bytes (nor its WAL, if one is left)
    stored = b"".join(p.read_bytes() for p in cli.home.glob("control.sqlite*"))
    assert stored
    for shown in (secret, new_secret):
        clear = shown.removeprefix("whsec_")
        assert clear not in listing.stdout and clear not in final.stdout
        assert clear.encode() not in stored
        assert base64.b64decode(clear) not in stored

    removed = cli.json("webhooks", "remove", endpoint_id)
    assert (removed["endpoint_id"], removed["removed"]) == (endpoint_id, True)
    assert cli.json("webhooks", "list", "--account", account_id) == []
    assert cli.refused("webhooks", "log", endpoint_id)


def test_refusals_exit_1_with_the_reason_and_create_nothing(cli: Cli, receiver: Receiver) -> None:
    free = cli.json("accounts", "create", "--email", "free@example.com", "--plan", "free")
    max_id = cli.json("accounts", "create", "--email", "max@example.com", "--plan", "max")[
        "account_id"
    ]

    reason = cli.refused("webhooks", "add", "--account", free["account_id"], receiver.url())
    assert "Max" in reason and "Redistribution" in reason
    http_url = receiver.url().replace("https://", "http://")
    assert "https://" in cli.refused("webhooks", "add", "--account", max_id, http_url)
    assert "we_missing" in cli.refused("webhooks", "pause", "we_missing")

    # without the UNSAFE development setting a loopback receiver is refused
    safe = {k: v for k, v in cli.env.items() if k != "FINDATA_WEBHOOKS_ALLOW_PRIVATE"}
    reason = cli.refused("webhooks", "add", "--account", max_id, receiver.url(), env=safe)
    assert "localhost" in reason
    assert cli.count("SELECT count(*) FROM webhook_endpoints") == 0

    # Max allows 5 endpoints: six adds at once, and exactly one is refused
    adds = [
        subprocess.Popen(
            cli.command("webhooks", "add", "--account", max_id, receiver.url()),
            env=cli.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(6)
    ]
    results = [(*add.communicate(timeout=120), add.returncode) for add in adds]
    assert sorted(code for _, _, code in results) == [0, 0, 0, 0, 0, 1], results
    (refusal,) = [err for _, err, code in results if code == 1]
    assert "allows 5 webhook endpoints" in refusal
    assert cli.count("SELECT count(*) FROM webhook_endpoints") == 5
    assert cli.count(f"SELECT count(*) FROM webhook_endpoints WHERE account_id = '{max_id}'") == 5
    assert cli.json("webhooks", "list", "--account", free["account_id"]) == []


def test_serve_with_webhooks_runs_a_delivery_worker_beside_the_api(
    cli: Cli, receiver: Receiver
) -> None:
    account_id = cli.json("accounts", "create", "--email", "serve@example.com", "--plan", "max")[
        "account_id"
    ]
    url = receiver.url()
    secret = cli.json("webhooks", "add", "--account", account_id, url)["secret"]
    endpoint_id = cli.json("webhooks", "list", "--account", account_id)[0]["endpoint_id"]
    env = {**cli.env, "FINDATA_WEBHOOKS_POLL_SECONDS": "0.2"}
    with findata_serve(env, 1, "--webhooks") as (api_url, _printed):
        queued = cli.json("webhooks", "test", endpoint_id)
        (request,) = receiver.wait_for(path_of(receiver, url), 1)
        assert verify(request, secret)["id"] == queued["event_id"]
        assert httpx.get(f"{api_url}/v1/status").status_code == 200
