"""The mailer against real parts: an SMTP server (aiosmtpd) on loopback, the ``.eml`` directory,
the control plane on SQLite and PostgreSQL. Notices are sent once, sensitive ones stored
encrypted and delivered in clear, failures retried with a growing backoff and never dropped,
and several mailers share one outbox without sending a message twice."""

from __future__ import annotations

import datetime as dt
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import sqlalchemy as sa
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, AuthResult, Envelope, LoginPassword, Session
from cryptography.fernet import Fernet

from findata.accounts.mailer import (
    LEASE,
    EmlDirectory,
    Mailer,
    SmtpTransport,
    describe_error,
    retry_delay,
)
from findata.accounts.notices import NoticeBox, queue_notice
from findata.clock import ManualClock, as_utc
from findata.control_plane.database import engine_for
from findata.control_plane.schema import account_notices as N
from findata.settings import Settings
from tests.databases import upgraded

START = dt.datetime(2026, 11, 22, 9, 30, tzinfo=dt.UTC)
SECRET_LINK = "https://findata.example/reset?token=s3cr3t-9f2c4e1a"
SECRET_BODY = f"Reset your password: {SECRET_LINK}\n"


# --- a real SMTP server ------------------------------------------------------------------------


@dataclass
class Inbox:
    """What an aiosmtpd server on 127.0.0.1 received; recipients starting ``bounce`` are
    refused (550) at RCPT."""

    port: int
    envelopes: list[Envelope] = field(default_factory=list)

    async def handle_RCPT(
        self, server: SMTP, session: Session, envelope: Envelope, address: str, options: list[str]
    ) -> str:
        if address.startswith("bounce"):
            return "550 no such mailbox"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        self.envelopes.append(envelope)
        return "250 Message accepted"

    @property
    def messages(self) -> list[EmailMessage]:
        """Every received message, parsed (line ends as in a file: SMTP sends CRLF)."""
        parser = BytesParser(policy=policy.default)
        return [
            parser.parsebytes(bytes(envelope.content).replace(b"\r\n", b"\n"))
            for envelope in self.envelopes
        ]

    def url(self, login: str = "") -> str:
        return f"smtp://{login}127.0.0.1:{self.port}"


