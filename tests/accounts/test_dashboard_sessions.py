"""Dashboard session records on real SQLite and PostgreSQL: only the token's hash is stored,
sign-out ends one session, a password change or reset and disabling the account end every
session of the account (at the same clock instant as the sign-in: no reliance on time moving),
sessions expire by the clock, and a secret held for one display is stored encrypted and is
taken once."""

from __future__ import annotations

import datetime as dt

import pytest
import sqlalchemy as sa
from pwdlib import PasswordHash
from pwdlib.hashers.argon2 import Argon2Hasher

from findata.accounts.logins import Logins
from findata.accounts.sessions import LIFETIME, SessionRecords, token_hash
from findata.accounts.store import AccountStore
from findata.accounts.tables import dashboard_sessions
from findata.clock import ManualClock

START = dt.datetime(2026, 11, 26, 8, 0, tzinfo=dt.UTC)
PASSWORD = "correct horse battery"
OTHER_PASSWORD = "staple of the stable"
IP = "203.0.113.9"
KEY = "fdk_" + "ab" * 16


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def sessions(engine: sa.Engine, clock: ManualClock) -> SessionRecords:
    return SessionRecords(engine, clock)


@pytest.fixture
def logins(engine: sa.Engine, clock: ManualClock) -> Logins:
    cheap = PasswordHash((Argon2Hasher(time_cost=1, memory_cost=8, parallelism=1),))
    return Logins(engine, clock, b"test-dashboard-secret", hasher=cheap)


def _rows(engine: sa.Engine) -> list[sa.Row]:
    with engine.connect() as connection:
        return list(connection.execute(sa.select(dashboard_sessions)))


def test_only_the_tokens_hash_is_stored_and_sign_out_ends_the_session(
    sessions: SessionRecords, store: AccountStore, engine: sa.Engine
) -> None:
    account = store.create_account("alice@example.com", "free")
    token = sessions.start(account.id)
    other = sessions.start(account.id)  # another browser of the same person
    assert len(token) >= 43 and token != other
    stored = {row.token_hash: row for row in _rows(engine)}
    assert set(stored) == {token_hash(token), token_hash(other)}
    assert not any(token in str(value) for row in stored.values() for value in row)
    assert sessions.account_of(token) == account.id

    sessions.end(token)
    assert sessions.account_of(token) is None
    assert sessions.account_of(other) == account.id  # only that session ended
    assert sessions.account_of("forged" + token) is None


def test_sessions_expire_by_the_clock(
    sessions: SessionRecords, store: AccountStore, clock: ManualClock, engine: sa.Engine
) -> None:
    account = store.create_account("alice@example.com", "free")
    token = sessions.start(account.id)
    clock.advance(LIFETIME - dt.timedelta(seconds=1))
    assert sessions.account_of(token) == account.id
    clock.advance(dt.timedelta(seconds=1))
    assert sessions.account_of(token) is None
    sessions.start(account.id)  # a new session sweeps the expired ones away
    assert token_hash(token) not in {row.token_hash for row in _rows(engine)}


def test_a_password_change_or_reset_ends_every_session_of_the_account(
    sessions: SessionRecords, logins: Logins
) -> None:
    alice = logins.sign_up("alice@example.com", PASSWORD)
    bob = logins.sign_up("bob@example.com", PASSWORD)
    laptop, phone = sessions.start(alice.account.id), sessions.start(alice.account.id)
    bobs = sessions.start(bob.account.id)
    # the clock does not move: ending sessions must not depend on time passing
    logins.change_password(alice.account.id, PASSWORD, OTHER_PASSWORD, IP)
    assert sessions.account_of(laptop) is None and sessions.account_of(phone) is None
    assert sessions.account_of(bobs) == bob.account.id

    after_change = sessions.start(alice.account.id)
    found = logins.reset_token("alice@example.com")
    assert found is not None
    logins.reset_password(found[1], "a third password here")
    assert sessions.account_of(after_change) is None
    assert sessions.account_of(bobs) == bob.account.id


def test_disabling_an_account_ends_its_sessions_and_enabling_brings_none_back(
    sessions: SessionRecords, store: AccountStore
) -> None:
    account = store.create_account("alice@example.com", "max")
    other = store.create_account("bob@example.com", "max")
    token, bobs = sessions.start(account.id), sessions.start(other.id)
    store.set_state(account.id, "disabled")
    assert sessions.account_of(token) is None
    store.set_state(account.id, "enabled")
    assert sessions.account_of(token) is None
    assert sessions.account_of(bobs) == other.id


def test_a_secret_held_for_one_display_is_encrypted_and_taken_once(
    sessions: SessionRecords, store: AccountStore, engine: sa.Engine
) -> None:
    account = store.create_account("alice@example.com", "max")
    token, other = sessions.start(account.id), sessions.start(account.id)
    sessions.hold_once(token, "new-key", {"key": KEY, "label": "laptop"})
    (held,) = [row.once for row in _rows(engine) if row.token_hash == token_hash(token)]
    assert held and KEY not in held and "laptop" not in held  # encrypted at rest
    assert sessions.take_once(other, "new-key") is None  # held for that session only
    assert sessions.take_once(token, "webhook-secret:ep_1") is None  # another page's
    assert sessions.take_once(token, "new-key") == {"key": KEY, "label": "laptop"}
    assert sessions.take_once(token, "new-key") is None  # once
    assert all(row.once is None for row in _rows(engine))

    sessions.hold_once(token, "new-key", {"key": KEY})
    sessions.end(token)  # signing out drops what was held with the session
    assert _rows(engine)[0].token_hash == token_hash(other) and len(_rows(engine)) == 1
