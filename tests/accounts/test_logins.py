"""Logins on real SQLite and PostgreSQL: sign-up and sign-in, the same refusal for a wrong
password and an unknown address, throttling per account e-mail and per IP by the clock, the
verification and reset links (expiry by a moved clock, a reset link working once), password
changes ending other sessions, and the password rules.

Most tests hash with cheap argon2 settings (the recommended ones take a third of a second per
hash); one test checks what the recommended settings store."""

from __future__ import annotations

import datetime as dt
import re

import pytest
import sqlalchemy as sa
from pwdlib import PasswordHash
from pwdlib.hashers.argon2 import Argon2Hasher

from findata.accounts.logins import (
    RESET_VALID,
    THROTTLE_WINDOW,
    VERIFICATION_VALID,
    WRONG_LOGIN,
    LoginRefused,
    Logins,
    PasswordRejected,
    Person,
    SignInThrottled,
    TokenInvalid,
)
from findata.accounts.sessions import SessionRecords
from findata.accounts.store import AccountError, AccountNotFound, AccountStore
from findata.accounts.tables import accounts, sign_in_attempts
from findata.clock import ManualClock, as_utc

START = dt.datetime(2026, 11, 22, 9, 30, tzinfo=dt.UTC)
SECRET = b"test-dashboard-secret"
PASSWORD = "correct horse battery"
OTHER_PASSWORD = "staple of the stable"
IP = "203.0.113.7"


class CountingHash(PasswordHash):
    """Cheap argon2 that counts the password checks made (a refusal must cost one check)."""

    def __init__(self) -> None:
        super().__init__((Argon2Hasher(time_cost=1, memory_cost=8, parallelism=1),))
        self.checks = 0

    def verify(self, password: str | bytes, hash: str | bytes) -> bool:
        self.checks += 1
        return super().verify(password, hash)

    def verify_and_update(
        self, password: str | bytes, hash: str | bytes
    ) -> tuple[bool, str | None]:
        self.checks += 1
        return super().verify_and_update(password, hash)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def hasher() -> CountingHash:
    return CountingHash()


@pytest.fixture
def logins(engine: sa.Engine, clock: ManualClock, hasher: CountingHash) -> Logins:
    return Logins(engine, clock, SECRET, hasher=hasher)


def _stored(engine: sa.Engine, account_id: str) -> sa.Row:
    with engine.connect() as connection:
        row = connection.execute(sa.select(accounts).where(accounts.c.id == account_id)).first()
    assert row is not None
    return row


def _attempts(engine: sa.Engine) -> list[tuple[str, dt.datetime, bool]]:
    query = sa.select(
        sign_in_attempts.c.subject, sign_in_attempts.c.at, sign_in_attempts.c.succeeded
    ).order_by(sign_in_attempts.c.id)
    with engine.connect() as connection:
        return [(row.subject, as_utc(row.at), row.succeeded) for row in connection.execute(query)]


def _refused(logins: Logins, email: str, password: str, ip: str = IP) -> str:
    with pytest.raises(LoginRefused) as refused:
        logins.sign_in(email, password, ip)
    return str(refused.value)


def _throttled(logins: Logins, email: str, password: str, ip: str = IP) -> SignInThrottled:
    with pytest.raises(SignInThrottled) as throttled:
        logins.sign_in(email, password, ip)
    return throttled.value


# signing up and in


def test_sign_up_then_sign_in(logins: Logins, engine: sa.Engine) -> None:
    person = logins.sign_up("  Alice@Example.COM ", PASSWORD)
    assert person.account.email == "alice@example.com"
    assert person.account.plan == "free" and person.account.enabled
    assert person.account.created_at == START
    assert person.has_password and not person.email_verified
    stored = _stored(engine, person.account.id)
    assert as_utc(stored.password_changed_at) == START
    assert stored.email_verified_at is None
    assert stored.password_hash.startswith("$argon2id$")
    assert PASSWORD not in stored.password_hash

    signed_in = logins.sign_in("ALICE@example.com", PASSWORD, IP)
    assert signed_in == person == logins.person(person.account.id)
    assert PASSWORD not in repr(signed_in)
    assert _attempts(engine) == [
        ("email:alice@example.com", START, True),
        (f"ip:{IP}", START, True),
    ]


