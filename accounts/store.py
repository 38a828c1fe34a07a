"""Accounts and their API keys in the control plane: the operations the CLI and dashboard call.

Every change runs in one transaction that first locks the account row, so two concurrent key
creations cannot pass a plan's key limit (a row lock on PostgreSQL, the write lock on SQLite).
"""

from __future__ import annotations

import datetime as dt
import hmac
import re
import secrets
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from findata.accounts.keys import key_hash, new_key, visible_prefix
from findata.accounts.sessions import end_sessions
from findata.accounts.tables import accounts, api_keys
from findata.clock import Clock, as_utc
from findata.contracts.plans import Plan, load_plans, plan
from findata.control_plane.raw_reads import RawRead
from findata.control_plane.schema import versions

EMAIL_PATTERN = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s.]+")
#: a key's last use is kept to the minute
KEY_USE_RESOLUTION = dt.timedelta(minutes=1)


class AccountError(Exception):
    """A refused account or key operation; the message says why."""


class AccountNotFound(AccountError):
    """No account with that id or e-mail."""


class KeyLimitReached(AccountError):
    """The plan's active keys are all in use (Max, Redistribution): revoke one first."""

    def __init__(self, message: str, plan: Plan) -> None:
        super().__init__(message)
        self.plan = plan


class KeyNotFound(AccountError):
    """No key with that value."""


@dataclass(frozen=True)
class Account:
    """An account as stored."""

    id: str
    email: str
    plan: str
    state: str
    created_at: dt.datetime

    @property
    def enabled(self) -> bool:
        return self.state == "enabled"


@dataclass(frozen=True)
class IssuedKey:
    """A key just created: the only time its clear value exists."""

    account: Account
    key: str
    key_id: int
    prefix: str
    created_at: dt.datetime
    revoked_key_ids: list[int]
    label: str | None = None


@dataclass(frozen=True)
class KeyOwner:
    """What a presented key resolves to."""

    key_id: int
    prefix: str
    revoked_at: dt.datetime | None
    account: Account
    last_used_at: dt.datetime | None = None

    @property
    def plan(self) -> Plan:
        return plan(self.account.plan)


#: a key's row and its account (``find_key``)
_KEY_QUERY = (
    sa.select(api_keys, accounts.c.email, accounts.c.plan, accounts.c.state)
    .add_columns(accounts.c.created_at.label("account_created_at"))
    .join(accounts, accounts.c.id == api_keys.c.account_id)
    .where(api_keys.c.key_hash == sa.bindparam("key_hash"))
)
#: the same, and the newest published version's id in the same read
#: (``find_key_and_newest_version``)
_KEY_AND_NEWEST_VERSION_QUERY = _KEY_QUERY.add_columns(
    sa.select(sa.func.max(versions.c.id)).scalar_subquery().label("newest_version_id")
)
#: owners of the keys used lately kept by a worker (all forgotten when it fills; they are
#: rebuilt from the next read)
OWNERS_HELD = 10_000


