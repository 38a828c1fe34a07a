"""Webhook URL requirements against SSRF (issue #7, spec "URL requirements"): every refused
address class, resolved through a stub resolver (a dict hostname -> addresses, so no test
touches real DNS), refused by ``check_url``, at add time, and again before every delivery
attempt; and the rebinding defence: a delivery goes to the addresses the check approved.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import socket
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import sqlalchemy as sa

from findata.clock import as_utc
from findata.settings import Settings
from findata.webhooks.endpoints import WebhookEndpoints, WebhookRefused
from findata.webhooks.sender import SendResult, post_signed
from findata.webhooks.signing import SecretBox
from findata.webhooks.tables import webhook_attempts, webhook_endpoints
from findata.webhooks.url_safety import (
    MAX_URL_LENGTH,
    CheckedUrl,
    Resolver,
    UnsafeUrl,
    UrlPolicy,
    check_url,
)
from findata.webhooks.worker import DeliveryWorker, Sender
from tests.webhooks.receiver import Receiver, WebhookRig, make_rig

if TYPE_CHECKING:  # imported at run time, pytest would try to collect the Test* class
    from tests.webhooks.receiver import LoopbackCertificates

PUBLIC_V4 = "93.184.215.14"
PUBLIC_V6 = "2606:4700::1111"
HOOK = "https://hooks.example.com/hook"
DEFAULT = UrlPolicy()
LOOPBACK = UrlPolicy(allow_loopback=True)


class StubResolver:
    """DNS stand-in: ``answers`` maps a hostname to its addresses (mutable, so a test can change
    an answer between add time and delivery time); a name not in it raises ``gaierror``, as an
    unknown name does. An IP literal resolves to itself, as ``getaddrinfo`` does. Every lookup is
    recorded in ``lookups``."""

    def __init__(self, answers: dict[str, list[str]] | None = None) -> None:
        self.answers: dict[str, list[str]] = dict(answers or {})
        self.lookups: list[tuple[str, int]] = []

    def __call__(self, hostname: str, port: int) -> list[str]:
        self.lookups.append((hostname, port))
        if hostname in self.answers:
            return list(self.answers[hostname])
        try:
            ipaddress.ip_address(hostname.split("%", 1)[0])
        except ValueError:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known") from None
        return [hostname]


def ip(address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    return ipaddress.ip_address(address)


# --- check_url, default policy ---------------------------------------------------------------

#: one address of each class the spec refuses (and the forms that smuggle one), by name
REFUSED_ADDRESSES = [
    pytest.param("10.0.0.1", id="private-10/8"),
    pytest.param("10.255.255.254", id="private-10/8-top"),
    pytest.param("172.16.0.1", id="private-172.16/12"),
    pytest.param("172.31.255.254", id="private-172.16/12-top"),
    pytest.param("192.168.1.1", id="private-192.168/16"),
    pytest.param("127.0.0.1", id="loopback"),
    pytest.param("127.53.0.9", id="loopback-127/8"),
    pytest.param("169.254.169.254", id="link-local-metadata"),
    pytest.param("100.64.0.1", id="cgnat-100.64/10"),
    pytest.param("100.127.255.254", id="cgnat-100.64/10-top"),
    pytest.param("224.0.0.1", id="multicast-224"),
    pytest.param("239.255.255.250", id="multicast-239"),
    pytest.param("0.0.0.0", id="unspecified-v4"),
    pytest.param("255.255.255.255", id="broadcast"),
    pytest.param("::1", id="loopback-v6"),
    pytest.param("::", id="unspecified-v6"),
    pytest.param("fe80::1", id="link-local-v6"),
    pytest.param("fe80::1%eth0", id="link-local-v6-with-zone"),
    pytest.param("fd00::1", id="unique-local-fd00"),
    pytest.param("fc00::1", id="unique-local-fc00"),
    pytest.param("ff02::1", id="multicast-v6"),
    pytest.param("ff0e::1", id="multicast-v6-global-scope"),
    pytest.param("::ffff:127.0.0.1", id="ipv4-mapped-loopback"),
    pytest.param("::ffff:10.0.0.1", id="ipv4-mapped-private"),
    pytest.param("::ffff:169.254.169.254", id="ipv4-mapped-link-local"),
    pytest.param("64:ff9b::7f00:1", id="nat64-loopback"),
    pytest.param("64:ff9b::a00:1", id="nat64-private"),
    pytest.param("2002:7f00:1::1", id="6to4-loopback"),
    pytest.param("2002:a00:1::1", id="6to4-private"),
    pytest.param("fec0::1", id="site-local-v6"),
]


@pytest.mark.parametrize("address", REFUSED_ADDRESSES)
def test_a_name_resolving_to_a_non_public_address_is_refused(address: str) -> None:
    dns = StubResolver({"hooks.example.com": [address]})
    with pytest.raises(UnsafeUrl, match="not a public address") as refused:
        check_url(HOOK, DEFAULT, dns)
    assert str(ip(address.split("%")[0])) in str(refused.value)
    assert dns.lookups == [("hooks.example.com", 443)]


@pytest.mark.parametrize(
    "answers",
    [
        pytest.param([PUBLIC_V4, "10.0.0.1"], id="public-then-private"),
        pytest.param(["192.168.0.10", PUBLIC_V4], id="private-then-public"),
        pytest.param([PUBLIC_V6, "::1"], id="public-v6-then-loopback-v6"),
        pytest.param([PUBLIC_V4, PUBLIC_V6, "::ffff:127.0.0.1"], id="two-public-one-mapped"),
    ],
)
def test_one_non_public_address_among_public_ones_refuses_the_name(answers: list[str]) -> None:
    with pytest.raises(UnsafeUrl, match="not a public address"):
        check_url(HOOK, DEFAULT, StubResolver({"hooks.example.com": answers}))


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        pytest.param("http://hooks.example.com/hook", "must start with https://", id="http"),
        pytest.param("HTTP://hooks.example.com/hook", "must start with https://", id="HTTP"),
        pytest.param("ftp://hooks.example.com/hook", "must start with https://", id="ftp"),
        pytest.param("hooks.example.com/hook", "must start with https://", id="no-scheme"),
        pytest.param(f"https://{PUBLIC_V4}/hook", "not an IP address", id="ipv4-literal"),
        pytest.param("https://10.0.0.1/hook", "not an IP address", id="private-ipv4-literal"),
        pytest.param(f"https://[{PUBLIC_V6}]/hook", "not an IP address", id="ipv6-literal"),
        pytest.param("https://[::1]:8443/hook", "not an IP address", id="ipv6-loopback-literal"),
        pytest.param("https://[fe80::1%25eth0]/", "not an IP address", id="ipv6-zone-literal"),
        pytest.param("https://[::ffff:127.0.0.1]/", "not an IP address", id="mapped-literal"),
        pytest.param("https://localhost/hook", "local name", id="localhost"),
        pytest.param("https://LocalHost:8443/hook", "local name", id="localhost-mixed-case"),
        pytest.param("https://localhost./hook", "local name", id="localhost-trailing-dot"),
        pytest.param("https://printer.local/hook", "local name", id="dot-local"),
        pytest.param("https://db.corp.internal/hook", "local name", id="dot-internal"),
        pytest.param("https://hooks.localhost/hook", "local name", id="dot-localhost"),
        pytest.param("https://a.b.localhost./hook", "local name", id="dot-localhost-trailing"),
        pytest.param("https://intranet/hook", "not a public DNS name", id="dotless"),
        pytest.param("https://intranet./hook", "not a public DNS name", id="dotless-trailing"),
        pytest.param(
            "https://user:pass@hooks.example.com/hook", "user name or password", id="user-pass"
        ),
        pytest.param("https://user@hooks.example.com/hook", "user name or password", id="user"),
        pytest.param("https://:@hooks.example.com/hook", "user name or password", id="empty-user"),
        pytest.param("https:///hook", "no hostname", id="no-host"),
        pytest.param("https://hooks.example.com:99999/hook", "port", id="port-too-big"),
        pytest.param("https://hooks.example.com:http/hook", "port", id="port-not-a-number"),
        pytest.param("https://hooks.example.com:0/hook", "port", id="port-zero"),
    ],
)
def test_a_url_breaking_a_name_rule_is_refused(url: str, reason: str) -> None:
    # every name resolves to a public address here: the refusal is the rule's, not the DNS's
    public = StubResolver(
        {
            name: [PUBLIC_V4]
            for name in (
                "hooks.example.com",
                "localhost",
                "printer.local",
                "db.corp.internal",
                "hooks.localhost",
                "a.b.localhost",
                "intranet",
            )
        }
    )
    with pytest.raises(UnsafeUrl, match=reason):
        check_url(url, DEFAULT, public)


def test_names_under_a_refused_domain_are_refused_and_look_alikes_are_not() -> None:
    policy = UrlPolicy(refused_domains=("findata.dev",))
    dns = StubResolver(
        {
            name: [PUBLIC_V4]
            for name in (
                "findata.dev",
                "api.findata.dev",
                "a.b.findata.dev",
                "notfindata.dev",
                "findata.dev.example.com",
            )
        }
    )
    for url in (
        "https://findata.dev/hook",
        "https://api.findata.dev/hook",
        "https://a.b.findata.dev/hook",
        "https://API.FinData.Dev./hook",
    ):
        with pytest.raises(UnsafeUrl, match=r"under the service's own domain findata\.dev"):
            check_url(url, policy, dns)
    for url in ("https://notfindata.dev/hook", "https://findata.dev.example.com/hook"):
        assert check_url(url, policy, dns).addresses == (ip(PUBLIC_V4),)


def test_2048_characters_pass_and_2049_are_refused() -> None:
    dns = StubResolver({"hooks.example.com": [PUBLIC_V4]})
    longest = HOOK + "/" + "a" * (MAX_URL_LENGTH - len(HOOK) - 1)
    assert len(longest) == MAX_URL_LENGTH == 2048
    assert check_url(longest, DEFAULT, dns).url == longest
    with pytest.raises(UnsafeUrl, match="longer than 2,048 characters"):
        check_url(longest + "a", DEFAULT, dns)


@pytest.mark.parametrize(
    "dns",
    [
        pytest.param(StubResolver(), id="unknown-name"),
        pytest.param(StubResolver({"hooks.example.com": []}), id="empty-answer"),
    ],
)
def test_a_name_that_does_not_resolve_is_refused(dns: StubResolver) -> None:
    with pytest.raises(UnsafeUrl, match=r"hooks\.example\.com does not resolve in public DNS"):
        check_url(HOOK, DEFAULT, dns)


def test_a_public_ipv4_name_passes_with_its_parts_and_approved_addresses() -> None:
    dns = StubResolver({"hooks.example.com": [PUBLIC_V4]})
    url = "https://Hooks.Example.COM./in/bound?topic=filings&x=1#fragment"
    assert check_url(url, DEFAULT, dns) == CheckedUrl(
        url=url,
        hostname="hooks.example.com",
        port=443,
        target="/in/bound?topic=filings&x=1",
        addresses=(ip(PUBLIC_V4),),
    )
    assert dns.lookups == [("hooks.example.com", 443)]


def test_a_public_ipv6_name_on_an_explicit_port_passes() -> None:
    dns = StubResolver({"hooks.example.com": [PUBLIC_V6]})
    checked = check_url("https://hooks.example.com:8443", DEFAULT, dns)
    assert (checked.hostname, checked.port, checked.target) == ("hooks.example.com", 8443, "/")
    assert checked.addresses == (ip(PUBLIC_V6),)
    assert dns.lookups == [("hooks.example.com", 8443)]


def test_a_name_with_both_families_passes_with_every_address_in_order() -> None:
    answers = [PUBLIC_V4, PUBLIC_V6, "::ffff:8.8.8.8"]
    checked = check_url(HOOK, DEFAULT, StubResolver({"hooks.example.com": answers}))
    assert checked.addresses == tuple(ip(a) for a in answers)
    assert checked.target == "/hook"


# --- check_url, the UNSAFE loopback policy ---------------------------------------------------


@pytest.mark.parametrize(
    ("url", "answers"),
    [
        pytest.param("https://localhost:8443/hook", ["127.0.0.1", "::1"], id="localhost"),
        pytest.param("https://127.0.0.1:8443/hook", ["127.0.0.1"], id="ipv4-loopback-literal"),
        pytest.param("https://[::1]:8443/hook", ["::1"], id="ipv6-loopback-literal"),
        pytest.param("https://hooks.localhost/hook", ["::ffff:127.0.0.1"], id="mapped-loopback"),
        pytest.param("https://hooks.example.com/hook", ["127.0.0.1"], id="name-to-loopback"),
    ],
)
def test_the_loopback_policy_lets_loopback_through(url: str, answers: list[str]) -> None:
    # an IP literal "resolves" to itself, as getaddrinfo answers for one
    dns = StubResolver(
        {"localhost": answers, "hooks.localhost": answers, "hooks.example.com": answers}
    )
    assert check_url(url, LOOPBACK, dns).addresses == tuple(ip(a) for a in answers)
    with pytest.raises(UnsafeUrl):
        check_url(url, DEFAULT, dns)


@pytest.mark.parametrize(
    ("url", "answers", "reason"),
    [
        pytest.param("https://10.0.0.1/hook", {}, "not an IP address", id="private-literal"),
        pytest.param(
            "https://hooks.example.com/hook",
            {"hooks.example.com": ["10.0.0.1"]},
            "not a public address",
            id="name-to-private",
        ),
        pytest.param(
            "https://localhost/hook",
            {"localhost": ["127.0.0.1", "10.0.0.1"]},
            "not a public address",
            id="localhost-also-private",
        ),
        pytest.param(
            "https://hooks.localhost/hook",
            {"hooks.localhost": ["169.254.169.254"]},
            "not a public address",
            id="dot-localhost-to-link-local",
        ),
        pytest.param("http://localhost/hook", {"localhost": ["127.0.0.1"]}, "https://", id="http"),
        pytest.param(
            "https://printer.local/hook",
            {"printer.local": ["127.0.0.1"]},
            "local name",
            id="dot-local",
        ),
    ],
)
def test_the_loopback_policy_still_refuses_everything_else(
    url: str, answers: dict[str, list[str]], reason: str
) -> None:
    with pytest.raises(UnsafeUrl, match=reason):
        check_url(url, LOOPBACK, StubResolver(answers))


# --- UrlPolicy.from_settings -----------------------------------------------------------------


def test_the_policy_refuses_the_base_url_host_and_the_service_domains(tmp_path: Path) -> None:
    settings = Settings(
        home=tmp_path,
        base_url="https://API.findata.dev:8443/v1",
        service_domains=["Findata.App.", " ", "vercel.app"],
        webhooks_allow_private=False,
    )
    policy = UrlPolicy.from_settings(settings)
    assert policy == UrlPolicy(("findata.app", "vercel.app", "api.findata.dev"), False)
    dns = StubResolver(
        {
            name: [PUBLIC_V4]
            for name in (
                "api.findata.dev",
                "v2.api.findata.dev",
                "hooks.findata.app",
                "x.vercel.app",
            )
        }
    )
    for name in dns.answers:
        with pytest.raises(UnsafeUrl, match="under the service's own domain"):
            check_url(f"https://{name}/hook", policy, dns)


@pytest.mark.parametrize("base_url", ["http://127.0.0.1:8000", "https://[::1]:8443/"])
def test_an_ip_base_url_adds_no_refused_domain(tmp_path: Path, base_url: str) -> None:
    settings = Settings(home=tmp_path, base_url=base_url, service_domains=[])
    assert UrlPolicy.from_settings(settings).refused_domains == ()


def test_the_policy_allows_loopback_only_under_the_unsafe_setting(tmp_path: Path) -> None:
    unsafe = Settings(home=tmp_path, webhooks_allow_private=True)
    assert UrlPolicy.from_settings(Settings(home=tmp_path, webhooks_allow_private=False)) == DEFAULT
    assert UrlPolicy.from_settings(unsafe).allow_loopback is True


# --- add time and delivery time, on SQLite and PostgreSQL ------------------------------------


@dataclass
class RecordingSender:
    """A sender that records each ``CheckedUrl`` it is given; it answers ``answer``, or passes
    on to ``delegate``; with neither, being called at all fails the test."""

    answer: SendResult | None = None
    delegate: Sender | None = None
    calls: list[CheckedUrl] = field(default_factory=list)

    def __call__(
        self, checked: CheckedUrl, headers: dict[str, str], body: bytes, **options: Any
    ) -> SendResult:
        self.calls.append(checked)
        if self.delegate is not None:
            return self.delegate(checked, headers, body, **options)
        if self.answer is None:
            raise AssertionError(f"a refused URL reached the sender: {checked}")
        return self.answer


@dataclass
class Guarded:
    """A rig whose management service and workers use the production (non-loopback) policy of
    default settings plus ``base_url`` https://api.findata.dev, and the stub resolver ``dns``."""

    rig: WebhookRig
    dns: StubResolver
    policy: UrlPolicy
    endpoints: WebhookEndpoints

    def worker(
        self,
        sender: Sender,
        policy: UrlPolicy | None = None,
        resolver: Resolver | None = None,
    ) -> DeliveryWorker:
        return DeliveryWorker(
            self.rig.engine,
            self.rig.clock,
            self.rig.accounts,
            SecretBox.from_settings(self.rig.settings),
            self.policy if policy is None else policy,
            ca_bundle=self.rig.settings.webhooks_ca_bundle,
            resolver=self.dns if resolver is None else resolver,
            sender=sender,
        )

    def endpoint_rows(self) -> list[sa.Row]:
        with self.rig.engine.connect() as connection:
            return connection.execute(sa.select(webhook_endpoints)).all()

    def attempt_rows(self, delivery_id: str) -> list[sa.Row]:
        with self.rig.engine.connect() as connection:
            return connection.execute(
                sa.select(webhook_attempts)
                .where(webhook_attempts.c.delivery_id == delivery_id)
                .order_by(webhook_attempts.c.number)
            ).all()


