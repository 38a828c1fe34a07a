"""Deliveries over real HTTPS on loopback, verified as a subscriber verifies them: with the
``standardwebhooks`` library's ``Webhook.verify`` and with ``svix``'s, each on the raw body."""

from __future__ import annotations

import base64
import datetime as dt
import json
import re

import pytest
import sqlalchemy as sa
import standardwebhooks
import svix.webhooks
from standardwebhooks.webhooks import WebhookVerificationError

from findata.webhooks.tables import webhook_endpoints
from tests.webhooks.receiver import Received, Receiver, WebhookRig

EVENT_ID = re.compile(r"evt_[0-9a-f]{24}")


def verify_both(request: Received, secret: str) -> dict[str, object]:
    """The body, once both libraries accepted the request for ``secret``."""
    svix.webhooks.Webhook(secret).verify(request.body, request.headers)
    return standardwebhooks.Webhook(secret).verify(request.body, request.headers)


def test_a_test_event_is_signed_and_carries_only_id_type_created(
    rig: WebhookRig, receiver: Receiver
) -> None:
    account = rig.account("max")
    url = receiver.url()
    shown = rig.endpoints.add(account.id, url)
    assert shown.secret.startswith("whsec_")
    assert len(base64.b64decode(shown.secret.removeprefix("whsec_"))) == 32

    queued = rig.endpoints.send_test(shown.endpoint.endpoint_id)
    report = rig.worker().run_once()
    assert report.outcomes == {"delivered": 1}

    (request,) = receiver.received(url.removeprefix(f"https://localhost:{receiver.port}"))
    body = verify_both(request, shown.secret)
    assert set(body) == {"id", "type", "created"}
    assert body["type"] == "webhook.test"
    assert EVENT_ID.fullmatch(body["id"]) and request.headers["webhook-id"] == body["id"]
    assert body["id"] == queued.event_id
    assert body["created"] == rig.clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")
    assert request.headers["webhook-timestamp"] == str(int(rig.clock.now().timestamp()))
    assert request.headers["content-type"] == "application/json"
    assert request.headers["user-agent"] == "findata-webhooks/1"
    assert re.fullmatch(r"v1,[A-Za-z0-9+/]+={0,2}", request.headers["webhook-signature"])

    entry = rig.endpoints.log(shown.endpoint.endpoint_id)[0]
    assert (entry.status, entry.attempt, entry.http_status, entry.event_type) == (
        "Delivered",
        1,
        200,
        "webhook.test",
    )


def test_a_wrong_secret_or_an_altered_body_is_rejected_by_both_libraries(
    rig: WebhookRig, receiver: Receiver
) -> None:
    account = rig.account("redistribution")
    url = receiver.url()
    shown = rig.endpoints.add(account.id, url)
    rig.endpoints.send_test(shown.endpoint.endpoint_id)
    rig.worker().run_once()
    (request,) = receiver.received(url.split(str(receiver.port))[1])
    other = rig.endpoints.add(rig.account("max").id, receiver.url()).secret
    altered = Received(request.path, request.headers, request.body.replace(b"test", b"tesT"))
    for secret, req in ((other, request), (shown.secret, altered)):
        with pytest.raises(WebhookVerificationError):
            standardwebhooks.Webhook(secret).verify(req.body, req.headers)
        with pytest.raises(svix.webhooks.WebhookVerificationError):
            svix.webhooks.Webhook(secret).verify(req.body, req.headers)


def test_after_a_rotation_two_signatures_for_24_hours_then_one(
    rig: WebhookRig, receiver: Receiver
) -> None:
    account = rig.account("max")
    url = receiver.url()
    path = url.split(str(receiver.port))[1]
    first = rig.endpoints.add(account.id, url)
    endpoint_id = first.endpoint.endpoint_id
    second = rig.endpoints.rotate_secret(endpoint_id)
    assert second.secret != first.secret

    rig.endpoints.send_test(endpoint_id)
    rig.worker().run_once()
    (during,) = receiver.received(path)
    assert len(during.headers["webhook-signature"].split(" ")) == 2
    # a receiver holding either secret accepts the request, with either library
    assert verify_both(during, first.secret)["type"] == "webhook.test"
    assert verify_both(during, second.secret)["type"] == "webhook.test"

    rig.clock.advance(dt.timedelta(hours=24, seconds=1))
    rig.endpoints.send_test(endpoint_id)
    rig.worker().run_once()
    after = receiver.received(path)[1]
    assert len(after.headers["webhook-signature"].split(" ")) == 1
    # the clock moved a day: check the signature itself at the receiver's notion of "now"
    signed_at = dt.datetime.fromtimestamp(int(after.headers["webhook-timestamp"]), dt.UTC)
    expected_new = standardwebhooks.Webhook(second.secret).sign(
        after.headers["webhook-id"], signed_at, after.body.decode()
    )
    expected_old = standardwebhooks.Webhook(first.secret).sign(
        after.headers["webhook-id"], signed_at, after.body.decode()
    )
    assert after.headers["webhook-signature"] == expected_new != expected_old


def test_secrets_are_stored_encrypted_never_in_clear(rig: WebhookRig, receiver: Receiver) -> None:
    account = rig.account("max")
    shown = rig.endpoints.add(account.id, receiver.url())
    rotated = rig.endpoints.rotate_secret(shown.endpoint.endpoint_id)
    with rig.engine.connect() as connection:
        dump = json.dumps(
            [dict(r._mapping) for r in connection.execute(sa.select(webhook_endpoints))],
            default=str,
        )
    for secret in (shown.secret, rotated.secret):
        assert secret not in dump
        assert secret.removeprefix("whsec_") not in dump
