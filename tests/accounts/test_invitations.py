"""Invitation trials on real SQLite and PostgreSQL, on a clock the tests move: codes stored
hashed, redemption and each refusal, one winner when two accounts redeem one code at once, and
the trial job (ending-soon e-mail once, billing or the return to Free at the end) run twice."""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import threading

import pytest
import sqlalchemy as sa

from findata.accounts.billing import Billing, BillingRefused, Trial
from findata.accounts.invitations import (
    InvitationRefused,
    TrialRun,
    cancel_trial,
    create_invitations,
    normalise_code,
    process_trial_ends,
    redeem,
)
from findata.accounts.store import AccountError, AccountStore
from findata.accounts.tables import accounts, invitations, invoices, subscription_periods
from findata.clock import ManualClock
from findata.control_plane.schema import account_notices

START = dt.datetime(2026, 11, 22, 9, 30, tzinfo=dt.UTC)
DAY = dt.timedelta(days=1)
REDEEM_BY = dt.date(2026, 12, 31)
CODE_FORMAT = re.compile(r"INV-[2-9A-HJ-NP-Z]{4}-[2-9A-HJ-NP-Z]{4}-[2-9A-HJ-NP-Z]{4}")
NOTHING = TrialRun(ending_soon_notices=0, billing_started=0, returned_to_free=0)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


def _code(engine: sa.Engine, clock: ManualClock, plan: str = "pro") -> str:
    (code,) = create_invitations(engine, clock, plan, REDEEM_BY, 1)
    return code


def _notices(engine: sa.Engine, account_id: str) -> list[sa.Row]:
    with engine.connect() as connection:
        return connection.execute(
            sa.select(account_notices)
            .where(account_notices.c.account_id == account_id)
            .order_by(account_notices.c.id)
        ).all()


def _active_keys(store: AccountStore, account_id: str) -> list[int]:
    return [k["id"] for k in store.list_keys(account_id) if k["revoked_at"] is None]


# codes


def test_codes_are_friendly_random_and_stored_only_as_hashes(
    engine: sa.Engine, clock: ManualClock
) -> None:
    codes = create_invitations(engine, clock, "max", REDEEM_BY, 25)
    assert len(set(codes)) == 25
    assert all(CODE_FORMAT.fullmatch(code) for code in codes), codes
    with engine.connect() as connection:
        rows = connection.execute(sa.select(invitations)).all()
    stored = {row.code_hash for row in rows}
    assert stored == {hashlib.sha256(c.replace("-", "")[3:].encode()).hexdigest() for c in codes}
    assert {(r.plan, r.redeem_by, r.redeemed_by) for r in rows} == {("max", REDEEM_BY, None)}
    text = " ".join(str(tuple(row)) for row in rows)
    assert not any(code[4:8] + code[9:13] in text.replace("-", "") for code in codes)


def test_codes_are_read_whatever_the_case_spaces_and_dashes() -> None:
    assert normalise_code("INV-7KQX-M3PA-ZC9D") == "7KQXM3PAZC9D"
    assert normalise_code(" inv 7kqx m3pa zc9d ") == "7KQXM3PAZC9D"
    assert normalise_code("7kqx-m3pa-zc9d") == "7KQXM3PAZC9D"
    assert normalise_code("inv–7kqx–m3pa–zc9d") == "7KQXM3PAZC9D"  # en dashes from a mail client
    assert normalise_code("INV-7KQX-M3PA-ZC9") is None
    assert normalise_code("INV-0KQX-M3PA-ZC9D") is None  # no 0 in the alphabet
    assert normalise_code("") is None


@pytest.mark.parametrize(
    ("plan", "redeem_by", "count", "reason"),
    [
        ("free", REDEEM_BY, 1, "for Pro or Max only"),
        ("redistribution", REDEEM_BY, 1, "for Pro or Max only"),
        ("gold", REDEEM_BY, 1, "for Pro or Max only"),
        ("pro", START.date() - DAY, 1, "is in the past"),
        ("pro", REDEEM_BY, 0, "from 1 to 1000"),
    ],
)
def test_creation_refusals(
    engine: sa.Engine, clock: ManualClock, plan: str, redeem_by: dt.date, count: int, reason: str
) -> None:
    with pytest.raises(InvitationRefused, match=reason):
        create_invitations(engine, clock, plan, redeem_by, count)
    with engine.connect() as connection:
        assert connection.execute(sa.select(sa.func.count()).select_from(invitations)).scalar() == 0
    # today itself is allowed
    assert len(create_invitations(engine, clock, "pro", START.date(), 1)) == 1


# a trial from redemption to billing