def free_port() -> int:
    """A loopback port nothing listens on (right now)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def smtp_server(port: int | None = None, **smtp_options: Any) -> Iterator[Inbox]:
    """A running SMTP server on ``port`` (a free one by default) until the block ends."""
    inbox = Inbox(port or free_port())
    controller = Controller(inbox, hostname="127.0.0.1", port=inbox.port, **smtp_options)
    controller.start()
    try:
        yield inbox
    finally:
        controller.stop()


USER = "mailer@findata"
PASSWORD = "p@ss:w/rd%20"  # characters that must be URL-encoded in the SMTP URL


def authenticator(
    server: SMTP, session: Session, envelope: Envelope, mechanism: str, auth_data: Any
) -> AuthResult:
    """Accepts ``USER`` with ``PASSWORD`` only."""
    accepted = isinstance(auth_data, LoginPassword) and (
        auth_data.login == USER.encode() and auth_data.password == PASSWORD.encode()
    )
    return AuthResult(success=accepted, handled=False)  # aiosmtpd answers 235 or 535


# --- fixtures and helpers ----------------------------------------------------------------------


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def sqlite_engine(tmp_path: Path) -> Iterator[sa.Engine]:
    engine = engine_for(upgraded(f"sqlite:///{tmp_path}/c.sqlite"))
    yield engine
    engine.dispose()


@pytest.fixture
def box() -> NoticeBox:
    return NoticeBox(Fernet.generate_key())


@pytest.fixture
def inbox() -> Iterator[Inbox]:
    with smtp_server() as running:
        yield running


def queue(
    engine: sa.Engine,
    clock: ManualClock,
    email: str = "ada@example.com",
    *,
    kind: str = "welcome",
    body: str = "Welcome to findata.\n",
    box: NoticeBox | None = None,
) -> int:
    with engine.begin() as connection:
        return queue_notice(
            connection,
            account_id="acc_1",
            email=email,
            kind=kind,
            subject=f"findata: {kind}",
            body=body,
            now=clock.now(),
            box=box,
        )


def notice(engine: sa.Engine, notice_id: int) -> sa.Row:
    with engine.connect() as connection:
        return connection.execute(sa.select(N).where(N.c.id == notice_id)).one()


def smtp_mailer(engine: sa.Engine, clock: ManualClock, box: NoticeBox, url: str) -> Mailer:
    return Mailer(engine, clock, box, SmtpTransport(url, timeout=5))


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 10) -> None:
    """Poll ``condition`` (another thread's effect) until it holds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        time.sleep(0.02)


# --- sending -----------------------------------------------------------------------------------


def test_a_queued_notice_is_sent_once_by_smtp(
    engine: sa.Engine, clock: ManualClock, box: NoticeBox, inbox: Inbox
) -> None:
    notice_id = queue(engine, clock)
    clock.advance(dt.timedelta(seconds=3))
    mailer = smtp_mailer(engine, clock, box, inbox.url())

    assert mailer.send_due() == 1
    assert mailer.send_due() == 0  # sent is sent

    (envelope,) = inbox.envelopes
    assert envelope.mail_from == "no-reply@localhost"
    assert envelope.rcpt_tos == ["ada@example.com"]
    (message,) = inbox.messages
    assert message["Subject"] == "findata: welcome"
    assert message["From"] == "findata <no-reply@localhost>"
    assert message["To"] == "ada@example.com"
    assert message["Date"].datetime == clock.now()
    assert message["Message-ID"].startswith(f"<notice.{notice_id}.")
    assert message.get_content() == "Welcome to findata.\n"
    row = notice(engine, notice_id)
    assert as_utc(row.sent_at) == clock.now()
    assert row.attempts == 0
    assert row.last_error is None


# the test server lets AUTH through without TLS, as aiosmtpd warns: loopback only
@pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS:UserWarning")
def test_smtp_login_with_url_encoded_credentials(
    sqlite_engine: sa.Engine, clock: ManualClock, box: NoticeBox, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="findata.mail")
    login = f"{quote(USER, safe='')}:{quote(PASSWORD, safe='')}@"
    wrong = f"{quote(USER, safe='')}:{quote('not-it', safe='')}@"
    options = {"authenticator": authenticator, "auth_required": True, "auth_require_tls": False}
    with smtp_server(**options) as inbox:
        refused = queue(sqlite_engine, clock, "refused@example.com")
        assert smtp_mailer(sqlite_engine, clock, box, inbox.url(wrong)).send_due() == 0
        anonymous = queue(sqlite_engine, clock, "anonymous@example.com")
        assert smtp_mailer(sqlite_engine, clock, box, inbox.url()).send_due() == 0
        accepted = queue(sqlite_engine, clock, "ada@example.com")
        assert smtp_mailer(sqlite_engine, clock, box, inbox.url(login)).send_due() == 1

    assert [envelope.rcpt_tos for envelope in inbox.envelopes] == [["ada@example.com"]]
    assert notice(sqlite_engine, accepted).sent_at is not None
    for notice_id, error in ((refused, "SMTPAuthenticationError: 535"), (anonymous, "SMTP")):
        row = notice(sqlite_engine, notice_id)
        assert (row.sent_at, row.attempts) == (None, 1)
        assert row.last_error.startswith(error)
    assert notice(sqlite_engine, anonymous).last_error.startswith("SMTPSenderRefused: 530")
    assert "not-it" not in caplog.text


def test_a_sensitive_body_is_stored_encrypted_and_delivered_in_clear(
    engine: sa.Engine, clock: ManualClock, box: NoticeBox, inbox: Inbox
) -> None:
    notice_id = queue(engine, clock, kind="password_reset", body=SECRET_BODY, box=box)
    row = notice(engine, notice_id)
    assert row.sensitive
    assert SECRET_LINK not in row.body
    assert box.open(row.body) == SECRET_BODY

    assert smtp_mailer(engine, clock, box, inbox.url()).send_due() == 1

    (message,) = inbox.messages
    assert message.get_content() == SECRET_BODY
    assert SECRET_LINK not in notice(engine, notice_id).body  # still sealed once sent


def test_a_notice_queued_the_webhooks_way_is_due_at_once(
    engine: sa.Engine, clock: ManualClock, box: NoticeBox, inbox: Inbox
) -> None:
    # as webhooks/deliveries.py writes one: no sensitive, attempts, next_attempt_at
    with engine.begin() as connection:
        connection.execute(
            sa.insert(N).values(
                account_id="acc_1",
                email="ops@example.com",
                kind="webhook_endpoint_disabled",
                subject="A webhook endpoint was disabled",
                body="Every delivery failed.",
                created_at=clock.now(),
            )
        )

    assert smtp_mailer(engine, clock, box, inbox.url()).send_due() == 1

    (message,) = inbox.messages
    assert message["Subject"] == "A webhook endpoint was disabled"
    assert message.get_content() == "Every delivery failed.\n"


def test_without_an_smtp_url_messages_become_eml_files_sorted_by_time(
    sqlite_engine: sa.Engine, clock: ManualClock, tmp_path: Path
) -> None:
    settings = Settings(home=tmp_path / "home", smtp_url=None, mail_from="Findata <mail@fd.test>")
    mailer = Mailer.from_settings(settings, sqlite_engine, clock)
    assert isinstance(mailer.transport, EmlDirectory)
    box = NoticeBox.from_settings(settings)
    first = queue(sqlite_engine, clock, kind="password_reset", body=SECRET_BODY, box=box)
    assert mailer.send_due() == 1
    clock.advance(dt.timedelta(minutes=1))
    second = queue(sqlite_engine, clock, "bob@example.com", kind="welcome")
    third = queue(sqlite_engine, clock, "cy@example.com", kind="welcome")
    assert mailer.send_due() == 2

    mail = settings.home_dir / "mail"
    files = sorted(mail.iterdir())
    assert [path.name for path in files] == [
        f"20261122T093000Z-{first:010d}-password_reset.eml",
        f"20261122T093100Z-{second:010d}-welcome.eml",
        f"20261122T093100Z-{third:010d}-welcome.eml",
    ]
    messages = [BytesParser(policy=policy.default).parsebytes(p.read_bytes()) for p in files]
    assert [m["To"] for m in messages] == ["ada@example.com", "bob@example.com", "cy@example.com"]
    assert messages[0]["From"] == "Findata <mail@fd.test>"
    assert messages[0]["Subject"] == "findata: password_reset"
    assert messages[0]["Date"].datetime == START
    assert messages[0]["Message-ID"].endswith("@fd.test>")
    assert messages[0].get_content() == SECRET_BODY
    assert messages[1]["Date"].datetime == START + dt.timedelta(minutes=1)


def test_from_settings_sends_by_smtp_when_a_url_is_set(
    sqlite_engine: sa.Engine, clock: ManualClock, tmp_path: Path, inbox: Inbox
) -> None:
    settings = Settings(home=tmp_path / "home", smtp_url=inbox.url())
    mailer = Mailer.from_settings(settings, sqlite_engine, clock)
    assert isinstance(mailer.transport, SmtpTransport)
    queue(sqlite_engine, clock)
    assert mailer.send_due() == 1
    assert inbox.messages[0]["From"] == "findata <no-reply@localhost>"
    assert not (settings.home_dir / "mail").exists()


# --- failures ----------------------------------------------------------------------------------


def test_a_server_that_is_down_loses_nothing_and_is_retried_with_backoff(
    engine: sa.Engine, clock: ManualClock, box: NoticeBox, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="findata.mail")
    port = free_port()  # closed: connections are refused
    mailer = smtp_mailer(engine, clock, box, f"smtp://127.0.0.1:{port}")
    reset = queue(engine, clock, kind="password_reset", body=SECRET_BODY, box=box)
    welcome = queue(engine, clock, "bob@example.com")

    assert mailer.send_due() == 0
    row = notice(engine, reset)
    assert (row.attempts, row.sent_at) == (1, None)
    assert as_utc(row.next_attempt_at) == START + dt.timedelta(minutes=1)
    assert row.last_error.startswith("ConnectionRefusedError")
    # the server is down for every message: the pass stopped, the next one stays due
    assert notice(engine, welcome).attempts == 0
    assert mailer.send_due() == 0
    assert notice(engine, welcome).attempts == 1
    assert mailer.send_due() == 0  # nothing due before the backoff ends
    assert notice(engine, reset).attempts == 1

    clock.advance(dt.timedelta(minutes=1))
    assert mailer.send_due() + mailer.send_due() == 0
    for notice_id in (reset, welcome):
        row = notice(engine, notice_id)
        assert row.attempts == 2
        assert as_utc(row.next_attempt_at) == clock.now() + dt.timedelta(minutes=5)

    with smtp_server(port) as inbox:
        clock.advance(dt.timedelta(minutes=4))
        assert mailer.send_due() == 0  # still waiting
        clock.advance(dt.timedelta(minutes=1))
        assert mailer.send_due() == 2

    assert sorted(m.get_content() for m in inbox.messages) == sorted(
        [SECRET_BODY, "Welcome to findata.\n"]
    )
    for notice_id in (reset, welcome):
        row = notice(engine, notice_id)
        assert as_utc(row.sent_at) == clock.now()
        assert row.attempts == 2
        assert SECRET_LINK not in row.last_error
    assert "not sent, attempt 1 failed: ConnectionRefusedError" in caplog.text
    assert SECRET_LINK not in caplog.text


def test_a_failing_notice_backs_off_ever_longer_and_is_never_dropped(
    sqlite_engine: sa.Engine, clock: ManualClock, box: NoticeBox
) -> None:
    mailer = smtp_mailer(sqlite_engine, clock, box, f"smtp://127.0.0.1:{free_port()}")
    notice_id = queue(sqlite_engine, clock)
    waits = []
    for attempt in range(1, 9):
        assert mailer.send_due() == 0
        row = notice(sqlite_engine, notice_id)
        assert row.attempts == attempt
        waits.append(as_utc(row.next_attempt_at) - clock.now())
        clock.set(as_utc(row.next_attempt_at))
    minutes = [wait / dt.timedelta(minutes=1) for wait in waits]
    assert minutes == [1, 5, 30, 120, 360, 360, 360, 360]
    assert [retry_delay(n) for n in (1, 5, 100)] == [
        dt.timedelta(minutes=1),
        dt.timedelta(hours=6),
        dt.timedelta(hours=6),
    ]


def test_a_refused_recipient_fails_alone_and_the_pass_goes_on(
    sqlite_engine: sa.Engine, clock: ManualClock, box: NoticeBox, inbox: Inbox
) -> None:
    bounced = queue(sqlite_engine, clock, "bounce@example.com")
    delivered = queue(sqlite_engine, clock, "ada@example.com")

    assert smtp_mailer(sqlite_engine, clock, box, inbox.url()).send_due() == 1

    assert [envelope.rcpt_tos for envelope in inbox.envelopes] == [["ada@example.com"]]
    assert notice(sqlite_engine, delivered).sent_at is not None
    row = notice(sqlite_engine, bounced)
    assert (row.sent_at, row.attempts) == (None, 1)
    assert row.last_error.startswith("SMTPRecipientsRefused")


def test_a_body_under_another_key_stays_queued(
    sqlite_engine: sa.Engine, clock: ManualClock, box: NoticeBox, inbox: Inbox
) -> None:
    notice_id = queue(sqlite_engine, clock, kind="password_reset", body=SECRET_BODY, box=box)
    other_key = NoticeBox(Fernet.generate_key())

    assert smtp_mailer(sqlite_engine, clock, other_key, inbox.url()).send_due() == 0
    row = notice(sqlite_engine, notice_id)
    assert (row.sent_at, row.attempts) == (None, 1)
    assert "FINDATA_MAIL_SECRETS_KEY" in row.last_error

    clock.advance(dt.timedelta(minutes=1))
    assert smtp_mailer(sqlite_engine, clock, box, inbox.url()).send_due() == 1
    assert inbox.messages[0].get_content() == SECRET_BODY


def test_error_descriptions_are_short_and_never_quote_the_body() -> None:
    described = describe_error(ValueError(f"bad line in {SECRET_BODY}"), SECRET_BODY)
    assert SECRET_LINK not in described
    assert described == "ValueError: bad line in [body]"
    assert len(describe_error(RuntimeError("x" * 1000))) == 200


# --- several mailers ---------------------------------------------------------------------------


class Crash(BaseException):
    """Stands for the process dying in the middle of a send."""


class CrashingTransport:
    def send(self, message: EmailMessage) -> None:
        raise Crash


def test_a_claimed_notice_waits_out_the_lease_of_a_mailer_that_died(
    engine: sa.Engine, clock: ManualClock, box: NoticeBox, inbox: Inbox
) -> None:
    notice_id = queue(engine, clock)
    with pytest.raises(Crash):
        Mailer(engine, clock, box, CrashingTransport()).send_due()

    survivor = smtp_mailer(engine, clock, box, inbox.url())
    assert survivor.send_due() == 0  # leased by the dead one
    clock.advance(LEASE - dt.timedelta(seconds=1))
    assert survivor.send_due() == 0
    clock.advance(dt.timedelta(seconds=1))
    assert survivor.send_due() == 1
    assert len(inbox.envelopes) == 1
    assert notice(engine, notice_id).attempts == 0  # never failed, only interrupted


def test_two_mailers_on_one_database_send_each_message_once(
    engine: sa.Engine, clock: ManualClock, box: NoticeBox, inbox: Inbox
) -> None:
    queued = [queue(engine, clock, f"user{n}@example.com") for n in range(20)]
    # each SMTP exchange takes a while, so the two mailers' passes overlap
    mailers = [smtp_mailer(engine, clock, box, inbox.url()) for _ in range(2)]
    start = threading.Barrier(len(mailers))
    sent: list[int] = []

    def work(mailer: Mailer) -> None:
        start.wait()
        sent.append(mailer.send_due(limit=100))

    threads = [threading.Thread(target=work, args=(mailer,)) for mailer in mailers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert sum(sent) == len(queued)
    assert all(sent)  # the passes did overlap: both mailers took part
    notice_ids = sorted(int(message["X-Findata-Notice"]) for message in inbox.messages)
    assert notice_ids == queued
    with engine.connect() as connection:
        unsent = connection.scalar(sa.select(sa.func.count()).where(N.c.sent_at.is_(None)))
    assert unsent == 0


def test_run_sends_in_the_background_until_stopped(
    sqlite_engine: sa.Engine, clock: ManualClock, box: NoticeBox, inbox: Inbox
) -> None:
    mailer = smtp_mailer(sqlite_engine, clock, box, inbox.url())
    stop = threading.Event()
    thread = threading.Thread(target=mailer.run, args=(stop, 0.02))
    thread.start()
    try:
        queue(sqlite_engine, clock)
        wait_until(lambda: len(inbox.envelopes) == 1, "the notice was sent")
        queue(sqlite_engine, clock, "bob@example.com")
        wait_until(lambda: len(inbox.envelopes) == 2, "the second notice was sent")
    finally:
        stop.set()
        thread.join(timeout=10)
    assert not thread.is_alive()


# --- the SMTP URL ------------------------------------------------------------------------------


def test_smtp_urls_are_read_with_decoded_logins_and_default_ports() -> None:
    plain = SmtpTransport("smtp://relay.internal")
    assert (plain.host, plain.port, plain.implicit_tls, plain.user) == (
        "relay.internal",
        25,
        False,
        None,
    )
    secure = SmtpTransport(f"smtps://{quote(USER, safe='')}:{quote(PASSWORD, safe='')}@mx.test")
    assert (secure.port, secure.implicit_tls, secure.user) == (465, True, USER)
    assert PASSWORD not in repr(secure)
    assert SmtpTransport("smtp://mx.test:2525").port == 2525
    with pytest.raises(ValueError) as refused:
        SmtpTransport("https://user:hunter2@mx.test")
    assert "hunter2" not in str(refused.value)