@pytest.fixture
def guarded(
    control_plane_url: str, tmp_path: Path, test_certificates: LoopbackCertificates
) -> Guarded:
    dns = StubResolver({"hooks.example.com": [PUBLIC_V4]})
    rig = make_rig(control_plane_url, tmp_path / "home", test_certificates, resolver=dns)
    policy = UrlPolicy.from_settings(
        Settings(
            home=tmp_path / "home",
            base_url="https://api.findata.dev",
            service_domains=[],
            webhooks_allow_private=False,
        )
    )
    assert not policy.allow_loopback
    endpoints = WebhookEndpoints(
        rig.engine, rig.clock, rig.accounts, SecretBox.from_settings(rig.settings), policy, dns
    )
    return Guarded(rig, dns, policy, endpoints)


#: URLs refused at add time (with the name's DNS answer when it matters), by name
ADD_TIME_REFUSALS: list[tuple[str, str, list[str]]] = [
    ("http", "http://hooks.example.com/hook", [PUBLIC_V4]),
    ("ip-literal", f"https://{PUBLIC_V4}/hook", [PUBLIC_V4]),
    ("ipv6-literal", f"https://[{PUBLIC_V6}]/hook", [PUBLIC_V4]),
    ("localhost", "https://localhost/hook", [PUBLIC_V4]),
    ("dot-internal", "https://db.internal/hook", [PUBLIC_V4]),
    ("dot-local", "https://printer.local/hook", [PUBLIC_V4]),
    ("base-url-host", "https://api.findata.dev/hook", [PUBLIC_V4]),
    ("private-10", HOOK, ["10.0.0.1"]),
    ("private-192.168", HOOK, ["192.168.1.1"]),
    ("loopback", HOOK, ["127.0.0.1"]),
    ("link-local", HOOK, ["169.254.169.254"]),
    ("cgnat", HOOK, ["100.64.0.1"]),
    ("multicast", HOOK, ["239.255.255.250"]),
    ("loopback-v6", HOOK, ["::1"]),
    ("unique-local-v6", HOOK, ["fd00::1"]),
    ("public-and-private", HOOK, [PUBLIC_V4, "192.168.1.1"]),
    ("ipv4-mapped-loopback", HOOK, ["::ffff:127.0.0.1"]),
    ("nat64-loopback", HOOK, ["64:ff9b::7f00:1"]),
    ("does-not-resolve", HOOK, []),
    ("too-long", HOOK + "/" + "a" * MAX_URL_LENGTH, [PUBLIC_V4]),
]