@pytest.mark.parametrize(
    ("plan", "interval", "amount", "period_end"),
    [
        ("pro", "monthly", 2900, dt.datetime(2027, 1, 22, 9, 30, tzinfo=dt.UTC)),
        ("max", "yearly", 99000, dt.datetime(2027, 12, 22, 9, 30, tzinfo=dt.UTC)),
    ],
)
def test_a_trial_month_then_billing_at_the_chosen_interval(
    engine: sa.Engine,
    clock: ManualClock,
    store: AccountStore,
    billing: Billing,
    plan: str,
    interval: str,
    amount: int,
    period_end: dt.datetime,
) -> None:
    code = _code(engine, clock, plan)
    account = store.create_account("trial@example.com", "free")
    trial = redeem(engine, clock, account.id, code.lower(), interval)
    ends_at = START + 30 * DAY
    assert trial == Trial(plan, interval, ends_at, None)
    assert store.get_account(account.id).plan == plan
    summary = billing.summary(account.id)
    assert summary.trial == trial and summary.interval == interval
    assert summary.period is not None and summary.period.kind == "trial"
    assert (summary.period.starts_at, summary.period.ends_at) == (START, ends_at)
    assert summary.invoices == []  # nothing charged during the trial
    with engine.connect() as connection:
        used = connection.execute(sa.select(invitations)).one()
    assert used.redeemed_by == account.id

    clock.advance(26 * DAY)  # four days left: no e-mail yet
    assert process_trial_ends(engine, clock, billing) == NOTHING
    clock.advance(DAY)  # day 27: three days left
    assert process_trial_ends(engine, clock, billing).ending_soon_notices == 1
    clock.advance(DAY)
    assert process_trial_ends(engine, clock, billing) == NOTHING  # once per trial
    (soon,) = _notices(engine, account.id)
    assert soon.kind == "trial_ending" and soon.email == "trial@example.com"
    assert "2026-12-22" in soon.subject and "Billing then starts" in soon.body
    assert f"{amount // 100:,}.00 USD" in soon.body

    clock.set(ends_at)  # day 30: the trial ends, billing starts
    assert process_trial_ends(engine, clock, billing) == TrialRun(0, 1, 0)
    assert process_trial_ends(engine, clock, billing) == NOTHING
    assert billing.renew_due() == 0
    billed = billing.summary(account.id)
    assert (billed.plan, billed.trial, billed.interval) == (plan, None, interval)
    (invoice,) = billed.invoices
    assert (invoice.amount_cents, invoice.currency, invoice.provider) == (
        amount,
        "USD",
        "recording",
    )
    assert invoice.provider_reference and invoice.provider_reference.startswith("rec_")
    assert (invoice.period_start, invoice.period_end) == (ends_at, period_end)
    assert billed.period is not None and billed.period.kind == "paid"
    ended = _notices(engine, account.id)[-1]
    assert ended.kind == "trial_ended" and "billing has started" in ended.subject
    assert invoice.id in ended.body
    with engine.connect() as connection:
        row = connection.execute(sa.select(accounts)).one()
    assert (row.trial_plan, row.trial_interval, row.trial_ends_at, row.trial_cancelled_at) == (
        None,
        None,
        None,
        None,
    )
    assert row.billing_interval == interval

    # the next period is billed by the renewals
    clock.set(period_end)
    assert billing.renew_due() == 1
    assert len(billing.summary(account.id).invoices) == 2


def test_a_cancelled_max_trial_returns_to_free_with_the_newest_key(
    engine: sa.Engine, clock: ManualClock, store: AccountStore, billing: Billing
) -> None:
    account = store.create_account("cancel@example.com", "free")
    redeem(engine, clock, account.id, _code(engine, clock, "max"), "monthly")
    keys = []
    for _ in range(3):
        clock.advance(dt.timedelta(minutes=1))
        keys.append(store.create_key(account.id).key_id)
    clock.advance(DAY)
    cancelled = cancel_trial(engine, clock, account.id)
    assert cancelled.cancelled and cancelled.cancelled_at == clock.now()
    clock.advance(DAY)
    assert cancel_trial(engine, clock, account.id) == cancelled  # the first date stays
    assert store.get_account(account.id).plan == "max"  # until the trial ends
    assert len(_active_keys(store, account.id)) == 3

    clock.set(START + 27 * DAY)
    assert process_trial_ends(engine, clock, billing).ending_soon_notices == 1
    assert "returns to Free" in _notices(engine, account.id)[0].body

    clock.set(START + 31 * DAY)  # the job ran a day late
    assert process_trial_ends(engine, clock, billing) == TrialRun(0, 0, 1)
    assert process_trial_ends(engine, clock, billing) == NOTHING
    summary = billing.summary(account.id)
    assert (summary.plan, summary.trial, summary.invoices, summary.interval) == (
        "free",
        None,
        [],
        None,
    )
    assert _active_keys(store, account.id) == [keys[-1]]  # Free keeps the newest key
    ended = _notices(engine, account.id)[-1]
    assert ended.kind == "trial_ended" and "on Free" in ended.subject
    assert "2 older key(s) were revoked" in ended.body
    with engine.connect() as connection:
        assert connection.execute(sa.select(sa.func.count()).select_from(invoices)).scalar() == 0


