"""People on the web dashboard: sign-up and sign-in with e-mail and password, the e-mail
verification and password-reset links, password changes.

Passwords are stored as argon2 hashes only. Failed sign-ins are throttled per account e-mail and
per IP address from ``sign_in_attempts``. The links are signed with the dashboard's secret and
expire by the injectable clock; a reset link is bound to the password it was issued under, so it
works once. Setting a password (a change or a reset) ends every dashboard session of the account
(``accounts/sessions.py``); the dashboard then starts a new one for the person who set it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import math
import secrets
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from itsdangerous import BadSignature, TimestampSigner, URLSafeTimedSerializer
from pwdlib import PasswordHash
from pwdlib.hashers.argon2 import Argon2Hasher

from findata.accounts.sessions import end_sessions
from findata.accounts.store import (
    Account,
    AccountError,
    AccountNotFound,
    AccountStore,
    normalised_email,
)
from findata.accounts.tables import accounts, sign_in_attempts
from findata.clock import Clock, as_utc

#: the plan of an account made by signing up
SIGN_UP_PLAN = "free"
MIN_PASSWORD = 10
#: argon2 takes any length; the cap keeps a huge form field from costing much
MAX_PASSWORD = 1024

#: failed sign-ins count for this long
THROTTLE_WINDOW = dt.timedelta(minutes=15)
#: failures allowed in the window per account e-mail (failures before its last success do not
#: count) and per IP address (shared by everyone behind one NAT, hence higher)
MAX_EMAIL_FAILURES = 5
MAX_IP_FAILURES = 20
#: attempts older than this are deleted: they no longer count for anything
KEEP_ATTEMPTS = dt.timedelta(days=1)

VERIFICATION_VALID = dt.timedelta(hours=48)
RESET_VALID = dt.timedelta(hours=1)
#: a link stamped this far ahead of our clock still counts (another host's clock may be ahead)
CLOCK_SKEW = dt.timedelta(minutes=5)

# different salts: a verification link is never a reset link, and neither is a session cookie
VERIFY_SALT = "findata.dashboard.verify-email"
RESET_SALT = "findata.dashboard.reset-password"

WRONG_LOGIN = "Wrong e-mail or password."

#: argon2id with the library's recommended settings; a stored hash of weaker settings is
#: upgraded at the next sign-in
DEFAULT_HASHER = PasswordHash((Argon2Hasher(),))


class LoginRefused(AccountError):
    """A wrong e-mail or password (the same message whether or not the account exists)."""

    def __init__(self) -> None:
        super().__init__(WRONG_LOGIN)


class SignInThrottled(AccountError):
    """Too many failed sign-ins; ``retry_after_seconds`` says when the next attempt counts."""

    def __init__(self, retry_after_seconds: int) -> None:
        self.retry_after_seconds = retry_after_seconds
        minutes = max(1, math.ceil(retry_after_seconds / 60))
        wait = "1 minute" if minutes == 1 else f"{minutes} minutes"
        super().__init__(f"Too many failed sign-in attempts. Please wait {wait} and try again.")


class TokenInvalid(AccountError):
    """A link that is forged, expired, used already, or meant for something else."""


class PasswordRejected(AccountError):
    """A new password that breaks the rules; the message says which."""


@dataclass(frozen=True)
class Person:
    """An account as the dashboard sees it."""

    account: Account
    email_verified: bool
    has_password: bool


class Logins:
    """Sign-up, sign-in and the e-mail links on one control-plane engine, with time from
    ``clock`` and links and stamps signed with ``secret``. ``hasher`` is for tests, which
    use cheaper argon2 settings."""

    def __init__(
        self, engine: sa.Engine, clock: Clock, secret: bytes, *, hasher: PasswordHash | None = None
    ) -> None:
        self.engine = engine
        self.clock = clock
        self._secret = secret
        self._hasher = hasher or DEFAULT_HASHER
        self._dummy: str | None = None
        self._accounts = AccountStore(engine, clock)
        self._verify_links = _serializer(secret, VERIFY_SALT, clock)
        self._reset_links = _serializer(secret, RESET_SALT, clock)

    # signing up and in

    def sign_up(self, email: str, password: str) -> Person:
        """A new Free account with ``password`` (the e-mail is not verified yet). AccountError
        when the e-mail is not an address or has an account already; PasswordRejected."""
        email = normalised_email(email)
        check_password(password, email)
        # hash before creating the account: the slow part is not between the two writes
        password_hash = self._hasher.hash(password)
        account = self._accounts.create_account(email, SIGN_UP_PLAN)
        with self.engine.begin() as connection:
            _set_password(connection, account.id, password_hash, self.clock.now())
            return self._person(_row(connection, account.id))

    def sign_in(self, email: str, password: str, ip: str) -> Person:
        """The person with ``email`` and ``password``, the attempt recorded. SignInThrottled
        (without looking at the password) after too many recent failures for the e-mail or the
        IP; LoginRefused otherwise when anything is wrong. A disabled account signs in: the
        dashboard shows it why it is disabled."""
        now = self.clock.now()
        try:
            address: str | None = normalised_email(email)
        except AccountError:
            address = None  # no account has it; only the IP's failures count
        subjects = _subjects(address, ip)
        with self.engine.connect() as connection:
            wait = _throttled_for(connection, subjects, now)
            row = _row_by_email(connection, address) if address is not None else None
        if wait is not None:
            raise SignInThrottled(wait)

        new_hash = None
        if row is not None and row.password_hash is not None and len(password) <= MAX_PASSWORD:
            ok, new_hash = self._hasher.verify_and_update(password, row.password_hash)
        else:
            # the same work as a real check, so the answer's timing does not tell whether the
            # address has an account (or a password)
            self._hasher.verify(password[:MAX_PASSWORD], self._dummy_hash())
            ok = False

        with self.engine.begin() as connection:
            _record_attempt(connection, subjects, now, succeeded=ok)
            if ok and new_hash is not None:
                # stronger hash settings than the stored hash's: upgrade it. Not a password
                # change: sessions and the password-changed time stay as they are
                connection.execute(
                    accounts.update()
                    .where(
                        accounts.c.id == row.id,
                        accounts.c.password_hash == row.password_hash,
                    )
                    .values(password_hash=new_hash)
                )
        if not ok:
            raise LoginRefused()
        return self._person(row)

    def person(self, account_id: str) -> Person:
        """The person of account ``account_id`` (AccountNotFound when there is none)."""
        with self.engine.connect() as connection:
            return self._person(_row(connection, account_id))

    # the e-mail links

    def verification_token(self, account_id: str) -> str:
        """The token of the e-mail's verification link, valid for 48 hours."""
        row = self._row(account_id)
        return self._verify_links.dumps({"a": row.id, "e": row.email})

    def verify_email(self, token: str) -> Person:
        """Mark the address of the token's account verified (once: the same link again changes
        nothing); TokenInvalid when the link is bad or expired."""
        data = self._load(self._verify_links, token, VERIFICATION_VALID, "verification")
        with self.engine.begin() as connection:
            row = _row_or_none(connection, data.get("a"))
            # the address the link was sent to must still be the account's
            if row is None or row.email != data.get("e"):
                raise TokenInvalid(_INVALID.format(kind="verification"))
            connection.execute(
                accounts.update()
                .where(accounts.c.id == row.id, accounts.c.email_verified_at.is_(None))
                .values(email_verified_at=self.clock.now())
            )
            return self._person(_row(connection, row.id))

    def reset_token(self, email: str) -> tuple[Account, str] | None:
        """The account with ``email`` and the token of its password-reset link (valid for one
        hour, once); None when no account has that address (or it is not an address). Also for
        an account that has no password yet."""
        try:
            address = normalised_email(email)
        except AccountError:
            return None
        with self.engine.connect() as connection:
            row = _row_by_email(connection, address)
        if row is None:
            return None
        token = self._reset_links.dumps({"a": row.id, "p": self._password_state(row)})
        return _account(row), token

    def reset_password(self, token: str, new_password: str) -> Person:
        """Set a new password with a reset link's token, which then stops working (as does
        every session); the address counts as verified, since the link was read there.
        TokenInvalid, PasswordRejected (the link keeps working then)."""
        data = self._load(self._reset_links, token, RESET_VALID, "reset")
        used = TokenInvalid(
            "This reset link was used already, or the password changed since it was sent. "
            "Ask for a new link."
        )
        with self.engine.connect() as connection:
            row = _row_or_none(connection, data.get("a"))
        if row is None:
            raise TokenInvalid(_INVALID.format(kind="reset"))
        if not hmac.compare_digest(self._password_state(row), str(data.get("p"))):
            raise used
        check_password(new_password, row.email)
        password_hash = self._hasher.hash(new_password)
        now = self.clock.now()
        with self.engine.begin() as connection:
            # under the row's lock, check again: two uses of one link racing, one wins
            locked = _locked_row(connection, row.id)
            if not hmac.compare_digest(self._password_state(locked), str(data.get("p"))):
                raise used
            _set_password(connection, row.id, password_hash, now)
            connection.execute(
                accounts.update()
                .where(accounts.c.id == row.id, accounts.c.email_verified_at.is_(None))
                .values(email_verified_at=now)
            )
            return self._person(_row(connection, row.id))

    # the signed-in person

    def change_password(self, account_id: str, current: str, new: str, ip: str) -> Person:
        """Replace the password after checking the current one (LoginRefused when it is wrong;
        PasswordRejected). Sessions of the old password end. The check is a sign-in attempt
        of the account's address from ``ip``, throttled and recorded as one (SignInThrottled):
        a stolen session must not be a way to guess the password that sign-in throttles."""
        now = self.clock.now()
        row = self._row(account_id)
        subjects = _subjects(row.email, ip)
        with self.engine.connect() as connection:
            wait = _throttled_for(connection, subjects, now)
        if wait is not None:
            raise SignInThrottled(wait)
        check_password(new, row.email)
        if row.password_hash is None or len(current) > MAX_PASSWORD:
            self._hasher.verify(current[:MAX_PASSWORD], self._dummy_hash())
            ok = False
        else:
            ok = self._hasher.verify(current, row.password_hash)
        if not ok:
            with self.engine.begin() as connection:
                _record_attempt(connection, subjects, now, succeeded=False)
            raise LoginRefused()
        password_hash = self._hasher.hash(new)
        with self.engine.begin() as connection:
            # the password checked must still be the one stored (no change or reset between)
            if _locked_row(connection, account_id).password_hash != row.password_hash:
                raise LoginRefused()
            _record_attempt(connection, subjects, now, succeeded=True)
            _set_password(connection, account_id, password_hash, now)
            return self._person(_row(connection, account_id))

    # helpers

    def _dummy_hash(self) -> str:
        """A hash of no one's password, with the settings of real ones (made on first use)."""
        if self._dummy is None:
            self._dummy = self._hasher.hash(secrets.token_urlsafe(16))
        return self._dummy

    def _row(self, account_id: str) -> sa.Row:
        with self.engine.connect() as connection:
            return _row(connection, account_id)

    def _person(self, row: sa.Row) -> Person:
        return Person(
            account=_account(row),
            email_verified=row.email_verified_at is not None,
            has_password=row.password_hash is not None,
        )

    def _password_state(self, row: sa.Row) -> str:
        """A short digest of the account's password as it is now: any change, a reset included,
        changes it. Keyed, so the link shows nothing about the hash."""
        return self._mac(
            "password-state",
            row.id,
            row.password_hash or "",
            _time_text(row.password_changed_at),
            length=16,
        )

    def _mac(self, purpose: str, *parts: str, length: int = 32) -> str:
        """A keyed digest of ``parts`` for ``purpose``, as ``length`` hex digits."""
        message = "\0".join((purpose, *parts)).encode()
        return hmac.new(self._secret, message, hashlib.sha256).hexdigest()[:length]

    def _load(
        self, serializer: URLSafeTimedSerializer, token: str, valid: dt.timedelta, kind: str
    ) -> dict[str, Any]:
        """The token's payload, checked: signed by us for this purpose and issued less than
        ``valid`` ago by our clock."""
        try:
            data, signed_at = serializer.loads(token, return_timestamp=True)
        except BadSignature as exc:
            raise TokenInvalid(_INVALID.format(kind=kind)) from exc
        age = self.clock.now() - signed_at
        if age > valid:
            raise TokenInvalid(
                f"This {kind} link has expired. Ask for a new one: links work for "
                f"{_duration_text(valid)}."
            )
        if age < -CLOCK_SKEW or not isinstance(data, dict):
            raise TokenInvalid(_INVALID.format(kind=kind))
        return data


