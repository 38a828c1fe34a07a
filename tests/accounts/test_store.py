"""AccountStore on real SQLite and PostgreSQL: accounts, the plans' key rules, revocation, lookup,
keys never stored in clear, and the key limit holding under concurrent creation."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import re
import threading

import pytest
import sqlalchemy as sa

from findata.accounts.keys import new_key
from findata.accounts.store import (
    AccountError,
    AccountNotFound,
    AccountStore,
    IssuedKey,
    KeyNotFound,
)
from findata.accounts.tables import accounts, api_keys
from findata.clock import ManualClock
from findata.control_plane.schema import versions

START = dt.datetime(2026, 11, 22, 9, 30, tzinfo=dt.UTC)
KEY_FORMAT = re.compile(r"fdk_[0-9a-f]{32}")


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


def _count(engine: sa.Engine, table: sa.Table) -> int:
    with engine.connect() as connection:
        return connection.execute(sa.select(sa.func.count()).select_from(table)).scalar_one()


def _active_key_ids(engine: sa.Engine, account_id: str) -> set[int]:
    query = sa.select(api_keys.c.id).where(
        api_keys.c.account_id == account_id, api_keys.c.revoked_at.is_(None)
    )
    with engine.connect() as connection:
        return set(connection.execute(query).scalars())


def _revoked_at(store: AccountStore, issued: IssuedKey) -> dt.datetime | None:
    owner = store.find_key(issued.key)
    assert owner is not None
    return owner.revoked_at


# accounts


def test_create_account_normalises_the_email(store: AccountStore) -> None:
    account = store.create_account("  Alice.Smith@Example.COM ", "pro")
    assert account.email == "alice.smith@example.com"
    assert account.plan == "pro"
    assert account.state == "enabled" and account.enabled
    assert account.created_at == START
    assert re.fullmatch(r"acct_[0-9a-f]{16}", account.id)
    assert store.get_account(account.id) == account
    assert store.find_account_by_email("ALICE.SMITH@example.com") == account
    assert store.find_account_by_email("bob@example.com") is None


def test_duplicate_email_is_refused_in_any_letter_case(
    store: AccountStore, engine: sa.Engine
) -> None:
    store.create_account("alice@example.com", "free")
    with pytest.raises(AccountError, match="exists already"):
        store.create_account("ALICE@example.com", "max")
    assert _count(engine, accounts) == 1


def test_bad_email_or_unknown_plan_writes_nothing(store: AccountStore, engine: sa.Engine) -> None:
    for email in ("", "alice", "alice@example", "alice smith@example.com", "a@b@example.com"):
        with pytest.raises(AccountError, match="not an e-mail address"):
            store.create_account(email, "free")
    for plan_code in ("gold", "Free", ""):
        with pytest.raises(AccountError, match="unknown plan"):
            store.create_account("alice@example.com", plan_code)
    assert _count(engine, accounts) == 0


def test_set_state_disables_and_enables(store: AccountStore, clock: ManualClock) -> None:
    account = store.create_account("alice@example.com", "max")
    issued = store.create_key(account.id)
    clock.advance(dt.timedelta(hours=2))
    disabled = store.set_state(account.id, "disabled")
    assert disabled.state == "disabled" and not disabled.enabled
    assert store.get_account(account.id).state == "disabled"
    owner = store.find_key(issued.key)
    assert owner is not None and owner.account.state == "disabled"
    assert owner.revoked_at is None  # the keys stay as they are
    enabled = store.set_state(account.id, "enabled")
    assert enabled.state == "enabled" and enabled.enabled
    with pytest.raises(AccountError, match="unknown account state"):
        store.set_state(account.id, "suspended")
    assert store.get_account(account.id).state == "enabled"


def test_unknown_account_is_refused_everywhere(store: AccountStore, engine: sa.Engine) -> None:
    with pytest.raises(AccountNotFound):
        store.get_account("acct_0000000000000000")
    with pytest.raises(AccountNotFound):
        store.set_state("acct_0000000000000000", "disabled")
    with pytest.raises(AccountNotFound):
        store.set_plan("acct_0000000000000000", "pro")
    with pytest.raises(AccountNotFound):
        store.create_key("acct_0000000000000000")
    assert _count(engine, accounts) == 0
    assert _count(engine, api_keys) == 0


# keys


def test_keys_have_the_spec_format_and_differ(store: AccountStore) -> None:
    account = store.create_account("alice@example.com", "redistribution")
    issued = [store.create_key(account.id) for _ in range(10)]
    for one in issued:
        assert KEY_FORMAT.fullmatch(one.key), one.key
        assert one.prefix == one.key[:8]
        assert one.revoked_key_ids == []
        assert one.created_at == START
    assert len({one.key for one in issued}) == 10
    assert len({one.key_id for one in issued}) == 10


@pytest.mark.parametrize("plan_code", ["free", "pro"])
def test_free_and_pro_regenerate_revokes_the_current_key(
    store: AccountStore, engine: sa.Engine, clock: ManualClock, plan_code: str
) -> None:
    account = store.create_account(f"{plan_code}@example.com", plan_code)
    first = store.create_key(account.id)
    assert first.revoked_key_ids == []
    clock.advance(dt.timedelta(days=3, minutes=7))
    second = store.create_key(account.id)
    assert second.revoked_key_ids == [first.key_id]
    assert _revoked_at(store, first) == clock.now()
    assert _revoked_at(store, second) is None
    assert _active_key_ids(engine, account.id) == {second.key_id}
    clock.advance(dt.timedelta(hours=1))
    third = store.create_key(account.id)
    assert third.revoked_key_ids == [second.key_id]
    assert _revoked_at(store, first) == START + dt.timedelta(days=3, minutes=7)  # unchanged
    assert _active_key_ids(engine, account.id) == {third.key_id}
    assert [key["id"] for key in store.list_keys(account.id)] == [
        third.key_id,
        second.key_id,
        first.key_id,
    ]


@pytest.mark.parametrize(("plan_code", "limit"), [("max", 5), ("redistribution", 10)])
def test_max_and_redistribution_add_keys_up_to_the_limit(
    store: AccountStore, engine: sa.Engine, plan_code: str, limit: int
) -> None:
    account = store.create_account(f"{plan_code}@example.com", plan_code)
    issued = [store.create_key(account.id) for _ in range(limit)]
    assert all(one.revoked_key_ids == [] for one in issued)
    assert _active_key_ids(engine, account.id) == {one.key_id for one in issued}
    with pytest.raises(AccountError, match=f"allows {limit} active keys"):
        store.create_key(account.id)
    assert _count(engine, api_keys) == limit
    assert _active_key_ids(engine, account.id) == {one.key_id for one in issued}
    # revoking one makes room for one more
    store.revoke_key(issued[0].key)
    store.create_key(account.id)
    assert len(_active_key_ids(engine, account.id)) == limit


def test_set_plan_down_revokes_the_oldest_keys(
    store: AccountStore, engine: sa.Engine, clock: ManualClock
) -> None:
    account = store.create_account("alice@example.com", "max")
    issued = []
    for _ in range(3):
        issued.append(store.create_key(account.id))
        clock.advance(dt.timedelta(minutes=10))
    oldest, middle, newest = issued
    moved, revoked = store.set_plan(account.id, "pro")
    assert moved.plan == "pro"
    assert store.get_account(account.id).plan == "pro"
    assert sorted(revoked) == sorted([oldest.key_id, middle.key_id])
    assert _active_key_ids(engine, account.id) == {newest.key_id}
    assert _revoked_at(store, oldest) == clock.now()
    assert _revoked_at(store, middle) == clock.now()
    assert _revoked_at(store, newest) is None
    with pytest.raises(AccountError, match="unknown plan"):
        store.set_plan(account.id, "gold")
    assert store.get_account(account.id).plan == "pro"


def test_revoke_keeps_the_first_revocation_date(store: AccountStore, clock: ManualClock) -> None:
    account = store.create_account("alice@example.com", "max")
    issued = store.create_key(account.id)
    clock.advance(dt.timedelta(hours=5))
    first = store.revoke_key(issued.key)
    revoked_on = START + dt.timedelta(hours=5)
    assert first.revoked_at == revoked_on
    clock.advance(dt.timedelta(days=2))
    again = store.revoke_key(issued.key)
    assert again.revoked_at == revoked_on
    assert _revoked_at(store, issued) == revoked_on


def test_revoke_of_an_unknown_key_raises(store: AccountStore) -> None:
    with pytest.raises(KeyNotFound):
        store.revoke_key(new_key())


def test_find_key_returns_the_owner(store: AccountStore) -> None:
    account = store.create_account("alice@example.com", "max")
    issued = store.create_key(account.id)
    assert store.find_key(new_key()) is None
    owner = store.find_key(issued.key)
    assert owner is not None
    assert owner.key_id == issued.key_id
    assert owner.prefix == issued.key[:8]
    assert owner.revoked_at is None
    assert owner.account == account
    assert owner.plan.code == "max"


def test_find_key_sees_each_change_of_the_row_at_the_next_lookup(
    store: AccountStore, clock: ManualClock
) -> None:
    """The owner built from a key's row is reused only while the row read on each lookup is
    unchanged: a plan change, a disabled account or a revocation made through another store
    on the same database (another worker, the dashboard) counts from the next lookup."""
    account = store.create_account("alice@example.com", "pro")
    issued = store.create_key(account.id)
    first = store.find_key(issued.key)
    assert first is not None and store.find_key(issued.key) is first
    elsewhere = AccountStore(store.engine, clock)
    elsewhere.set_plan(account.id, "max")
    moved = store.find_key(issued.key)
    assert moved is not None and moved.plan.code == "max"
    elsewhere.set_state(account.id, "disabled")
    disabled = store.find_key(issued.key)
    assert disabled is not None and not disabled.account.enabled
    clock.advance(dt.timedelta(hours=1))
    elsewhere.revoke_key(issued.key)
    revoked = store.find_key(issued.key)
    assert revoked is not None and revoked.revoked_at == clock.now()
    assert store.find_key(new_key()) is None


def test_the_key_read_also_reads_the_newest_version(store: AccountStore) -> None:
    """A data request's key check reads the newest published version's id in the same round
    trip: None before the first publish, then the highest id, seen from the next read as a
    version is published (the owner held from an unchanged key row is kept across)."""
    issued = store.create_key(store.create_account("alice@example.com", "pro").id)
    owner, newest = store.find_key_and_newest_version(issued.key)
    assert owner is not None and newest is None
    for number in (1, 2):
        with store.engine.begin() as connection:
            published = connection.execute(
                versions.insert().values(
                    label=f"v{number}",
                    file_name=f"v{number}.duckdb",
                    run_id="test",
                    published_at=START,
                    content_hash="0" * 64,
                    data_through={},
                    row_counts={},
                )
            ).inserted_primary_key[0]
        again, newest = store.find_key_and_newest_version(issued.key)
        assert again is owner and newest == published
    assert store.find_key_and_newest_version(new_key()) == (None, None)


def test_find_key_compares_hashes_with_compare_digest(
    store: AccountStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, str]] = []
    original = hmac.compare_digest

    def counting(a: str, b: str) -> bool:
        calls.append((a, b))
        return original(a, b)

    monkeypatch.setattr("findata.accounts.store.hmac.compare_digest", counting)
    account = store.create_account("alice@example.com", "free")
    issued = store.create_key(account.id)
    calls.clear()
    assert store.find_key(issued.key) is not None
    digest = hashlib.sha256(issued.key.encode()).hexdigest()
    assert calls == [(digest, digest)]


def test_keys_are_never_stored_in_clear(store: AccountStore, engine: sa.Engine) -> None:
    issued: list[IssuedKey] = []
    for email, plan_code, count in (
        ("free@example.com", "free", 3),
        ("max@example.com", "max", 4),
        ("redis@example.com", "redistribution", 2),
    ):
        account = store.create_account(email, plan_code)
        issued += [store.create_key(account.id) for _ in range(count)]
    store.revoke_key(issued[-1].key)

    stored: list[str] = []
    with engine.connect() as connection:
        for name in sa.inspect(connection).get_table_names():
            table = sa.Table(name, sa.MetaData(), autoload_with=connection)
            for row in connection.execute(sa.select(table)):
                stored += [str(value) for value in row]
    assert len(stored) > len(issued)
    for one in issued:
        secret = one.key.removeprefix("fdk_")
        assert not [value for value in stored if one.key in value or secret in value]

    with engine.connect() as connection:
        hashes = dict(connection.execute(sa.select(api_keys.c.id, api_keys.c.key_hash)).all())
    assert hashes == {one.key_id: hashlib.sha256(one.key.encode()).hexdigest() for one in issued}


def test_concurrent_key_creation_keeps_the_limit(store: AccountStore, engine: sa.Engine) -> None:
    account = store.create_account("alice@example.com", "max")
    threads = 8
    barrier = threading.Barrier(threads)
    created: list[IssuedKey] = []
    refused: list[AccountError] = []
    failed: list[BaseException] = []

    def create() -> None:
        barrier.wait()
        try:
            created.append(store.create_key(account.id))
        except AccountError as error:
            refused.append(error)
        except BaseException as error:  # a database error here is a bug: report it whole
            failed.append(error)

    workers = [threading.Thread(target=create) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert failed == []
    assert len(created) == 5
    assert len(refused) == 3
    assert _active_key_ids(engine, account.id) == {one.key_id for one in created}
    assert _count(engine, api_keys) == 5


def test_key_use_is_written_at_most_once_a_minute(store: AccountStore, clock: ManualClock) -> None:
    """Many requests of one key read no last use before the first writes it: one write wins,
    the others (holding the stale owner) change nothing; a minute later the next use writes."""
    issued = store.create_key(store.create_account("busy@example.com", "pro").id)
    stale = store.find_key(issued.key)
    assert stale is not None and stale.last_used_at is None
    store.note_key_use(stale)
    first = store.find_key(issued.key)
    assert first is not None and first.last_used_at == START
    clock.advance(dt.timedelta(seconds=30))
    store.note_key_use(stale)  # a concurrent request's stale read
    again = store.find_key(issued.key)
    assert again is not None and again.last_used_at == START
    clock.advance(dt.timedelta(seconds=31))
    store.note_key_use(again)
    later = store.find_key(issued.key)
    assert later is not None and later.last_used_at == START + dt.timedelta(seconds=61)
