"""Webhook URL requirements (spec: "URL requirements"), checked at add time and before every
attempt.

The check resolves the hostname once and returns the addresses it approved; the sender connects
to one of those addresses (with the hostname for TLS and ``Host``), so a DNS answer that changes
between the check and the connection (rebinding) cannot redirect a delivery.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from findata.settings import Settings

MAX_URL_LENGTH = 2048
REFUSED_NAME_SUFFIXES = (".local", ".internal", ".localhost")
#: NAT64's well-known prefix embeds an IPv4 address the gateway would reach (RFC 6052)
NAT64 = ipaddress.ip_network("64:ff9b::/96")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
#: hostname, port -> the addresses it resolves to (raises OSError when it does not resolve)
Resolver = Callable[[str, int], Sequence[str]]


class UnsafeUrl(ValueError):
    """A URL that webhooks may not be sent to; the message says which rule it breaks."""


@dataclass(frozen=True)
class CheckedUrl:
    """A URL that passed every rule, with the addresses that were approved for it."""

    url: str
    hostname: str
    port: int
    target: str  # path and query, as sent in the request line
    addresses: tuple[IPAddress, ...]


@dataclass(frozen=True)
class UrlPolicy:
    """What the checks refuse beyond the fixed rules."""

    refused_domains: tuple[str, ...] = ()
    #: UNSAFE (local development and tests): loopback hosts and addresses pass
    allow_loopback: bool = False

    @classmethod
    def from_settings(cls, settings: Settings) -> UrlPolicy:
        """The service's own domains (``service_domains`` and ``base_url``'s host)."""
        domains = [d.strip().strip(".").lower() for d in settings.service_domains if d.strip()]
        own = urlsplit(settings.base_url).hostname
        if own and not _is_ip_literal(own):
            domains.append(own.strip(".").lower())
        return cls(tuple(dict.fromkeys(domains)), settings.webhooks_allow_private)


def system_resolver(hostname: str, port: int) -> list[str]:
    """Every address the system's resolver gives for ``hostname``."""
    infos = socket.getaddrinfo(hostname, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def check_url(url: str, policy: UrlPolicy, resolver: Resolver = system_resolver) -> CheckedUrl:
    """``url`` with its approved addresses, or ``UnsafeUrl`` naming the rule it breaks."""
    if len(url) > MAX_URL_LENGTH:
        raise UnsafeUrl(f"the URL is longer than {MAX_URL_LENGTH:,} characters")
    parts = urlsplit(url)
    if parts.scheme.lower() != "https":
        raise UnsafeUrl("the URL must start with https:// (plain http is refused)")
    if parts.username is not None or parts.password is not None:
        raise UnsafeUrl("the URL must not carry a user name or password")
    hostname = (parts.hostname or "").rstrip(".").lower()
    if not hostname:
        raise UnsafeUrl("the URL has no hostname")
    try:
        port = 443 if parts.port is None else parts.port
    except ValueError:
        port = 0
    if not 1 <= port <= 65535:
        raise UnsafeUrl("the URL's port is not a number from 1 to 65535")
    loopback_name = hostname == "localhost" or hostname.endswith(".localhost")
    if _is_ip_literal(hostname):
        if not (policy.allow_loopback and ipaddress.ip_address(hostname).is_loopback):
            raise UnsafeUrl("the host must be a hostname, not an IP address")
    elif not (policy.allow_loopback and loopback_name):
        _check_name(hostname, policy)
    addresses = _resolve(hostname, port, resolver)
    for address in addresses:
        _check_address(hostname, address, policy)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return CheckedUrl(url, hostname, port, target, addresses)


def _check_name(hostname: str, policy: UrlPolicy) -> None:
    if hostname == "localhost" or hostname.endswith(REFUSED_NAME_SUFFIXES):
        raise UnsafeUrl(
            f"{hostname} is a local name (localhost, .local, .internal and .localhost are refused)"
        )
    if "." not in hostname:
        raise UnsafeUrl(f"{hostname} is not a public DNS name")
    for domain in policy.refused_domains:
        if hostname == domain or hostname.endswith("." + domain):
            raise UnsafeUrl(f"{hostname} is under the service's own domain {domain}")


def _resolve(hostname: str, port: int, resolver: Resolver) -> tuple[IPAddress, ...]:
    try:
        answers = resolver(hostname, port)
    except (OSError, UnicodeError) as error:
        raise UnsafeUrl(f"{hostname} does not resolve in public DNS") from error
    addresses = tuple(ipaddress.ip_address(a.split("%", 1)[0]) for a in answers)
    if not addresses:
        raise UnsafeUrl(f"{hostname} does not resolve in public DNS")
    return addresses


def _check_address(hostname: str, address: IPAddress, policy: UrlPolicy) -> None:
    if policy.allow_loopback and _embedded_ipv4(address).is_loopback:
        return
    if not is_public_address(address):
        raise UnsafeUrl(f"{hostname} resolves to {address}, which is not a public address")


def is_public_address(address: IPAddress) -> bool:
    """True for a globally routable unicast address (the IPv4 inside mapped forms is judged)."""
    inner = _embedded_ipv4(address)
    if inner is not address:
        return is_public_address(inner)
    # is_global is False for private, loopback, link-local, carrier-grade NAT (100.64/10),
    # documentation and reserved ranges; multicast needs its own test
    if isinstance(address, ipaddress.IPv6Address) and address.is_site_local:
        return False  # fec0::/10, deprecated but still routed inside some networks
    return (
        address.is_global
        and not address.is_multicast
        and not address.is_unspecified
        and not address.is_reserved
    )


def _embedded_ipv4(address: IPAddress) -> IPAddress:
    """The IPv4 address an IPv6 one carries (mapped ``::ffff:a.b.c.d``, NAT64 or 6to4), else
    itself."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address in NAT64:
            return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if address.sixtofour is not None:
            return address.sixtofour
    return address


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True