class AccountStore:
    """Accounts and keys on one control-plane engine, with time from ``clock``."""

    def __init__(self, engine: sa.Engine, clock: Clock) -> None:
        self.engine = engine
        self.clock = clock
        self._key_row = RawRead(engine, _KEY_AND_NEWEST_VERSION_QUERY)
        self._hash_at = self._key_row.columns.index("key_hash")
        self._newest_at = self._key_row.columns.index("newest_version_id")
        # key hash → (the row as the driver returned it, the owner built from it)
        self._owners: dict[str, tuple[tuple[Any, ...], KeyOwner]] = {}

    # accounts

    def create_account(self, email: str, plan_code: str) -> Account:
        """A new enabled account; the e-mail must be new."""
        email = _normalised_email(email)
        _check_plan(plan_code)
        now = self.clock.now()
        account_id = "acct_" + secrets.token_hex(8)
        with self.engine.begin() as connection:
            if _account_row(connection, email=email) is not None:
                raise AccountError(f"an account with e-mail {email} exists already")
            connection.execute(
                accounts.insert().values(
                    id=account_id, email=email, plan=plan_code, state="enabled", created_at=now
                )
            )
        return Account(account_id, email, plan_code, "enabled", now)

    def get_account(self, account_id: str) -> Account:
        """The account with ``account_id``."""
        with self.engine.connect() as connection:
            return _account(connection, account_id=account_id)

    def find_account_by_email(self, email: str) -> Account | None:
        """The account with ``email`` (any letter case), if there is one."""
        with self.engine.connect() as connection:
            row = _account_row(connection, email=_normalised_email(email))
        return None if row is None else _to_account(row)

    def set_state(self, account_id: str, state: str) -> Account:
        """Enable or disable an account (its keys stay as they are; disabling ends its
        dashboard sessions)."""
        if state not in ("enabled", "disabled"):
            raise AccountError(f"unknown account state {state!r}")
        with self.engine.begin() as connection:
            lock_account(connection, account_id)
            if state == "disabled":
                end_sessions(connection, account_id)
            connection.execute(
                accounts.update()
                .where(accounts.c.id == account_id)
                .values(state=state, state_changed_at=self.clock.now())
            )
            return _account(connection, account_id=account_id)

    def set_plan(self, account_id: str, plan_code: str) -> tuple[Account, list[int]]:
        """Move an account to another plan. Active keys beyond the new plan's limit are revoked,
        oldest first (the newest keys keep working); returns the account and the revoked key ids."""
        _check_plan(plan_code)
        now = self.clock.now()
        with self.engine.begin() as connection:
            lock_account(connection, account_id)
            revoked = move_to_plan(connection, account_id, plan_code, now)
            return _account(connection, account_id=account_id), revoked

    # keys

    def create_key(self, account_id: str, label: str | None = None) -> IssuedKey:
        """Issue a key under the plan's rule: Free and Pro regenerate (the active key is revoked);
        Max and Redistribution add one up to their limit. ``label`` names it for its owner (at
        most 64 characters; blank is none)."""
        label = key_label(label)
        now = self.clock.now()
        key = new_key()
        with self.engine.begin() as connection:
            lock_account(connection, account_id)
            account = _account(connection, account_id=account_id)
            account_plan = plan(account.plan)
            active = _active_key_ids_newest_first(connection, account_id)
            revoked: list[int] = []
            if account_plan.key_rotation == "regenerate":
                revoked = active
                _revoke(connection, revoked, now)
            elif len(active) >= account_plan.active_keys:
                raise KeyLimitReached(
                    f"the {account_plan.name} plan allows {account_plan.active_keys} active keys "
                    f"and account {account_id} has {len(active)}; revoke one first",
                    account_plan,
                )
            key_id = connection.execute(
                api_keys.insert().values(
                    account_id=account_id,
                    key_hash=key_hash(key),
                    prefix=visible_prefix(key),
                    created_at=now,
                    label=label,
                )
            ).inserted_primary_key[0]
        return IssuedKey(account, key, key_id, visible_prefix(key), now, revoked, label)

    def revoke_key(self, key: str) -> KeyOwner:
        """Revoke the key ``key`` (a key revoked already keeps its first revocation date)."""
        owner = self.find_key(key)
        if owner is None:
            raise KeyNotFound("no such key")
        if owner.revoked_at is not None:
            return owner
        with self.engine.begin() as connection:
            lock_account(connection, owner.account.id)
            _revoke(connection, [owner.key_id], self.clock.now())
        found = self.find_key(key)
        assert found is not None
        return found

    def find_key(self, key: str) -> KeyOwner | None:
        """The key's record and account, found by its hash; None when the key is not ours."""
        return self.find_key_and_newest_version(key)[0]

    def find_key_and_newest_version(self, key: str) -> tuple[KeyOwner | None, int | None]:
        """The key's owner (as ``find_key``) and, read in the same round trip to the control
        plane, the id of the newest published version (None when the key is not ours, or
        before the first publish): a data request needs both, and on PostgreSQL each read is
        a round trip.

        The row is read on every call (a revocation, a plan change or a disabled account counts
        from the next request), through the DBAPI cursor; the owner built from an identical
        row earlier is reused, so the typed read runs only when the row changed."""
        presented = key_hash(key)
        raw = self._key_row.first(key_hash=presented)
        # the lookup is by hash; compare once more in constant time so no branch depends on
        # how much of a stored hash matched
        if raw is None or not hmac.compare_digest(raw[self._hash_at], presented):
            return None, None
        newest = raw[self._newest_at]
        row = raw[: self._newest_at]  # the key's own columns: what the held owner was built from
        held = self._owners.get(presented)
        if held is not None and held[0] == row:
            return held[1], newest
        owner = self._typed_owner(presented)
        if owner is not None:
            if len(self._owners) >= OWNERS_HELD:
                self._owners.clear()
            self._owners[presented] = (row, owner)
        return owner, newest

    def _typed_owner(self, presented: str) -> KeyOwner | None:
        with self.engine.connect() as connection:
            row = connection.execute(_KEY_QUERY, {"key_hash": presented}).first()
        if row is None:
            return None
        account = Account(
            row.account_id, row.email, row.plan, row.state, as_utc(row.account_created_at)
        )
        revoked_at = None if row.revoked_at is None else as_utc(row.revoked_at)
        last_used_at = None if row.last_used_at is None else as_utc(row.last_used_at)
        return KeyOwner(row.id, row.prefix, revoked_at, account, last_used_at)

    def note_key_use(self, owner: KeyOwner) -> None:
        """Record that ``owner``'s key was used now, to the minute: at most one write a minute
        per key, so a busy key costs the control plane almost nothing."""
        now = self.clock.now()
        if owner.last_used_at is not None and now - owner.last_used_at < KEY_USE_RESOLUTION:
            return
        # conditional: of many requests of one key in its first minute (each read no
        # last_used_at), one writes and the others change nothing
        fresh = sa.or_(
            api_keys.c.last_used_at.is_(None),
            api_keys.c.last_used_at < now - KEY_USE_RESOLUTION,
        )
        with self.engine.begin() as connection:
            connection.execute(
                api_keys.update()
                .where(api_keys.c.id == owner.key_id, fresh)
                .values(last_used_at=now)
            )

    def revoke_key_id(self, account_id: str, key_id: int) -> None:
        """Revoke the account's key ``key_id`` (the dashboard names keys by id, never by value);
        a key of another account is not found."""
        with self.engine.begin() as connection:
            lock_account(connection, account_id)
            found = connection.execute(
                sa.select(api_keys.c.id).where(
                    api_keys.c.id == key_id, api_keys.c.account_id == account_id
                )
            ).first()
            if found is None:
                raise KeyNotFound("no such key")
            _revoke(connection, [key_id], self.clock.now())

    def list_keys(self, account_id: str) -> list[dict[str, object]]:
        """The account's keys (never their values), newest first."""
        query = (
            sa.select(
                api_keys.c.id,
                api_keys.c.label,
                api_keys.c.prefix,
                api_keys.c.created_at,
                api_keys.c.revoked_at,
                api_keys.c.last_used_at,
            )
            .where(api_keys.c.account_id == account_id)
            .order_by(api_keys.c.id.desc())
        )
        with self.engine.connect() as connection:
            return [dict(row._mapping) for row in connection.execute(query)]