def test_sign_up_refusals_write_nothing(logins: Logins, engine: sa.Engine) -> None:
    with pytest.raises(AccountError, match="not an e-mail address"):
        logins.sign_up("alice", PASSWORD)
    with pytest.raises(PasswordRejected):
        logins.sign_up("alice@example.com", "short")
    with engine.connect() as connection:
        assert connection.execute(sa.select(sa.func.count()).select_from(accounts)).scalar() == 0
    logins.sign_up("alice@example.com", PASSWORD)
    with pytest.raises(AccountError, match="exists already"):
        logins.sign_up("ALICE@example.com", OTHER_PASSWORD)


def test_recommended_settings_store_an_argon2id_hash(engine: sa.Engine, clock: ManualClock) -> None:
    logins = Logins(engine, clock, SECRET)
    person = logins.sign_up("alice@example.com", PASSWORD)
    stored = _stored(engine, person.account.id).password_hash
    assert stored.startswith("$argon2id$v=19$m=65536,t=3,p=4$")
    assert logins.sign_in("alice@example.com", PASSWORD, IP) == person
    assert _stored(engine, person.account.id).password_hash == stored  # no rehash needed


def test_a_weaker_hash_is_upgraded_at_sign_in(
    logins: Logins, engine: sa.Engine, clock: ManualClock
) -> None:
    person = logins.sign_up("alice@example.com", PASSWORD)
    weak = _stored(engine, person.account.id).password_hash
    assert "m=8,t=1,p=1" in weak
    clock.advance(dt.timedelta(minutes=5))
    recommended = Logins(engine, clock, SECRET)
    # an upgrade is no password change: the session stamp stays
    assert recommended.sign_in("alice@example.com", PASSWORD, IP) == person
    upgraded = _stored(engine, person.account.id)
    assert upgraded.password_hash.startswith("$argon2id$v=19$m=65536,t=3,p=4$")
    assert as_utc(upgraded.password_changed_at) == START
    assert recommended.sign_in("alice@example.com", PASSWORD, IP) == person


def test_wrong_password_and_unknown_address_are_refused_alike(
    logins: Logins, store: AccountStore, hasher: CountingHash, engine: sa.Engine
) -> None:
    logins.sign_up("alice@example.com", PASSWORD)
    store.create_account("bob@example.com", "pro")  # no password yet (made by the CLI)
    hasher.checks = 0
    # every refusal costs one password check, so its timing tells nothing either
    for email, password in (
        ("alice@example.com", OTHER_PASSWORD),
        ("alice@example.com", ""),
        ("nobody@example.com", PASSWORD),
        ("bob@example.com", PASSWORD),
        ("not an address", PASSWORD),
    ):
        assert _refused(logins, email, password) == WRONG_LOGIN == "Wrong e-mail or password."
    assert hasher.checks == 5
    subjects = [subject for subject, _, succeeded in _attempts(engine) if not succeeded]
    assert subjects.count(f"ip:{IP}") == 5
    assert "email:nobody@example.com" in subjects  # unknown addresses throttle like known ones


def test_a_disabled_account_signs_in(logins: Logins, store: AccountStore) -> None:
    person = logins.sign_up("alice@example.com", PASSWORD)
    store.set_state(person.account.id, "disabled")
    signed_in = logins.sign_in("alice@example.com", PASSWORD, IP)
    assert signed_in.account.state == "disabled" and not signed_in.account.enabled


def test_unknown_account_is_not_found(logins: Logins) -> None:
    with pytest.raises(AccountNotFound):
        logins.person("acct_0000000000000000")
    with pytest.raises(AccountNotFound):
        logins.verification_token("acct_0000000000000000")


# throttling