def test_a_refused_url_is_refused_at_add_time_and_creates_nothing(guarded: Guarded) -> None:
    account = guarded.rig.account("max")
    for case, url, answers in ADD_TIME_REFUSALS:
        for name in ("hooks.example.com", "localhost", "db.internal", "printer.local"):
            guarded.dns.answers[name] = answers
        guarded.dns.answers["api.findata.dev"] = answers
        try:
            guarded.endpoints.add(account.id, url)
        except WebhookRefused as refused:
            got = (refused.status, refused.code, str(refused).startswith("URL refused: "))
        else:
            got = None
        assert got == (400, "invalid_url", True), case
        assert guarded.endpoints.list(account.id) == [], case
        assert guarded.endpoint_rows() == [], case

    # the same service adds a public URL: the refusals above were the URLs'
    guarded.dns.answers["hooks.example.com"] = [PUBLIC_V4, PUBLIC_V6]
    added = guarded.endpoints.add(account.id, HOOK)
    assert [e.endpoint_id for e in guarded.endpoints.list(account.id)] == [
        added.endpoint.endpoint_id
    ]


#: DNS answers the name turns to after it was added, each refused before an attempt; with the
#: wait before the next attempt (spec: retries after 1 min, 5 min, 30 min, 2 h, ...)
DELIVERY_TIME_REFUSALS: list[tuple[list[str] | None, str, dt.timedelta]] = [
    (["10.0.0.1"], "resolves to 10.0.0.1, which is not a public address", dt.timedelta(minutes=1)),
    (
        [PUBLIC_V4, "10.0.0.1"],
        "resolves to 10.0.0.1, which is not a public address",
        dt.timedelta(minutes=5),
    ),
    (
        ["::ffff:127.0.0.1"],
        f"resolves to {ip('::ffff:127.0.0.1')}, which is not a public address",
        dt.timedelta(minutes=30),
    ),
    (None, "does not resolve in public DNS", dt.timedelta(hours=2)),
]


