"""``findata_client.webhooks.verify`` on deliveries signed by the server's own signing code:
valid, tampered, wrong or rotated secrets, stale or future timestamps, missing headers; and on
one delivery the real worker sent over HTTPS during a rotation."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path

import pytest
import standardwebhooks

from findata.webhooks.dev_tls import LoopbackCertificates
from findata.webhooks.signing import new_signing_secret, signed_headers
from findata_client.webhooks import WebhookEvent, WebhookVerificationError, verify
from tests.databases import disposing_cached_engine
from tests.webhooks.receiver import Receiver, make_rig

NOW = dt.datetime(2026, 11, 24, 15, 30, 12, tzinfo=dt.UTC)
EVENT = {
    "id": "evt_0123456789abcdef01234567",
    "type": "data.changed",
    "created": "2026-11-24T15:30:00Z",
    "run_id": "6496ecfc-aae9-4219-bbfe-527b733bb040",
    "datasets": [{"dataset": "prices", "added": 3, "changed": 0, "removed": 0, "rebuild": 0}],
    "cursor_from": "chg_000000000999",
    "cursor_to": "chg_000000001002",
    "changes_url": "https://findata.example/v1/changes",
}
BODY = json.dumps(EVENT)

Tamper = Callable[[str, dict[str, str]], tuple[str, dict[str, str]]]


def delivery(*secrets: str, signed_at: dt.datetime = NOW, body: str = BODY) -> dict[str, str]:
    """The headers the server sends for ``body`` signed with ``secrets``."""
    return signed_headers(json.loads(body)["id"], signed_at, body, list(secrets))


def test_a_delivery_verifies_into_its_event() -> None:
    secret = new_signing_secret()
    event = verify(BODY.encode(), delivery(secret), secret, now=NOW)
    assert isinstance(event, WebhookEvent)
    assert (event.id, event.type, event.cursor_to) == (
        EVENT["id"],
        "data.changed",
        EVENT["cursor_to"],
    )
    assert event.datasets == EVENT["datasets"] and event.raw == EVENT
    # the same check as the library's own, on the real clock
    assert (
        standardwebhooks.Webhook(secret).verify(
            BODY, delivery(secret, signed_at=dt.datetime.now(dt.UTC))
        )
        == EVENT
    )


def test_header_names_in_any_case_and_a_test_event() -> None:
    secret = new_signing_secret()
    body = json.dumps(
        {"id": "evt_" + "a" * 24, "type": "webhook.test", "created": "2026-11-24T15:30:00Z"}
    )
    headers = {name.upper(): value for name, value in delivery(secret, body=body).items()}
    event = verify(body, headers, secret, now=NOW)
    assert event.type == "webhook.test" and event.run_id is None and event.datasets is None


@pytest.mark.parametrize(
    "tamper",
    [
        lambda body, headers: (body.replace('"added": 3', '"added": 4'), headers),
        lambda body, headers: (body, {**headers, "webhook-id": "evt_" + "f" * 24}),
        lambda body, headers: (
            body,
            {**headers, "webhook-timestamp": str(int(NOW.timestamp()) + 1)},
        ),
        lambda body, headers: (body, {**headers, "webhook-signature": "v1,AAAA"}),
        lambda body, headers: (
            body,
            {**headers, "webhook-signature": "v2," + headers["webhook-signature"][3:]},
        ),
        lambda body, headers: (body, {**headers, "webhook-signature": "v1,not base64!"}),
    ],
    ids=["body", "id", "timestamp", "signature", "version", "junk"],
)
def test_anything_changed_after_signing_is_refused(tamper: Tamper) -> None:
    secret = new_signing_secret()
    body, headers = tamper(BODY, delivery(secret))
    with pytest.raises(WebhookVerificationError):
        verify(body, headers, secret, now=NOW)


def test_another_secret_is_refused() -> None:
    with pytest.raises(WebhookVerificationError, match="no signature matches"):
        verify(BODY, delivery(new_signing_secret()), new_signing_secret(), now=NOW)


@pytest.mark.parametrize(
    "off", [dt.timedelta(minutes=5, seconds=1), -dt.timedelta(minutes=5, seconds=1)]
)
def test_a_timestamp_more_than_five_minutes_away_is_refused(off: dt.timedelta) -> None:
    secret = new_signing_secret()
    headers = delivery(secret, signed_at=NOW - off)
    with pytest.raises(WebhookVerificationError, match="more than 0:05:00"):
        verify(BODY, headers, secret, now=NOW)
    # inside the tolerance, both ways
    assert (
        verify(BODY, delivery(secret, signed_at=NOW - off / 2), secret, now=NOW).id == EVENT["id"]
    )


@pytest.mark.parametrize("missing", ["webhook-id", "webhook-timestamp", "webhook-signature"])
def test_a_missing_header_is_refused(missing: str) -> None:
    secret = new_signing_secret()
    headers = {k: v for k, v in delivery(secret).items() if k != missing}
    with pytest.raises(WebhookVerificationError, match="missing"):
        verify(BODY, headers, secret, now=NOW)


def test_during_a_rotation_either_secret_verifies() -> None:
    """The service signs with the old and the new secret for 24 hours after a rotation: a
    receiver holding either verifies; one holding both (rotating on its side) too."""
    old, new = new_signing_secret(), new_signing_secret()
    headers = delivery(old, new)
    assert len(headers["webhook-signature"].split()) == 2
    for held in (old, new, [old, new], [new_signing_secret(), new]):
        assert verify(BODY, headers, held, now=NOW).id == EVENT["id"]
    with pytest.raises(WebhookVerificationError):
        verify(BODY, headers, [new_signing_secret(), new_signing_secret()], now=NOW)


def test_a_signed_body_that_is_not_an_event_is_refused() -> None:
    secret = new_signing_secret()
    body = json.dumps({"id": EVENT["id"], "type": "data.changed"})
    other = signed_headers("evt_" + "b" * 24, NOW, body, [secret])
    with pytest.raises(WebhookVerificationError, match="webhook-id"):
        verify(body, other, secret, now=NOW)


def test_an_unknown_event_type_and_new_fields_are_kept() -> None:
    """Forward compatible: a type or field a later service adds is returned, not refused."""
    secret = new_signing_secret()
    future = {**EVENT, "type": "data.corrected", "reason": "late filing"}
    body = json.dumps(future)
    event = verify(body, delivery(secret, body=body), secret, now=NOW)
    assert event.type == "data.corrected" and event.raw["reason"] == "late filing"


def test_a_body_that_is_not_utf8_is_refused() -> None:
    secret = new_signing_secret()
    with pytest.raises(WebhookVerificationError, match="UTF-8"):
        verify(b"\xff" + BODY.encode(), delivery(secret), secret, now=NOW)


def test_the_tolerance_can_be_narrowed() -> None:
    secret = new_signing_secret()
    headers = delivery(secret, signed_at=NOW - dt.timedelta(seconds=31))
    assert verify(BODY, headers, secret, now=NOW).id == EVENT["id"]
    with pytest.raises(WebhookVerificationError, match="more than 0:00:30"):
        verify(BODY, headers, secret, now=NOW, tolerance=dt.timedelta(seconds=30))


def test_no_secret_or_a_naive_clock_is_a_caller_error() -> None:
    secret = new_signing_secret()
    with pytest.raises(ValueError, match="no secret"):
        verify(BODY, delivery(secret), [], now=NOW)
    with pytest.raises(ValueError, match="timezone-aware"):
        verify(BODY, delivery(secret), secret, now=NOW.replace(tzinfo=None))


def test_a_delivery_the_worker_sent_during_a_rotation(
    tmp_path: Path, test_certificates: LoopbackCertificates, receiver: Receiver
) -> None:
    """End to end: the delivery worker signs and POSTs over HTTPS; the raw request verifies."""
    with disposing_cached_engine(f"sqlite:///{tmp_path}/control.sqlite") as url:
        rig = make_rig(url, tmp_path / "home", test_certificates)
        address = receiver.url()
        old = rig.endpoints.add(rig.account("max").id, address)
        new = rig.endpoints.rotate_secret(old.endpoint.endpoint_id)
        event_id = rig.endpoints.send_test(old.endpoint.endpoint_id).event_id
        assert rig.worker().run_once().outcomes == {"delivered": 1}
    (request,) = receiver.received(address.removeprefix(f"https://localhost:{receiver.port}"))
    assert len(request.headers["webhook-signature"].split()) == 2  # old and new secret
    # the rig's clock started at the real time, so the default (system) clock applies
    for held in (old.secret, new.secret, [new_signing_secret(), old.secret]):
        event = verify(request.body, request.headers, held)
        assert (event.id, event.type) == (event_id, "webhook.test")
    with pytest.raises(WebhookVerificationError, match="no signature matches"):
        verify(request.body, request.headers, new_signing_secret())
