"""Billing on real SQLite and PostgreSQL: the price list, calendar periods, plan changes up and
down (keys revoked, webhook endpoints kept), interval changes, renewals that run once, and
plain-words refusals."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest
import sqlalchemy as sa
from cryptography.fernet import Fernet

from findata.accounts.billing import (
    Billing,
    BillingRefused,
    BillingSummary,
    add_months,
    format_amount,
    load_prices,
)
from findata.accounts.store import AccountNotFound, AccountStore
from findata.accounts.tables import accounts, invoices, subscription_periods
from findata.clock import ManualClock
from findata.contracts.plans import load_plans
from findata.webhooks.endpoints import WebhookEndpoints
from findata.webhooks.signing import SecretBox
from findata.webhooks.subscribers import receives_webhooks
from findata.webhooks.url_safety import UrlPolicy

START = dt.datetime(2027, 1, 31, 10, 0, tzinfo=dt.UTC)
DAY = dt.timedelta(days=1)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


def _active_keys(store: AccountStore, account_id: str) -> list[int]:
    return [k["id"] for k in store.list_keys(account_id) if k["revoked_at"] is None]


def _count(engine: sa.Engine, table: sa.Table) -> int:
    with engine.connect() as connection:
        return connection.execute(sa.select(sa.func.count()).select_from(table)).scalar_one()


# prices and periods


def test_the_price_list_covers_every_plan() -> None:
    prices = load_prices()
    assert list(prices) == list(load_plans())
    assert (prices["pro"].monthly_cents, prices["pro"].yearly_cents) == (2900, 29000)
    assert prices["max"].cents("yearly") == 99000 and prices["max"].name == "Max"
    assert prices["free"].cents("monthly") == 0
    assert {p.currency for p in prices.values()} == {"USD"}
    assert format_amount(99000, "USD") == "990.00 USD"
    assert format_amount(499000, "USD") == "4,990.00 USD"


def _price_file(tmp_path: Path, free: str, *, others: bool = True) -> Path:
    """A price file with ``free`` as Free's entry and, with ``others``, the real other ones."""
    lines = ["plans:", f"  free: {free}"]
    if others:
        lines += [
            f"  {code}: {{monthly_cents: {p.monthly_cents}, yearly_cents: {p.yearly_cents}, "
            f"currency: {p.currency}}}"
            for code, p in load_prices().items()
            if code != "free"
        ]
    tmp_path.mkdir(exist_ok=True)
    path = tmp_path / "prices.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    ("free", "reason"),
    [
        ("{monthly_cents: 1, yearly_cents: 0, currency: USD}", "Free must cost nothing"),
        ("{monthly_cents: -1, yearly_cents: 0, currency: USD}", "greater than or equal"),
        ("{monthly_cents: 0, yearly_cents: 0, currency: usd}", "pattern"),
        ("{monthly_cents: 0, yearly: 0, currency: USD}", "yearly"),
    ],
)
def test_a_bad_price_file_is_refused(tmp_path: Path, free: str, reason: str) -> None:
    good = "{monthly_cents: 0, yearly_cents: 0, currency: USD}"
    assert list(load_prices(_price_file(tmp_path / "good", good))) == list(load_plans())
    with pytest.raises(ValueError, match=reason):
        load_prices(_price_file(tmp_path, free))


def test_every_plan_needs_a_price(tmp_path: Path) -> None:
    path = _price_file(tmp_path, "{monthly_cents: 0, yearly_cents: 0, currency: USD}", others=False)
    with pytest.raises(ValueError, match=r"missing \['max', 'pro', 'redistribution'\]"):
        load_prices(path)


def test_calendar_months_clamp_to_the_last_day() -> None:
    at = dt.time(10, 0)

    def day(y: int, m: int, d: int) -> dt.datetime:
        return dt.datetime.combine(dt.date(y, m, d), at, dt.UTC)

    assert add_months(day(2027, 1, 31), 1) == day(2027, 2, 28)
    assert add_months(day(2028, 1, 31), 1) == day(2028, 2, 29)
    assert add_months(day(2027, 3, 31), 1) == day(2027, 4, 30)
    assert add_months(day(2027, 12, 15), 1) == day(2028, 1, 15)
    assert add_months(day(2028, 2, 29), 12) == day(2029, 2, 28)
    assert add_months(day(2028, 2, 29), 48) == day(2032, 2, 29)
    assert add_months(day(2027, 1, 31), 2) == day(2027, 3, 31)
    assert add_months(day(2027, 3, 31), -1) == day(2027, 2, 28)


# plan changes