def test_a_plan_chosen_during_the_trial(
    engine: sa.Engine, clock: ManualClock, store: AccountStore, billing: Billing
) -> None:
    account = store.create_account("choose@example.com", "free")
    redeem(engine, clock, account.id, _code(engine, clock, "pro"), "monthly")
    with pytest.raises(BillingRefused, match="already moves to monthly billing on 2026-12-22"):
        billing.change_plan(account.id, "pro", "monthly")
    # the interval billing starts at, and keeping the plan undoes a cancellation
    assert billing.change_interval(account.id, "yearly").trial == Trial(
        "pro", "yearly", START + 30 * DAY, None
    )
    cancel_trial(engine, clock, account.id)
    kept = billing.change_plan(account.id, "pro", "yearly")
    assert kept.trial is not None and not kept.trial.cancelled
    # another plan ends the trial now and is billed from now
    clock.advance(3 * DAY)
    moved = billing.change_plan(account.id, "max", "monthly")
    assert (moved.plan, moved.trial, moved.interval) == ("max", None, "monthly")
    assert [i.amount_cents for i in moved.invoices] == [9900]
    clock.set(START + 30 * DAY)
    assert process_trial_ends(engine, clock, billing) == NOTHING
    with engine.connect() as connection:
        trial_end = connection.execute(
            sa.select(subscription_periods.c.ends_at).where(subscription_periods.c.kind == "trial")
        ).scalar_one()
    assert trial_end.replace(tzinfo=dt.UTC) == START + 3 * DAY


# refusals


def test_every_refusal_says_why(
    engine: sa.Engine, clock: ManualClock, store: AccountStore, billing: Billing
) -> None:
    free = store.create_account("free@example.com", "free")
    pro = store.create_account("pro@example.com", "pro")
    used = _code(engine, clock)
    redeem(engine, clock, store.create_account("first@example.com", "free").id, used, "monthly")
    (expiring,) = create_invitations(engine, clock, "pro", START.date() + DAY, 1)
    spare = _code(engine, clock, "max")

    def refused(account_id: str, code: str, reason: str, text: str) -> None:
        with pytest.raises(InvitationRefused, match=text) as raised:
            redeem(engine, clock, account_id, code, "monthly")
        assert raised.value.reason == reason
        assert isinstance(raised.value, AccountError)

    refused(free.id, "INV-2345-6789-ABCD", "unknown_code", "no invitation with this code")
    refused(free.id, "hello", "unknown_code", "no invitation with this code")
    refused(free.id, used, "already_used", "used already")
    refused(pro.id, spare, "paid_plan", "this account is on Pro")
    with pytest.raises(BillingRefused, match="unknown billing interval"):
        redeem(engine, clock, free.id, spare, "weekly")

    clock.set(dt.datetime.combine(START.date() + 2 * DAY, dt.time(0, 0), dt.UTC))
    refused(free.id, expiring, "expired", f"expired on {START.date() + DAY}")
    # the redeem-by day itself, to its last second (UTC), is fine
    late = store.create_account("late@example.com", "free")
    clock.set(dt.datetime.combine(REDEEM_BY, dt.time(23, 59, 59), dt.UTC))
    redeem(engine, clock, late.id, _code(engine, clock), "monthly")

    clock.set(START + 2 * DAY)
    redeem(engine, clock, free.id, spare, "yearly")
    refused(free.id, _code(engine, clock), "trial_running", "trial is running")
    cancel_trial(engine, clock, free.id)
    clock.advance(30 * DAY)
    assert process_trial_ends(engine, clock, billing) == TrialRun(0, 1, 1)
    assert store.get_account(free.id).plan == "free"
    (again,) = create_invitations(engine, clock, "pro", REDEEM_BY + 60 * DAY, 1)
    refused(free.id, again, "trial_used", "one per account")

    with pytest.raises(InvitationRefused, match="no invitation trial is running") as raised:
        cancel_trial(engine, clock, free.id)
    assert raised.value.reason == "no_trial"


def test_two_accounts_redeeming_one_code_at_once_one_wins(
    engine: sa.Engine, clock: ManualClock, store: AccountStore
) -> None:
    code = _code(engine, clock, "max")
    people = [store.create_account(f"racer{i}@example.com", "free") for i in range(4)]
    barrier = threading.Barrier(len(people))
    won: list[str] = []
    lost: list[str] = []

    def attempt(account_id: str) -> None:
        barrier.wait()
        try:
            redeem(engine, clock, account_id, code, "monthly")
            won.append(account_id)
        except InvitationRefused as refusal:
            assert refusal.reason == "already_used"
            lost.append(account_id)

    threads = [threading.Thread(target=attempt, args=(p.id,)) for p in people]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(won) == 1 and len(lost) == len(people) - 1
    plans = {p.id: store.get_account(p.id).plan for p in people}
    assert plans == {p.id: ("max" if p.id == won[0] else "free") for p in people}
    with engine.connect() as connection:
        assert connection.execute(sa.select(invitations.c.redeemed_by)).scalar_one() == won[0]
        trials = connection.execute(
            sa.select(subscription_periods.c.account_id).where(
                subscription_periods.c.kind == "trial"
            )
        ).all()
    assert [t.account_id for t in trials] == won
