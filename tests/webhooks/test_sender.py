"""The webhook sender (webhooks/sender.py) against the real HTTPS receiver on loopback, with no
real DNS: what each kind of answer means, that a redirect is never followed, that TLS is
verified against the hostname, and that the connection goes to the approved addresses only.
"""

from __future__ import annotations

import ipaddress
import socket
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from findata.webhooks.sender import SendResult, post_signed
from findata.webhooks.url_safety import CheckedUrl, UrlPolicy, check_url
from tests.webhooks.receiver import Receiver

if TYPE_CHECKING:  # imported at run time, pytest would try to collect the Test* class
    from tests.webhooks.receiver import LoopbackCertificates

LOOPBACK = UrlPolicy(allow_loopback=True)
HEADERS = {"content-type": "application/json", "webhook-id": "msg_sender_test"}
BODY = b'{"id":"evt_0","type":"webhook.test","created":"2026-01-01T00:00:00Z"}'


def localhost(hostname: str, port: int) -> list[str]:
    """The stub resolver: ``localhost`` is 127.0.0.1 (where the receiver listens), nothing else
    resolves."""
    if hostname != "localhost":
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    return ["127.0.0.1"]


def checked_path(receiver: Receiver) -> tuple[CheckedUrl, str]:
    """A fresh receiver URL, checked under the loopback policy, and its path."""
    url = receiver.url()
    return check_url(url, LOOPBACK, localhost), url.split(str(receiver.port), 1)[1]


def free_port() -> int:
    """A loopback port nobody listens on (bound once by the OS, then let go)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def system_lookups(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[object]]:
    """Every host the process asks the system resolver about while the test runs."""
    asked: list[object] = []
    real = socket.getaddrinfo

    def recording(host: object, *args: Any, **kwargs: Any) -> Any:
        asked.append(host)
        return real(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", recording)
    yield asked


def test_a_200_is_delivered_with_the_body_and_the_hostname_as_host(
    receiver: Receiver, test_certificates: LoopbackCertificates
) -> None:
    checked, path = checked_path(receiver)
    result = post_signed(checked, HEADERS, BODY, ca_bundle=test_certificates.ca)
    assert result == SendResult(200) and result.delivered and not result.gone
    (request,) = receiver.received(path)
    assert request.body == BODY
    assert request.headers["host"] == f"localhost:{receiver.port}"
    assert request.headers["webhook-id"] == "msg_sender_test"


@pytest.mark.parametrize(
    ("status", "delivered", "gone"),
    [
        (201, True, False),
        (302, False, False),
        (307, False, False),
        (404, False, False),
        (410, False, True),
        (500, False, False),
        (503, False, False),
    ],
)
def test_what_an_answer_means(
    receiver: Receiver,
    test_certificates: LoopbackCertificates,
    status: int,
    delivered: bool,
    gone: bool,
) -> None:
    checked, path = checked_path(receiver)
    receiver.answer(path, status)
    result = post_signed(checked, HEADERS, BODY, ca_bundle=test_certificates.ca)
    assert result == SendResult(status)
    assert (result.delivered, result.gone) == (delivered, gone)
    assert len(receiver.received(path)) == 1


def test_a_redirect_is_not_followed(
    receiver: Receiver, test_certificates: LoopbackCertificates
) -> None:
    checked, path = checked_path(receiver)
    receiver.answer(path, 302)  # the receiver points Location at /elsewhere
    elsewhere_before = len(receiver.received("/elsewhere"))
    result = post_signed(checked, HEADERS, BODY, ca_bundle=test_certificates.ca)
    assert (result.http_status, result.delivered) == (302, False)
    assert len(receiver.received(path)) == 1
    assert len(receiver.received("/elsewhere")) == elsewhere_before


def test_without_the_test_ca_the_certificate_is_not_trusted(receiver: Receiver) -> None:
    checked, path = checked_path(receiver)
    result = post_signed(checked, HEADERS, BODY)  # the public CAs only
    assert result.http_status is None and not result.delivered
    assert result.error is not None
    assert result.error.startswith("connection failed: ")
    assert "certificate" in result.error.lower()
    assert receiver.received(path) == []


def test_the_certificate_is_checked_against_the_hostname_not_the_address(
    receiver: Receiver, test_certificates: LoopbackCertificates
) -> None:
    # the receiver's certificate names localhost, hooks.localhost and 127.0.0.1, not this name
    path = "/wrong-name"
    checked = CheckedUrl(
        f"https://hooks.example.com:{receiver.port}{path}",
        "hooks.example.com",
        receiver.port,
        path,
        (ipaddress.ip_address("127.0.0.1"),),
    )
    result = post_signed(checked, HEADERS, BODY, ca_bundle=test_certificates.ca)
    assert result.http_status is None and result.error is not None
    assert "hooks.example.com" in result.error and "certificate" in result.error.lower()
    assert receiver.received(path) == []


def test_the_sender_connects_to_the_approved_address_without_a_lookup(
    receiver: Receiver, test_certificates: LoopbackCertificates, system_lookups: list[object]
) -> None:
    # no resolver is consulted: the CheckedUrl carries the address to connect to
    path = f"/{time.monotonic_ns()}"
    checked = CheckedUrl(
        f"https://hooks.localhost:{receiver.port}{path}?topic=filings",
        "hooks.localhost",
        receiver.port,
        f"{path}?topic=filings",
        (ipaddress.ip_address("127.0.0.1"),),
    )
    result = post_signed(checked, HEADERS, BODY, ca_bundle=test_certificates.ca)
    assert result == SendResult(200)
    (request,) = receiver.received(f"{path}?topic=filings")
    assert request.headers["host"] == f"hooks.localhost:{receiver.port}"
    # the system resolver was asked about the address only, never about the name
    assert system_lookups and set(system_lookups) <= {"127.0.0.1", b"127.0.0.1"}


def test_the_next_approved_address_is_tried_when_one_refuses(
    receiver: Receiver, test_certificates: LoopbackCertificates
) -> None:
    # the receiver listens on 127.0.0.1 only: 127.0.0.2 (loopback too) refuses the connection
    path = f"/{time.monotonic_ns()}"
    checked = CheckedUrl(
        f"https://localhost:{receiver.port}{path}",
        "localhost",
        receiver.port,
        path,
        (ipaddress.ip_address("127.0.0.2"), ipaddress.ip_address("127.0.0.1")),
    )
    assert post_signed(checked, HEADERS, BODY, ca_bundle=test_certificates.ca) == SendResult(200)
    assert len(receiver.received(path)) == 1


def loopback_hook(port: int) -> CheckedUrl:
    """``https://localhost:PORT/hook``, approved for 127.0.0.1."""
    return CheckedUrl(
        f"https://localhost:{port}/hook",
        "localhost",
        port,
        "/hook",
        (ipaddress.ip_address("127.0.0.1"),),
    )