def test_five_failures_throttle_the_account(
    logins: Logins, clock: ManualClock, hasher: CountingHash, engine: sa.Engine
) -> None:
    logins.sign_up("alice@example.com", PASSWORD)
    first_failure = clock.now()
    for attempt in range(5):  # one a minute, each from another address
        _refused(logins, "alice@example.com", OTHER_PASSWORD, ip=f"198.51.100.{attempt}")
        clock.advance(dt.timedelta(minutes=1))
    recorded, checks = len(_attempts(engine)), hasher.checks

    # five minutes after the first failure: it leaves the window in ten
    throttled = _throttled(logins, "Alice@example.com", PASSWORD, ip="192.0.2.1")
    assert throttled.retry_after_seconds == 600
    assert "wait 10 minutes" in str(throttled)
    clock.advance(dt.timedelta(minutes=9, seconds=30))
    throttled = _throttled(logins, "alice@example.com", PASSWORD)
    assert throttled.retry_after_seconds == 30
    assert "wait 1 minute " in str(throttled)
    # throttled attempts check no password and are not recorded
    assert hasher.checks == checks
    assert len(_attempts(engine)) == recorded

    clock.set(first_failure + THROTTLE_WINDOW)
    assert logins.sign_in("alice@example.com", PASSWORD, IP).account.email == "alice@example.com"


def test_an_unknown_address_is_throttled_like_a_known_one(
    logins: Logins, clock: ManualClock
) -> None:
    for attempt in range(5):
        _refused(logins, "nobody@example.com", PASSWORD, ip=f"198.51.100.{attempt}")
        clock.advance(dt.timedelta(seconds=10))
    assert _throttled(logins, "nobody@example.com", PASSWORD).retry_after_seconds == 900 - 50


def test_a_success_clears_the_accounts_failures(logins: Logins, clock: ManualClock) -> None:
    logins.sign_up("alice@example.com", PASSWORD)
    for _ in range(4):
        _refused(logins, "alice@example.com", OTHER_PASSWORD)
        clock.advance(dt.timedelta(seconds=10))
    logins.sign_in("alice@example.com", PASSWORD, IP)
    clock.advance(dt.timedelta(seconds=10))
    for _ in range(4):  # four since the success: still allowed
        _refused(logins, "alice@example.com", OTHER_PASSWORD)
        clock.advance(dt.timedelta(seconds=10))
    _refused(logins, "alice@example.com", OTHER_PASSWORD)
    clock.advance(dt.timedelta(seconds=10))
    # the oldest failure counted is the first after the success (at 50 s), now it is 100 s
    assert _throttled(logins, "alice@example.com", PASSWORD).retry_after_seconds == 900 - 50


def test_twenty_failures_throttle_the_ip(logins: Logins, clock: ManualClock) -> None:
    logins.sign_up("alice@example.com", PASSWORD)
    for attempt in range(19):
        _refused(logins, f"user{attempt}@example.com", PASSWORD)
        clock.advance(dt.timedelta(seconds=10))
    # a success from the IP does not clear the IP's failures
    logins.sign_in("alice@example.com", PASSWORD, IP)
    _refused(logins, "user19@example.com", PASSWORD)
    clock.advance(dt.timedelta(seconds=10))

    throttled = _throttled(logins, "alice@example.com", PASSWORD)
    assert throttled.retry_after_seconds == 900 - 200
    assert "wait 12 minutes" in str(throttled)
    # other addresses are not affected
    assert logins.sign_in("alice@example.com", PASSWORD, "192.0.2.1").has_password
    clock.advance(dt.timedelta(seconds=699))
    assert _throttled(logins, "alice@example.com", PASSWORD).retry_after_seconds == 1
    clock.advance(dt.timedelta(seconds=1))
    assert logins.sign_in("alice@example.com", PASSWORD, IP).has_password


def test_attempts_older_than_a_day_are_pruned(
    logins: Logins, clock: ManualClock, engine: sa.Engine
) -> None:
    _refused(logins, "nobody@example.com", PASSWORD)
    clock.advance(dt.timedelta(hours=25))
    _refused(logins, "nobody@example.com", PASSWORD)
    assert [at for _, at, _ in _attempts(engine)] == [clock.now(), clock.now()]


# the verification link


def test_verification_link_confirms_the_address_once(
    logins: Logins, clock: ManualClock, engine: sa.Engine
) -> None:
    person = logins.sign_up("alice@example.com", PASSWORD)
    token = logins.verification_token(person.account.id)
    clock.advance(dt.timedelta(hours=47))
    verified = logins.verify_email(token)
    assert verified.email_verified and verified.account == person.account
    assert as_utc(_stored(engine, person.account.id).email_verified_at) == clock.now()
    # the same link again: still fine, and the first confirmation time stays
    clock.advance(dt.timedelta(minutes=30))
    assert logins.verify_email(token) == verified
    assert as_utc(_stored(engine, person.account.id).email_verified_at) == START + dt.timedelta(
        hours=47
    )