def test_free_to_monthly_pro_is_billed_from_now(
    billing: Billing, store: AccountStore, clock: ManualClock
) -> None:
    account = store.create_account("p@example.com", "free")
    free = billing.summary(account.id)
    assert (free.plan, free.plan_name, free.interval, free.price_cents) == ("free", "Free", None, 0)
    assert free.trial is None and free.period is None and free.invoices == []
    assert [p.plan for p in free.prices] == ["free", "pro", "max", "redistribution"]

    summary = billing.change_plan(account.id, "pro", "monthly")
    assert isinstance(summary, BillingSummary)
    assert (summary.plan, summary.interval, summary.price_cents) == ("pro", "monthly", 2900)
    assert store.get_account(account.id).plan == "pro"
    assert summary.period is not None
    assert summary.period.kind == "paid" and summary.period.starts_at == START
    assert summary.period.ends_at == dt.datetime(2027, 2, 28, 10, 0, tzinfo=dt.UTC)  # 31 Jan + 1
    (invoice,) = summary.invoices
    assert (invoice.amount_cents, invoice.currency, invoice.state) == (2900, "USD", "recorded")
    assert invoice.provider == "recording"
    assert re.fullmatch(r"rec_[0-9a-f]{24}", invoice.provider_reference or "")
    assert re.fullmatch(r"inv_[0-9a-f]{16}", invoice.id)
    assert summary.period.invoice_id == invoice.id
    assert (invoice.period_start, invoice.period_end) == (START, summary.period.ends_at)


def test_free_to_yearly_max_is_billed_a_year(billing: Billing, store: AccountStore) -> None:
    account = store.create_account("m@example.com", "free")
    summary = billing.change_plan(account.id, "max", "yearly")
    assert summary.price_cents == 99000
    assert summary.period is not None
    assert summary.period.ends_at == dt.datetime(2028, 1, 31, 10, 0, tzinfo=dt.UTC)
    assert [i.amount_cents for i in summary.invoices] == [99000]


def test_upgrade_and_downgrades_revoke_keys_and_keep_webhook_endpoints(
    engine: sa.Engine, billing: Billing, store: AccountStore, clock: ManualClock
) -> None:
    account = store.create_account("hooks@example.com", "free")
    billing.change_plan(account.id, "max", "monthly")
    keys = [store.create_key(account.id).key_id for _ in range(3)]
    endpoints = WebhookEndpoints(
        engine,
        clock,
        store,
        SecretBox(Fernet.generate_key()),
        UrlPolicy(),
        resolver=lambda _host, _port: ["93.184.216.34"],
    )
    endpoint = endpoints.add(account.id, "https://hooks.example.com/findata").endpoint
    assert receives_webhooks(store.get_account(account.id))

    clock.advance(10 * DAY)
    summary = billing.change_plan(account.id, "pro", "monthly")  # Pro: one key, no webhooks
    assert _active_keys(store, account.id) == [keys[-1]]  # the newest key stays
    moved = store.get_account(account.id)
    assert moved.plan == "pro" and not receives_webhooks(moved)
    assert [e.endpoint_id for e in endpoints.list(account.id)] == [endpoint.endpoint_id]
    assert not endpoints.list(account.id)[0].receives_events
    # no proration: the full Pro price from now, the Max period ended now
    assert [i.amount_cents for i in summary.invoices] == [2900, 9900]
    assert summary.period is not None and summary.period.starts_at == clock.now()
    with engine.connect() as connection:
        ends = connection.execute(
            sa.select(subscription_periods.c.plan, subscription_periods.c.ends_at).order_by(
                subscription_periods.c.id
            )
        ).all()
    assert ends[0].plan == "max"
    assert ends[0].ends_at.replace(tzinfo=dt.UTC) == clock.now()

    clock.advance(DAY)
    free = billing.change_plan(account.id, "free")
    assert (free.plan, free.interval, free.period) == ("free", None, None)
    assert len(free.invoices) == 2  # going down to Free charges nothing
    assert _active_keys(store, account.id) == [keys[-1]]
    assert [e.endpoint_id for e in endpoints.list(account.id)] == [endpoint.endpoint_id]
    # nothing is renewed on Free
    clock.advance(60 * DAY)
    assert billing.renew_due() == 0
    assert _count(engine, invoices) == 2