def test_a_url_that_turned_unsafe_is_refused_at_delivery_and_counts_as_a_failure(
    guarded: Guarded,
) -> None:
    rig = guarded.rig
    shown = guarded.endpoints.add(rig.account("max").id, HOOK)  # public when added
    endpoint_id = shown.endpoint.endpoint_id
    queued = guarded.endpoints.send_test(endpoint_id)
    first_failure = rig.clock.now()

    for attempt, (answers, reason, wait) in enumerate(DELIVERY_TIME_REFUSALS, start=1):
        # the name's DNS answer changes after the endpoint was added
        if answers is None:
            guarded.dns.answers.pop("hooks.example.com", None)
        else:
            guarded.dns.answers["hooks.example.com"] = answers
        never = RecordingSender()  # a refused URL must not reach the sender
        started = rig.clock.now()

        report = guarded.worker(never).run_once()

        assert report.outcomes == {"failed": 1}, reason
        assert never.calls == []
        (entry,) = guarded.endpoints.log(endpoint_id)
        assert (entry.delivery_id, entry.status, entry.attempt, entry.http_status) == (
            queued.delivery_id,
            "Failed",
            attempt,
            None,
        )
        assert entry.error == f"URL refused: hooks.example.com {reason}"
        # a failed attempt like any other: the next one is scheduled after the retry wait
        assert entry.next_attempt_at == started + wait
        stored = guarded.attempt_rows(queued.delivery_id)[-1]
        assert (stored.number, stored.outcome, stored.http_status, stored.error) == (
            attempt,
            "failed",
            None,
            entry.error,
        )
        # and it counts toward the three days of failures that disable an endpoint
        (row,) = guarded.endpoint_rows()
        assert row.state == "active" and as_utc(row.failing_since) == first_failure
        rig.clock.advance(wait)

    # the URL is checked again before the next attempt: public again, it is sent
    guarded.dns.answers["hooks.example.com"] = [PUBLIC_V4]
    sent = RecordingSender(SendResult(200))
    assert guarded.worker(sent).run_once().outcomes == {"delivered": 1}
    assert [c.addresses for c in sent.calls] == [(ip(PUBLIC_V4),)]
    entry = guarded.endpoints.log(endpoint_id)[0]
    assert (entry.status, entry.attempt, entry.http_status) == ("Delivered", 5, 200)
    assert guarded.endpoint_rows()[0].failing_since is None