_INVALID = "This {kind} link is not valid. Check that you copied all of it, or ask for a new one."


def check_password(password: str, email: str) -> None:
    """Refuse a new password that breaks the rules (PasswordRejected, in plain words)."""
    if len(password) < MIN_PASSWORD:
        raise PasswordRejected(f"Your password needs at least {MIN_PASSWORD} characters.")
    if len(password) > MAX_PASSWORD:
        raise PasswordRejected(f"Your password can have at most {MAX_PASSWORD} characters.")
    if password.strip().lower() == email.strip().lower():
        raise PasswordRejected("Your password must not be your e-mail address.")


class _ClockSigner(TimestampSigner):
    """Stamps links with the injectable clock's time, not the process's (tests move a clock)."""

    def __init__(self, *args: Any, clock: Clock, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clock = clock

    def get_timestamp(self) -> int:
        return int(self._clock.now().timestamp())


def _serializer(secret: bytes, salt: str, clock: Clock) -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(
        secret, salt=salt, signer=_ClockSigner, signer_kwargs={"clock": clock}
    )


def _subjects(address: str | None, ip: str) -> dict[str, str]:
    """The throttling subjects of an attempt: ``email`` (when the address is one) and ``ip``."""
    subjects = {}
    # longer than any stored address: no account, and no room in the subject column
    if address is not None and len(address) <= accounts.c.email.type.length:
        subjects["email"] = f"email:{address}"
    subjects["ip"] = f"ip:{ip[:200]}"
    return subjects


def _throttled_for(
    connection: sa.Connection, subjects: dict[str, str], now: dt.datetime
) -> int | None:
    """Seconds until an attempt may be made again, or None when it may be made now."""
    window_start = now - THROTTLE_WINDOW
    waits = []
    ip_failures = _failures_since(connection, subjects["ip"], window_start, MAX_IP_FAILURES)
    if len(ip_failures) >= MAX_IP_FAILURES:
        waits.append(ip_failures[-1])
    if "email" in subjects:
        subject = subjects["email"]
        # a success clears the account's earlier failures (the IP's stay)
        last_success = connection.execute(
            sa.select(sa.func.max(sign_in_attempts.c.id)).where(
                sign_in_attempts.c.subject == subject, sign_in_attempts.c.succeeded.is_(True)
            )
        ).scalar_one()
        failures = _failures_since(
            connection, subject, window_start, MAX_EMAIL_FAILURES, after_id=last_success
        )
        if len(failures) >= MAX_EMAIL_FAILURES:
            waits.append(failures[-1])
    if not waits:
        return None
    # the attempt may be made once enough failures have left the window, for every subject
    free_at = max(waits) + THROTTLE_WINDOW
    return max(1, math.ceil((free_at - now).total_seconds()))


def _failures_since(
    connection: sa.Connection,
    subject: str,
    since: dt.datetime,
    limit: int,
    after_id: int | None = None,
) -> list[dt.datetime]:
    """The times of the newest ``limit`` failures of ``subject`` after ``since``, newest first:
    the last one leaving the window brings the count under the limit."""
    query = (
        sa.select(sign_in_attempts.c.at)
        .where(
            sign_in_attempts.c.subject == subject,
            sign_in_attempts.c.succeeded.is_(False),
            sign_in_attempts.c.at > since,
        )
        .order_by(sign_in_attempts.c.at.desc())
        .limit(limit)
    )
    if after_id is not None:
        query = query.where(sign_in_attempts.c.id > after_id)
    return [as_utc(at) for at in connection.execute(query).scalars()]


def _record_attempt(
    connection: sa.Connection, subjects: dict[str, str], now: dt.datetime, *, succeeded: bool
) -> None:
    """Record one attempt for each subject, and forget attempts too old to count."""
    connection.execute(sign_in_attempts.delete().where(sign_in_attempts.c.at < now - KEEP_ATTEMPTS))
    connection.execute(
        sign_in_attempts.insert(),
        [{"subject": subject, "at": now, "succeeded": succeeded} for subject in subjects.values()],
    )


def _set_password(
    connection: sa.Connection, account_id: str, password_hash: str, now: dt.datetime
) -> None:
    """Store the new password's hash; every session of the account ends with the old one."""
    end_sessions(connection, account_id)
    connection.execute(
        accounts.update()
        .where(accounts.c.id == account_id)
        .values(password_hash=password_hash, password_changed_at=now)
    )


def _row_or_none(connection: sa.Connection, account_id: object) -> sa.Row | None:
    if not isinstance(account_id, str):
        return None
    return connection.execute(sa.select(accounts).where(accounts.c.id == account_id)).first()


def _row(connection: sa.Connection, account_id: str) -> sa.Row:
    row = _row_or_none(connection, account_id)
    if row is None:
        raise AccountNotFound(f"no account {account_id}")
    return row


def _row_by_email(connection: sa.Connection, address: str) -> sa.Row | None:
    return connection.execute(sa.select(accounts).where(accounts.c.email == address)).first()


def _locked_row(connection: sa.Connection, account_id: str) -> sa.Row:
    """The account's row under its write lock for this transaction (a no-op update locks on
    PostgreSQL and SQLite alike)."""
    connection.execute(
        accounts.update().where(accounts.c.id == account_id).values(id=accounts.c.id)
    )
    return _row(connection, account_id)


def _account(row: sa.Row) -> Account:
    return Account(row.id, row.email, row.plan, row.state, as_utc(row.created_at))


def _time_text(value: dt.datetime | None) -> str:
    return "" if value is None else as_utc(value).isoformat()


def _duration_text(duration: dt.timedelta) -> str:
    hours = int(duration.total_seconds() // 3600)
    return "1 hour" if hours == 1 else f"{hours} hours"
