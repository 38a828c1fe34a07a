"""IP addresses whose requests without a key are refused (429 ``temporarily_blocked``)."""

from __future__ import annotations

import datetime as dt
import ipaddress

import sqlalchemy as sa

from findata.accounts.store import AccountError
from findata.accounts.tables import blocked_ips
from findata.control_plane.database import upsert_insert


def normalised_ip(ip: str) -> str:
    """``ip`` in its canonical text form; AccountError when it is no IP address."""
    try:
        return str(ipaddress.ip_address(ip.strip()))
    except ValueError as error:
        raise AccountError(f"not an IP address: {ip!r}") from error


def block_ip(engine: sa.Engine, ip: str, now: dt.datetime) -> str:
    """Refuse keyless requests from ``ip`` (blocking twice keeps the first time)."""
    address = normalised_ip(ip)
    insert = upsert_insert(engine)
    with engine.begin() as connection:
        connection.execute(
            insert(blocked_ips)
            .values(ip=address, blocked_at=now)
            .on_conflict_do_nothing(index_elements=["ip"])
        )
    return address


def unblock_ip(engine: sa.Engine, ip: str) -> bool:
    """Accept keyless requests from ``ip`` again; whether it was blocked."""
    address = normalised_ip(ip)
    with engine.begin() as connection:
        return (
            connection.execute(blocked_ips.delete().where(blocked_ips.c.ip == address)).rowcount > 0
        )