class RebindingResolver:
    """Answers ``first`` once, then ``after`` for every later lookup of the name (a DNS-rebinding
    server with a zero TTL); records every lookup."""

    def __init__(self, name: str, first: Sequence[str], after: Sequence[str]) -> None:
        self.name, self.first, self.after = name, list(first), list(after)
        self.lookups: list[tuple[str, int]] = []

    def __call__(self, hostname: str, port: int) -> list[str]:
        self.lookups.append((hostname, port))
        if hostname != self.name:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return self.first if len(self.lookups) == 1 else self.after


def test_the_sender_gets_exactly_the_addresses_the_check_approved(guarded: Guarded) -> None:
    shown = guarded.endpoints.add(guarded.rig.account("max").id, HOOK)
    guarded.endpoints.send_test(shown.endpoint.endpoint_id)
    # at delivery the name answers public addresses once, then rebinds to loopback
    dns = RebindingResolver("hooks.example.com", [PUBLIC_V4, PUBLIC_V6], ["127.0.0.1"])
    sender = RecordingSender(SendResult(200))

    assert guarded.worker(sender, resolver=dns).run_once().outcomes == {"delivered": 1}

    # one lookup for the attempt, and the connection target is what that lookup approved
    assert dns.lookups == [("hooks.example.com", 443)]
    assert sender.calls == [
        CheckedUrl(HOOK, "hooks.example.com", 443, "/hook", (ip(PUBLIC_V4), ip(PUBLIC_V6)))
    ]