def normalised_email(email: str) -> str:
    """``email`` as accounts store it (trimmed, lower-case); AccountError when it is not an
    e-mail address."""
    return _normalised_email(email)


def _normalised_email(email: str) -> str:
    email = email.strip().lower()
    if EMAIL_PATTERN.fullmatch(email) is None:
        raise AccountError(f"not an e-mail address: {email!r}")
    return email


def key_label(label: str | None) -> str | None:
    """A key's label as stored: trimmed, None when blank; AccountError when it is too long."""
    label = (label or "").strip()
    limit = api_keys.c.label.type.length
    if len(label) > limit:
        raise AccountError(f"a key's label has at most {limit} characters")
    return label or None


def _check_plan(plan_code: str) -> Plan:
    plans = load_plans()
    if plan_code not in plans:
        raise AccountError(f"unknown plan {plan_code!r}; plans: {', '.join(plans)}")
    return plans[plan_code]


def move_to_plan(
    connection: sa.Connection, account_id: str, plan_code: str, now: dt.datetime
) -> list[int]:
    """In the caller's transaction (the account locked): move the account to ``plan_code``
    and revoke active keys beyond the plan's limit, oldest first (the newest keep working);
    returns the revoked key ids. The one key rule of every plan change (operator, billing,
    invitation trials)."""
    connection.execute(accounts.update().where(accounts.c.id == account_id).values(plan=plan_code))
    revoked = _active_key_ids_newest_first(connection, account_id)[plan(plan_code).active_keys :]
    _revoke(connection, revoked, now)
    return revoked


def lock_account(connection: sa.Connection, account_id: str) -> None:
    """Take the account's write lock for this transaction (a no-op update locks on both engines)."""
    touched = connection.execute(
        accounts.update().where(accounts.c.id == account_id).values(id=accounts.c.id)
    )
    if touched.rowcount == 0:
        raise AccountNotFound(f"no account {account_id}")


def _account_row(connection: sa.Connection, **where: str) -> sa.Row | None:
    ((column, value),) = where.items()
    return connection.execute(sa.select(accounts).where(accounts.c[column] == value)).first()


def account_row(connection: sa.Connection, account_id: str) -> sa.Row:
    """The account's row (``AccountNotFound`` when there is none)."""
    row = _account_row(connection, id=account_id)
    if row is None:
        raise AccountNotFound(f"no account {account_id}")
    return row


def _account(connection: sa.Connection, *, account_id: str) -> Account:
    return _to_account(account_row(connection, account_id))


def _to_account(row: sa.Row) -> Account:
    return Account(row.id, row.email, row.plan, row.state, as_utc(row.created_at))


def _active_key_ids_newest_first(connection: sa.Connection, account_id: str) -> list[int]:
    query = (
        sa.select(api_keys.c.id)
        .where(api_keys.c.account_id == account_id, api_keys.c.revoked_at.is_(None))
        .order_by(api_keys.c.id.desc())
    )
    return list(connection.execute(query).scalars())


def _revoke(connection: sa.Connection, key_ids: list[int], when: dt.datetime) -> None:
    """Revoke the keys not revoked yet (a key keeps its first revocation date, also when two
    revocations race)."""
    if key_ids:
        connection.execute(
            api_keys.update()
            .where(api_keys.c.id.in_(key_ids), api_keys.c.revoked_at.is_(None))
            .values(revoked_at=when)
        )
