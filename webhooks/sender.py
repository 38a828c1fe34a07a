"""One signed POST to a checked address (spec: "Delivery and retries" point 1).

The request goes to an address that ``url_safety.check_url`` approved, never to a fresh DNS
answer; TLS still verifies the certificate against the hostname (SNI) and ``Host`` names it.
"""

from __future__ import annotations

import ssl
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import certifi
import httpx

from findata.webhooks.url_safety import CheckedUrl

ANSWER_WITHIN_SECONDS = 10.0


@dataclass(frozen=True)
class SendResult:
    """What one attempt got: an HTTP status, or the reason there was none."""

    http_status: int | None
    error: str | None = None

    @property
    def delivered(self) -> bool:
        """A 2xx answer within the time allowed."""
        return self.error is None and self.http_status is not None and 200 <= self.http_status < 300

    @property
    def gone(self) -> bool:
        """The endpoint answered 410: it asks to be turned off."""
        return self.http_status == 410


def post_signed(
    checked: CheckedUrl,
    headers: dict[str, str],
    body: bytes,
    *,
    ca_bundle: Path | None = None,
    timeout: float = ANSWER_WITHIN_SECONDS,
) -> SendResult:
    """POST ``body`` to the first approved address that accepts a connection."""
    started = time.monotonic()
    host_header = checked.hostname if checked.port == 443 else f"{checked.hostname}:{checked.port}"
    last_error = "no address to connect to"
    with httpx.Client(
        verify=_tls_context(ca_bundle),
        follow_redirects=False,  # a redirect is a failed delivery, never followed
        timeout=httpx.Timeout(timeout),
        trust_env=False,  # no proxy from the environment: the connection goes where checked
    ) as client:
        for address in checked.addresses:
            remaining = timeout - (time.monotonic() - started)
            if remaining <= 0:
                return SendResult(None, f"no answer within {timeout:g} seconds")
            request = client.build_request(
                "POST",
                _address_url(address, checked),
                headers={**headers, "host": host_header},
                content=body,
                timeout=remaining,
                extensions={"sni_hostname": checked.hostname},
            )
            try:
                response = client.send(request, stream=True)  # the answer's body is not read
                response.close()
            except httpx.ConnectError as error:
                last_error = _reason("connection failed", error)
                continue
            except httpx.TimeoutException:
                return SendResult(None, f"no answer within {timeout:g} seconds")
            except httpx.HTTPError as error:
                return SendResult(None, _reason("request failed", error))
            if time.monotonic() - started > timeout:
                return SendResult(response.status_code, f"answered after {timeout:g} seconds")
            return SendResult(response.status_code)
    return SendResult(None, last_error)


def _address_url(address: object, checked: CheckedUrl) -> str:
    host = f"[{address}]" if ":" in str(address) else str(address)
    return f"https://{host}:{checked.port}{checked.target}"


def _reason(what: str, error: Exception) -> str:
    return f"{what}: {error}"[:255]


@cache
def _tls_context(ca_bundle: Path | None) -> ssl.SSLContext:
    """The public CAs (certifi), plus the development CA when one is configured."""
    context = ssl.create_default_context(cafile=certifi.where())
    if ca_bundle is not None:
        context.load_verify_locations(cafile=str(ca_bundle))
    return context