def test_a_rebinding_name_cannot_move_a_real_delivery(
    guarded: Guarded, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the UNSAFE loopback policy, so the real HTTPS receiver on 127.0.0.1 can stand in for a
    # public host; after its one approved answer the name rebinds to an address with no listener
    path = receiver.url().rsplit("/", 1)[1]
    url = f"https://hooks.localhost:{receiver.port}/{path}"
    guarded.dns.answers["hooks.localhost"] = ["127.0.0.1"]
    shown = guarded.rig.endpoints.add(guarded.rig.account("max").id, url)  # the loopback rig
    guarded.rig.endpoints.send_test(shown.endpoint.endpoint_id)
    dns = RebindingResolver("hooks.localhost", ["127.0.0.1"], ["127.0.0.2"])
    system_lookups: list[object] = []
    real_getaddrinfo = socket.getaddrinfo

    def recording_getaddrinfo(host: object, *args: Any, **kwargs: Any) -> Any:
        system_lookups.append(host)
        return real_getaddrinfo(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", recording_getaddrinfo)
    sender = RecordingSender(delegate=post_signed)
    worker = guarded.worker(sender, policy=LOOPBACK, resolver=dns)

    assert worker.run_once().outcomes == {"delivered": 1}

    assert dns.lookups == [("hooks.localhost", receiver.port)]
    assert [c.addresses for c in sender.calls] == [(ip("127.0.0.1"),)]
    (request,) = receiver.received(f"/{path}")
    assert request.headers["host"] == f"hooks.localhost:{receiver.port}"
    # no second lookup behind the check's back: the system resolver saw the address, not the name
    assert "127.0.0.1" in system_lookups and "hooks.localhost" not in system_lookups