def test_verification_link_expires_after_48_hours(logins: Logins, clock: ManualClock) -> None:
    person = logins.sign_up("alice@example.com", PASSWORD)
    token = logins.verification_token(person.account.id)
    clock.advance(VERIFICATION_VALID + dt.timedelta(hours=1))
    with pytest.raises(TokenInvalid, match="expired"):
        logins.verify_email(token)
    assert not logins.person(person.account.id).email_verified


def test_bad_links_are_refused(logins: Logins, engine: sa.Engine, clock: ManualClock) -> None:
    person = logins.sign_up("alice@example.com", PASSWORD)
    token = logins.verification_token(person.account.id)
    found = logins.reset_token("alice@example.com")
    assert found is not None
    reset_token = found[1]
    foreign = Logins(engine, clock, b"another-secret").verification_token(person.account.id)
    tampered = token[:-2] + ("AA" if not token.endswith("AA") else "BB")
    for bad in ("", "garbage", tampered, foreign, reset_token):
        with pytest.raises(TokenInvalid, match="not valid"):
            logins.verify_email(bad)
    # and a verification link resets no password
    with pytest.raises(TokenInvalid, match="not valid"):
        logins.reset_password(token, OTHER_PASSWORD)
    assert not logins.person(person.account.id).email_verified


# the reset link


def test_reset_link_sets_a_new_password_once(
    logins: Logins, clock: ManualClock, engine: sa.Engine
) -> None:
    person = logins.sign_up("alice@example.com", PASSWORD)
    sessions = SessionRecords(engine, clock)
    signed_in = sessions.start(person.account.id)
    found = logins.reset_token("ALICE@example.com")
    assert found is not None
    account, token = found
    assert account == person.account
    clock.advance(dt.timedelta(minutes=59))
    reset = logins.reset_password(token, OTHER_PASSWORD)
    assert reset.email_verified  # the link was read at the address
    assert sessions.account_of(signed_in) is None  # every session ends
    assert as_utc(_stored(engine, person.account.id).password_changed_at) == clock.now()
    _refused(logins, "alice@example.com", PASSWORD)
    assert logins.sign_in("alice@example.com", OTHER_PASSWORD, IP) == reset
    with pytest.raises(TokenInvalid, match="used already"):
        logins.reset_password(token, "a third password here")


def test_reset_link_expires_after_an_hour(logins: Logins, clock: ManualClock) -> None:
    logins.sign_up("alice@example.com", PASSWORD)
    found = logins.reset_token("alice@example.com")
    assert found is not None
    clock.advance(RESET_VALID + dt.timedelta(minutes=1))
    with pytest.raises(TokenInvalid, match="expired"):
        logins.reset_password(found[1], OTHER_PASSWORD)
    assert logins.sign_in("alice@example.com", PASSWORD, IP).has_password


def test_reset_link_stops_working_after_any_password_change(
    logins: Logins, clock: ManualClock
) -> None:
    person = logins.sign_up("alice@example.com", PASSWORD)
    found = logins.reset_token("alice@example.com")
    assert found is not None
    # a refused new password changes nothing: the link keeps working
    with pytest.raises(PasswordRejected):
        logins.reset_password(found[1], "short")
    clock.advance(dt.timedelta(minutes=1))
    logins.change_password(person.account.id, PASSWORD, OTHER_PASSWORD, IP)
    with pytest.raises(TokenInvalid, match="used already"):
        logins.reset_password(found[1], "a third password here")


def test_reset_for_an_account_without_a_password(
    logins: Logins, store: AccountStore, clock: ManualClock
) -> None:
    account = store.create_account("bob@example.com", "max")
    assert not logins.person(account.id).has_password
    found = logins.reset_token("bob@example.com")
    assert found is not None and found[0] == account
    clock.advance(dt.timedelta(minutes=10))
    person = logins.reset_password(found[1], PASSWORD)
    assert person.has_password and person.email_verified
    assert logins.sign_in("bob@example.com", PASSWORD, IP) == person
    with pytest.raises(TokenInvalid, match="used already"):
        logins.reset_password(found[1], OTHER_PASSWORD)