def test_no_listener_is_a_connection_failure(test_certificates: LoopbackCertificates) -> None:
    checked = loopback_hook(free_port())
    result = post_signed(checked, HEADERS, BODY, ca_bundle=test_certificates.ca)
    assert result.http_status is None and not result.delivered
    assert result.error is not None and result.error.startswith("connection failed: ")
    assert len(result.error) <= 255


def test_no_approved_address_sends_nothing(test_certificates: LoopbackCertificates) -> None:
    checked = CheckedUrl("https://localhost:9/hook", "localhost", 9, "/hook", ())
    assert post_signed(checked, HEADERS, BODY, ca_bundle=test_certificates.ca) == SendResult(
        None, "no address to connect to"
    )


def test_no_answer_within_the_timeout_is_a_failure(
    receiver: Receiver, test_certificates: LoopbackCertificates
) -> None:
    checked, path = checked_path(receiver)
    receiver.answer(path, "hold")
    try:
        started = time.monotonic()
        result = post_signed(checked, HEADERS, BODY, ca_bundle=test_certificates.ca, timeout=0.5)
        waited = time.monotonic() - started
    finally:
        receiver.release(path)
    assert result == SendResult(None, "no answer within 0.5 seconds")
    assert not result.delivered
    assert 0.5 <= waited < 5
    assert len(receiver.received(path)) == 1


def test_a_receiver_that_accepts_and_never_answers_is_a_failure_in_time(
    test_certificates: LoopbackCertificates,
) -> None:
    """A receiver that takes the TCP connection and then says nothing (no TLS handshake, no
    answer): the attempt fails within its time limit and the sender moves on."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # the kernel accepts connections; nobody ever reads or writes
        checked = loopback_hook(silent.getsockname()[1])
        started = time.monotonic()
        result = post_signed(checked, HEADERS, BODY, ca_bundle=test_certificates.ca, timeout=0.5)
        waited = time.monotonic() - started
    assert not result.delivered and result.http_status is None
    assert result.error is not None
    assert 0.4 <= waited < 3, waited
