"""Verifying findata's webhook deliveries (spec, "Events"; the Standard Webhooks scheme).

A delivery is a POST whose raw body is signed as ``{webhook-id}.{webhook-timestamp}.{body}``
with HMAC-SHA256 under the endpoint's secret (``whsec_`` + base64). ``webhook-signature`` holds
one or more space-separated ``v1,<base64>`` entries: two for 24 hours after the service rotated
the secret, one per secret. A receiver accepts the request when any entry matches a secret it
holds and the timestamp is within 5 minutes of its own clock.

The signature is computed by the ``standardwebhooks`` library; the timestamp check is made here
so that the clock and tolerance can be injected (the library's ``verify`` reads the wall clock
and a fixed 5 minutes itself, and lets malformed signature entries escape as ``ValueError``).
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import hmac
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from standardwebhooks.webhooks import Webhook

__all__ = ["TOLERANCE", "WebhookEvent", "WebhookVerificationError", "verify"]

TOLERANCE = dt.timedelta(minutes=5)


class WebhookVerificationError(Exception):
    """The delivery is not proven to come from findata; the message says why: a header is
    missing, the timestamp is outside the tolerance, no signature matches a secret held, or the
    signed body is not an event."""


@dataclass(frozen=True)
class WebhookEvent:
    """A verified event. ``id`` is ``evt_`` + 24 hex characters (equal to ``webhook-id``, the
    same on every retry and resend: use it to drop duplicates); ``type`` is ``data.changed`` (one
    per refresh that changed served data) or ``webhook.test`` (the dashboard's Test), or a type a
    later version of the service adds; ``created`` is UTC ``YYYY-MM-DDTHH:MM:SSZ``. The fields
    after it are those of ``data.changed`` (None otherwise): the refresh's ``run_id``;
    ``datasets``, one dict per changed dataset sorted by name, with ``dataset`` and the counts
    ``added``, ``changed``, ``removed``, ``rebuild``; ``cursor_from`` (as ``since``, returns this
    refresh's records first); ``cursor_to`` (its last record); ``changes_url``. ``raw`` is the
    whole body, including fields a later version of the service adds.

    Read the feed from your own saved cursor, not from ``cursor_from``: your cursor also covers
    refreshes whose events were late or missed (``Replica.sync()`` does).
    """

    id: str
    type: str
    created: str
    run_id: str | None = None
    datasets: list[dict[str, Any]] | None = None
    cursor_from: str | None = None
    cursor_to: str | None = None
    changes_url: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


def verify(
    body: bytes | str,
    headers: Mapping[str, str],
    secret: str | Sequence[str],
    *,
    tolerance: dt.timedelta = TOLERANCE,
    now: dt.datetime | None = None,
) -> WebhookEvent:
    """The event of a delivery whose signature matches ``secret`` (or any of several secrets,
    while you rotate yours); raises ``WebhookVerificationError`` otherwise.

    ``body`` must be the raw request body as received; header names are read in any letter
    case; ``now`` (timezone-aware, default the system clock) is the receiver's time.
    """
    secrets = [secret] if isinstance(secret, str) else list(secret)
    if not secrets:
        raise ValueError("no secret to verify with")
    if now is not None and now.utcoffset() is None:
        raise ValueError("now must be timezone-aware")
    received = {name.lower(): value for name, value in headers.items()}
    event_id = received.get("webhook-id")
    stamp = received.get("webhook-timestamp")
    signatures = received.get("webhook-signature")
    if not (event_id and stamp and signatures):
        raise WebhookVerificationError("missing webhook-id, webhook-timestamp or webhook-signature")
    signed_at = _timestamp(stamp, now or dt.datetime.now(dt.UTC), tolerance)
    try:
        text = body.decode() if isinstance(body, bytes) else body
    except UnicodeDecodeError as exc:  # the service sends UTF-8 JSON; anything else is forged
        raise WebhookVerificationError("the body is not UTF-8") from exc
    offered = _v1_signatures(signatures)
    for held in secrets:
        expected = _v1_signatures(Webhook(held).sign(event_id, signed_at, text))[0]
        # compare against every entry, constant-time, so timing tells nothing of the secret
        if any(hmac.compare_digest(expected, candidate) for candidate in offered):
            return _event(text, event_id)
    raise WebhookVerificationError("no signature matches a secret held")


def _timestamp(stamp: str, now: dt.datetime, tolerance: dt.timedelta) -> dt.datetime:
    try:
        signed_at = dt.datetime.fromtimestamp(int(stamp), dt.UTC)
    except (ValueError, OverflowError, OSError) as exc:
        raise WebhookVerificationError(f"webhook-timestamp is not Unix seconds: {stamp!r}") from exc
    # both ways: an old stamp is a replay or a long delay, a future one a forgery or bad clock
    if abs(now - signed_at) > tolerance:
        raise WebhookVerificationError(
            f"webhook-timestamp is more than {tolerance} from this clock (replayed or delayed)"
        )
    return signed_at


def _v1_signatures(header: str) -> list[bytes]:
    """The decoded ``v1`` entries of a signature header (other versions and junk ignored)."""
    found = []
    for entry in header.split():
        version, _, encoded = entry.partition(",")
        if version == "v1":
            try:
                found.append(base64.b64decode(encoded, validate=True))
            except binascii.Error:
                continue
    return found


def _event(text: str, event_id: str) -> WebhookEvent:
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise WebhookVerificationError("the signed body is not JSON") from exc
    if not isinstance(raw, dict) or not all(isinstance(raw.get(k), str) for k in ("id", "type")):
        raise WebhookVerificationError("the signed body is not an event")
    if raw["id"] != event_id:
        raise WebhookVerificationError("the event's id is not the webhook-id it was sent under")
    # unknown types and fields are kept (forward compatible): missing fields read as None
    known = {name: raw.get(name) for name in WebhookEvent.__dataclass_fields__ if name != "raw"}
    return WebhookEvent(**{**known, "created": str(raw.get("created", ""))}, raw=raw)
