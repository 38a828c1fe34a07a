"""The mailer: sends the outbox (``account_notices``) by SMTP, or writes ``.eml`` files.

Each message is claimed in a short transaction of its own that leases it (``next_attempt_at`` set
to the end of the lease, only if it is still due), so mailers in several processes and the
dashboard's send-right-after-the-response share the outbox without sending a message twice. A
sent message gets ``sent_at``; a failed one counts the attempt and waits out a growing backoff,
forever: a notice is never dropped. A mailer that dies holding a lease leaves the message due
again when the lease runs out (the one case where a message can go out twice: it died after
sending and before recording it).

Sensitive bodies stay encrypted in the database and are opened just before sending; neither
errors stored in ``last_error`` nor the log ever carry a body.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import logging
import os
import re
import secrets
import smtplib
import socket
import ssl
import tempfile
import threading
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path
from typing import Protocol
from urllib.parse import unquote, urlsplit

import sqlalchemy as sa

from findata.accounts.notices import NoticeBox
from findata.clock import Clock, as_utc
from findata.control_plane.schema import account_notices
from findata.settings import Settings

log = logging.getLogger("findata.mail")

N = account_notices

#: how long a claimed message is held: far beyond one SMTP exchange (``SMTP_TIMEOUT`` a step)
LEASE = dt.timedelta(minutes=5)
#: waits after the 1st, 2nd, ... failed attempt; the last repeats forever
BACKOFF = (
    dt.timedelta(minutes=1),
    dt.timedelta(minutes=5),
    dt.timedelta(minutes=30),
    dt.timedelta(hours=2),
    dt.timedelta(hours=6),
)
SMTP_TIMEOUT = 30.0
DEFAULT_FROM = "findata <no-reply@localhost>"
#: headers that name the notice (the .eml files are named by them; support can find a message)
NOTICE_ID_HEADER = "X-Findata-Notice"
NOTICE_KIND_HEADER = "X-Findata-Notice-Kind"
#: failures of one message only; any other failure (server down, login refused) would fail the
#: next message the same way, so the pass stops there and the rest stays due for the next one
MESSAGE_ERRORS = (smtplib.SMTPRecipientsRefused, smtplib.SMTPDataError)
ERROR_LENGTH = 200


def retry_delay(failed_attempts: int) -> dt.timedelta:
    """The wait before the next try after ``failed_attempts`` (1 or more) failed attempts."""
    return BACKOFF[min(failed_attempts, len(BACKOFF)) - 1]


class Transport(Protocol):
    """Delivers one finished message (raises if it could not)."""

    def send(self, message: EmailMessage) -> None:
        """Deliver ``message`` to its ``To``."""
        ...


class SmtpTransport:
    """Sends through an SMTP server given as ``smtp://[user:password@]host[:port]`` (STARTTLS
    when the server offers it) or ``smtps://…`` (TLS from the start); one connection a message,
    since notices are few and a fresh connection has no state to go stale."""

    def __init__(self, url: str, *, timeout: float = SMTP_TIMEOUT) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("smtp", "smtps") or not parts.hostname:
            # the URL itself is not repeated: it may hold a password
            raise ValueError("the SMTP URL must look like smtp://[user:password@]host[:port]")
        self.implicit_tls = parts.scheme == "smtps"
        self.host = parts.hostname
        self.port = parts.port or (465 if self.implicit_tls else 25)
        self.user = unquote(parts.username) if parts.username else None
        self._password = unquote(parts.password or "")
        self.timeout = timeout
        self._local_name: str | None = None

    def __repr__(self) -> str:
        login = f"{self.user}:***@" if self.user else ""
        scheme = "smtps" if self.implicit_tls else "smtp"
        return f"SmtpTransport('{scheme}://{login}{self.host}:{self.port}')"

    def send(self, message: EmailMessage) -> None:
        """Connect, secure the connection if possible, log in if configured, send, quit."""
        context = ssl.create_default_context()
        # our name for EHLO, looked up once: smtplib would ask DNS again on every connection
        self._local_name = self._local_name or socket.getfqdn()
        smtp: smtplib.SMTP
        if self.implicit_tls:
            smtp = smtplib.SMTP_SSL(
                self.host,
                self.port,
                self._local_name,
                timeout=self.timeout,
                context=context,
            )
        else:
            smtp = smtplib.SMTP(self.host, self.port, self._local_name, timeout=self.timeout)
        with smtp:
            smtp.ehlo()
            if not self.implicit_tls and smtp.has_extn("starttls"):
                smtp.starttls(context=context)
                smtp.ehlo()  # the server's extensions (AUTH) may differ once encrypted
            if self.user is not None:
                smtp.login(self.user, self._password)
            smtp.send_message(message)


class EmlDirectory:
    """Writes each message as an RFC 5322 ``.eml`` file into a directory (no SMTP server
    configured): ``<UTC time>-<notice id>-<kind>.eml``, so a listing sorts by time."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __repr__(self) -> str:
        return f"EmlDirectory({str(self.path)!r})"

    def send(self, message: EmailMessage) -> None:
        """Write ``message`` atomically: a reader never sees half a file under the final name."""
        self.path.mkdir(parents=True, exist_ok=True)
        target = self.path / file_name(message)
        handle, temporary = tempfile.mkstemp(dir=self.path, prefix=".", suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(message.as_bytes())
                file.flush()
                os.fsync(file.fileno())
            # a second write of one notice within a second is the same message again (a
            # mailer died before recording it): replacing it is the duplicate's removal
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        _sync_directory(self.path)


def file_name(message: EmailMessage) -> str:
    """``20261122T093000Z-0000000042-password_reset.eml``: its Date (UTC), notice and kind."""
    date = message["Date"]
    if date is None:
        raise ValueError("a message to write as .eml needs a Date")
    when = email.utils.parsedate_to_datetime(str(date)).astimezone(dt.UTC)
    notice = str(message.get(NOTICE_ID_HEADER, ""))
    number = f"{int(notice):010d}" if notice.isdigit() else secrets.token_hex(5)
    kind = re.sub(r"[^A-Za-z0-9_.-]", "_", str(message.get(NOTICE_KIND_HEADER, "message")))[:64]
    return f"{when:%Y%m%dT%H%M%SZ}-{number}-{kind}.eml"


def _sync_directory(path: Path) -> None:
    """Make a rename in ``path`` durable before the notice is marked sent (POSIX only)."""
    if os.name != "posix":
        return
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


@dataclass(frozen=True)
class _Claim:
    """A notice this mailer holds until ``lease_until``."""

    id: int
    email: str
    kind: str
    subject: str
    body: str  # as stored: encrypted when sensitive
    sensitive: bool
    attempts: int
    created_at: dt.datetime
    lease_until: dt.datetime

    def __repr__(self) -> str:  # no body in a repr that may end up in a log
        return f"_Claim(id={self.id}, kind={self.kind!r}, attempts={self.attempts})"


class _PassOver(Exception):
    """The transport failed in a way the next message would too."""


class Mailer:
    """Sends due notices from the outbox (see the module doc)."""

    def __init__(
        self,
        engine: sa.Engine,
        clock: Clock,
        box: NoticeBox,
        transport: Transport,
        *,
        mail_from: str = DEFAULT_FROM,
        lease: dt.timedelta = LEASE,
    ) -> None:
        self.engine = engine
        self.clock = clock
        self.transport = transport
        self.mail_from = mail_from
        self.lease = lease
        self._box = box
        self._domain = email.utils.parseaddr(mail_from)[1].rpartition("@")[2] or "localhost"

    @classmethod
    def from_settings(cls, settings: Settings, engine: sa.Engine, clock: Clock) -> Mailer:
        """SMTP when ``FINDATA_SMTP_URL`` is set, else ``.eml`` files under ``home/mail``."""
        transport: Transport = (
            SmtpTransport(settings.smtp_url)
            if settings.smtp_url
            else EmlDirectory(settings.home_dir / "mail")
        )
        box = NoticeBox.from_settings(settings)
        return cls(engine, clock, box, transport, mail_from=settings.mail_from)

    def send_due(self, limit: int = 50) -> int:
        """Send up to ``limit`` due notices; returns how many were sent in this pass. Failures
        are recorded on their notices (and logged), not raised."""
        sent = 0
        for _ in range(limit):
            claim = self._claim()
            if claim is None:
                break
            try:
                if self._deliver(claim):
                    sent += 1
            except _PassOver:
                break
        return sent

    def run(self, stop: threading.Event, poll_seconds: float) -> None:
        """Send what is due every ``poll_seconds`` until ``stop`` is set (a background thread)."""
        log.info("mailer started, sending through %r", self.transport)
        while not stop.is_set():
            try:
                if sent := self.send_due():
                    log.info("mailer sent %d message(s)", sent)
            except Exception:
                # the database failed (send failures are recorded, not raised); its errors
                # carry no body: no statement here sends one as a parameter
                log.exception("mail pass failed")
            stop.wait(poll_seconds)

    def _claim(self) -> _Claim | None:
        """Lease the notice that has been due longest, if any."""
        now = as_utc(self.clock.now())
        lease_until = now + self.lease
        due = sa.and_(
            N.c.sent_at.is_(None),
            # webhooks queue notices without next_attempt_at: due at once
            sa.or_(N.c.next_attempt_at.is_(None), N.c.next_attempt_at <= now),
        )
        oldest = (
            sa.select(N.c.id)
            .where(due)
            .order_by(sa.func.coalesce(N.c.next_attempt_at, N.c.created_at), N.c.id)
            .limit(1)
        )
        if self.engine.dialect.name == "postgresql":
            oldest = oldest.with_for_update(skip_locked=True)
        with self.engine.begin() as connection:
            # the write comes first (SQLite takes its write lock here) and repeats the due test,
            # so of two mailers reaching for one notice only one updates it. `id = (subquery)`,
            # not `id IN (subquery)`: PostgreSQL may rerun an IN subquery for every row it
            # scans, and SKIP LOCKED then skips the row this very statement just leased and
            # picks the next, leasing several; a scalar subquery runs once.
            row = connection.execute(
                sa.update(N)
                .where(N.c.id == oldest.scalar_subquery(), due)
                .values(next_attempt_at=lease_until)
                .returning(
                    N.c.id,
                    N.c.email,
                    N.c.kind,
                    N.c.subject,
                    N.c.body,
                    N.c.sensitive,
                    N.c.attempts,
                    N.c.created_at,
                )
            ).first()
        if row is None:
            return None
        return _Claim(
            row.id,
            row.email,
            row.kind,
            row.subject,
            row.body,
            bool(row.sensitive),
            row.attempts,
            as_utc(row.created_at),
            lease_until,
        )

    def _deliver(self, claim: _Claim) -> bool:
        """Open, build, send and record one claimed notice; True if it was sent."""
        clear = ""
        try:
            clear = self._box.open(claim.body) if claim.sensitive else claim.body
            message = self._message(claim, clear)
        except Exception as error:  # this message only (another key, a bad address)
            self._failed(claim, error, clear)
            return False
        try:
            self.transport.send(message)
        except Exception as error:
            self._failed(claim, error, clear)
            if not isinstance(error, MESSAGE_ERRORS):
                raise _PassOver from None
            return False
        self._sent(claim)
        return True

    def _message(self, claim: _Claim, body: str) -> EmailMessage:
        message = EmailMessage()
        message["Subject"] = claim.subject
        message["From"] = self.mail_from
        message["To"] = claim.email
        message["Date"] = email.utils.format_datetime(as_utc(self.clock.now()))
        # the same id on every try, so a duplicate after a crash can be recognised as one
        message["Message-ID"] = (
            f"<notice.{claim.id}.{claim.created_at:%Y%m%d%H%M%S}@{self._domain}>"
        )
        message[NOTICE_ID_HEADER] = str(claim.id)
        message[NOTICE_KIND_HEADER] = claim.kind
        message.set_content(body)
        return message

    def _sent(self, claim: _Claim) -> None:
        # recorded even if the lease ran out meanwhile: the message did go out
        with self.engine.begin() as connection:
            connection.execute(
                sa.update(N)
                .where(N.c.id == claim.id, N.c.sent_at.is_(None))
                .values(sent_at=as_utc(self.clock.now()), next_attempt_at=None)
            )

    def _failed(self, claim: _Claim, error: Exception, clear: str) -> None:
        attempts = claim.attempts + 1
        now = as_utc(self.clock.now())
        retry_at = now + retry_delay(attempts)
        reason = describe_error(error, clear)
        with self.engine.begin() as connection:
            held = connection.execute(
                sa.update(N)
                # only while still held: past the lease another mailer owns the next try
                .where(N.c.id == claim.id, N.c.next_attempt_at == claim.lease_until)
                .values(attempts=attempts, last_error=reason, next_attempt_at=retry_at)
            ).rowcount
        if held:
            log.warning(
                "notice %d (%s) not sent, attempt %d failed: %s; next try at %s",
                claim.id,
                claim.kind,
                attempts,
                reason,
                f"{retry_at:%Y-%m-%d %H:%M:%S} UTC",
            )
        else:
            log.warning("notice %d (%s) failed after its lease ran out", claim.id, claim.kind)


def describe_error(error: BaseException, clear_body: str = "") -> str:
    """A short, single-line account of ``error`` for ``last_error`` and the log, with the
    message's clear body (should an error ever quote it) cut out."""
    if isinstance(error, smtplib.SMTPResponseException):  # the server's answer, readable
        answer = error.smtp_error
        reply = answer.decode(errors="replace") if isinstance(answer, bytes) else str(answer)
        text = f"{type(error).__name__}: {error.smtp_code} {reply}"
    else:
        text = f"{type(error).__name__}: {error}"
    if clear_body.strip():
        text = text.replace(clear_body, "[body]")
    text = " ".join(text.split())
    return text if len(text) <= ERROR_LENGTH else text[: ERROR_LENGTH - 1] + "…"