def test_no_reset_link_without_an_account(logins: Logins) -> None:
    assert logins.reset_token("nobody@example.com") is None
    assert logins.reset_token("not an address") is None


# changing the password


def test_change_password_ends_other_sessions(
    logins: Logins, clock: ManualClock, engine: sa.Engine
) -> None:
    person = logins.sign_up("alice@example.com", PASSWORD)
    other = logins.sign_up("bob@example.com", PASSWORD)
    sessions = SessionRecords(engine, clock)
    alices, bobs = sessions.start(person.account.id), sessions.start(other.account.id)
    clock.advance(dt.timedelta(days=3))
    with pytest.raises(LoginRefused, match=re.escape(WRONG_LOGIN)):
        logins.change_password(person.account.id, OTHER_PASSWORD, "a third password here", IP)
    assert logins.person(person.account.id) == person
    assert sessions.account_of(alices) == person.account.id  # a refusal ends nothing

    changed = logins.change_password(person.account.id, PASSWORD, OTHER_PASSWORD, IP)
    assert sessions.account_of(alices) is None
    assert sessions.account_of(bobs) == other.account.id
    assert as_utc(_stored(engine, person.account.id).password_changed_at) == clock.now()
    _refused(logins, "alice@example.com", PASSWORD)
    assert logins.sign_in("alice@example.com", OTHER_PASSWORD, IP) == changed
    assert logins.person(other.account.id) == other


def test_wrong_current_passwords_are_throttled_as_failed_sign_ins(
    logins: Logins, clock: ManualClock, hasher: CountingHash, engine: sa.Engine
) -> None:
    """A stolen session guessing the password through the change form meets the sign-in
    throttle: five wrong current passwords lock both, and sign-in failures count here."""
    person = logins.sign_up("alice@example.com", PASSWORD)
    account = person.account.id
    for attempt in range(4):
        with pytest.raises(LoginRefused):
            logins.change_password(account, f"guess number {attempt}", OTHER_PASSWORD, IP)
    _refused(logins, "alice@example.com", OTHER_PASSWORD, ip="192.0.2.77")  # the fifth failure
    checks = hasher.checks
    with pytest.raises(SignInThrottled) as throttled:
        logins.change_password(account, PASSWORD, OTHER_PASSWORD, "192.0.2.99")
    assert throttled.value.retry_after_seconds == THROTTLE_WINDOW.total_seconds()
    assert hasher.checks == checks  # refused without looking at the password
    _throttled(logins, "alice@example.com", PASSWORD)
    assert logins.person(account) == person  # nothing changed

    clock.advance(THROTTLE_WINDOW)
    changed = logins.change_password(account, PASSWORD, OTHER_PASSWORD, IP)
    assert changed.account == person.account
    assert _attempts(engine)[-2:] == [
        ("email:alice@example.com", clock.now(), True),
        (f"ip:{IP}", clock.now(), True),
    ]


def test_change_password_of_an_account_without_one_is_refused(
    logins: Logins, store: AccountStore
) -> None:
    account = store.create_account("bob@example.com", "pro")
    with pytest.raises(LoginRefused):
        logins.change_password(account.id, "", PASSWORD, IP)


# the rules


@pytest.mark.parametrize(
    ("password", "reason"),
    [
        ("", "at least 10 characters"),
        ("123456789", "at least 10 characters"),
        ("x" * 1025, "at most 1024 characters"),
        ("alice@example.com", "not be your e-mail address"),
        (" ALICE@Example.com ", "not be your e-mail address"),
    ],
)
def test_password_rules(logins: Logins, password: str, reason: str) -> None:
    with pytest.raises(PasswordRejected, match=reason):
        logins.sign_up("alice@example.com", password)
    person = logins.sign_up("alice@example.com", "1234567890")
    with pytest.raises(PasswordRejected, match=reason):
        logins.change_password(person.account.id, "1234567890", password, IP)
    found = logins.reset_token("alice@example.com")
    assert found is not None
    with pytest.raises(PasswordRejected, match=reason):
        logins.reset_password(found[1], password)


def test_the_longest_password_is_accepted(logins: Logins) -> None:
    longest = "x" * 1024
    logins.sign_up("alice@example.com", longest)
    assert isinstance(logins.sign_in("alice@example.com", longest, IP), Person)
    _refused(logins, "alice@example.com", longest + "x")