def test_refusals_say_why_and_change_nothing(
    engine: sa.Engine, billing: Billing, store: AccountStore
) -> None:
    free = store.create_account("f@example.com", "free")
    pro = store.create_account("p@example.com", "free")
    billing.change_plan(pro.id, "pro", "monthly")
    cases = [
        (lambda: billing.change_plan(free.id, "gold", "monthly"), "no plan 'gold'"),
        (lambda: billing.change_plan(free.id, "pro"), "choose monthly or yearly"),
        (lambda: billing.change_plan(free.id, "pro", "weekly"), "unknown billing interval"),
        (lambda: billing.change_plan(free.id, "free"), "on Free already"),
        (lambda: billing.change_plan(pro.id, "pro", "monthly"), "billed monthly, already"),
        (lambda: billing.change_interval(pro.id, "monthly"), "billed monthly, already"),
        (lambda: billing.change_interval(free.id, "yearly"), "Free is not billed"),
    ]
    for call, reason in cases:
        with pytest.raises(BillingRefused, match=reason):
            call()
    with pytest.raises(AccountNotFound):
        billing.change_plan("acct_missing", "pro", "monthly")
    assert _count(engine, invoices) == 1
    assert store.get_account(free.id).plan == "free"


def test_a_failed_charge_records_nothing(engine: sa.Engine, clock: ManualClock) -> None:
    class Declined:
        name = "declining"

        def charge(self, account_id: str, amount_cents: int, currency: str, what: str) -> str:
            raise RuntimeError("card declined")

    store = AccountStore(engine, clock)
    account = store.create_account("d@example.com", "free")
    with pytest.raises(RuntimeError, match="declined"):
        Billing(engine, clock, store, Declined()).change_plan(account.id, "max", "monthly")
    assert store.get_account(account.id).plan == "free"
    assert _count(engine, invoices) == 0 and _count(engine, subscription_periods) == 0


# renewals and intervals


def test_renewals_keep_the_anchor_day_and_run_once(
    engine: sa.Engine, billing: Billing, store: AccountStore, clock: ManualClock
) -> None:
    account = store.create_account("r@example.com", "free")
    billing.change_plan(account.id, "pro", "monthly")  # 31 January
    assert billing.renew_due() == 0  # nothing ended yet

    clock.set(dt.datetime(2027, 2, 28, 10, 0, tzinfo=dt.UTC))  # the first period ends
    assert billing.renew_due() == 1
    assert billing.renew_due() == 0  # idempotent at the same time
    period = billing.summary(account.id).period
    assert period is not None
    # 31 January + 2 months: back on the 31st after February
    assert (period.starts_at.day, period.ends_at) == (
        28,
        dt.datetime(2027, 3, 31, 10, 0, tzinfo=dt.UTC),
    )

    # the job did not run for four months: every missed period is billed, once
    clock.set(dt.datetime(2027, 6, 30, 11, 0, tzinfo=dt.UTC))
    assert billing.renew_due() == 4
    assert billing.renew_due(clock.now()) == 0
    summary = billing.summary(account.id)
    assert [(i.period_start.month, i.period_start.day) for i in summary.invoices] == [
        (6, 30),
        (5, 31),
        (4, 30),
        (3, 31),
        (2, 28),
        (1, 31),
    ]
    assert summary.period is not None
    assert summary.period.ends_at == dt.datetime(2027, 7, 31, 10, 0, tzinfo=dt.UTC)
    assert {i.amount_cents for i in summary.invoices} == {2900}
    assert _count(engine, invoices) == 6


def test_an_interval_change_applies_at_the_next_period(
    billing: Billing, store: AccountStore, clock: ManualClock
) -> None:
    account = store.create_account("i@example.com", "free")
    billing.change_plan(account.id, "max", "monthly")
    clock.advance(5 * DAY)
    summary = billing.change_interval(account.id, "yearly")
    assert summary.interval == "yearly" and summary.price_cents == 99000
    assert summary.period is not None and summary.period.interval == "monthly"  # until its end
    assert len(summary.invoices) == 1
    # the same plan with another interval is an interval change too
    assert billing.change_plan(account.id, "max", "monthly").interval == "monthly"
    billing.change_interval(account.id, "yearly")

    clock.set(dt.datetime(2027, 2, 28, 10, 0, tzinfo=dt.UTC))
    assert billing.renew_due() == 1
    renewed = billing.summary(account.id)
    assert renewed.period is not None and renewed.period.interval == "yearly"
    assert renewed.period.ends_at == dt.datetime(2028, 2, 29, 10, 0, tzinfo=dt.UTC)
    assert renewed.invoices[0].amount_cents == 99000


def test_a_plan_set_by_the_operator_is_not_billed(
    engine: sa.Engine, billing: Billing, store: AccountStore, clock: ManualClock
) -> None:
    account = store.create_account("comp@example.com", "redistribution")
    summary = billing.summary(account.id)
    assert (summary.interval, summary.price_cents, summary.period) == (None, None, None)
    clock.advance(400 * DAY)
    assert billing.renew_due() == 0
    with engine.connect() as connection:
        assert connection.execute(sa.select(accounts.c.plan)).scalar_one() == "redistribution"
