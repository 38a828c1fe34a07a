"""Billing: plan prices (``accounts/prices.yaml``), paid periods and their invoices, plan and
interval changes, renewals.

A paid period is a ``subscription_periods`` row of kind ``paid`` with one invoice, charged
through a ``PaymentProvider``; the only built-in provider records what would be charged and
charges nothing. Every change runs in one transaction that first locks the account row (as
``AccountStore`` does), so a plan change, a renewal and the trial job never interleave on one
account.

Choices (the spec only says "Plan prices and billing amounts: not shown"):

- periods are calendar months or years from an anchor: 31 January + 1 month is 28 (or 29)
  February, and the renewal after that ends on 31 March again;
- a plan change takes effect now: the current period ends now and, on a paid plan, a new
  period starts now with a new invoice — no proration and no refund;
- an interval change alone takes effect at the next period;
- a plan chosen during an invitation trial ends the trial now (a paid plan is billed from now);
  choosing the trial's own plan keeps the trial and sets the interval billing will start at
  (and undoes a cancellation).
"""

from __future__ import annotations

import calendar
import datetime as dt
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal, Protocol

import sqlalchemy as sa
import yaml
from pydantic import BaseModel, ConfigDict, Field

from findata.accounts.store import (
    AccountError,
    AccountStore,
    account_row,
    lock_account,
    move_to_plan,
)
from findata.accounts.tables import accounts, invoices, subscription_periods
from findata.clock import Clock, as_utc
from findata.contracts.plans import load_plans, plan

PRICES_FILE = Path(__file__).parent / "prices.yaml"

Interval = Literal["monthly", "yearly"]
INTERVALS: tuple[Interval, ...] = ("monthly", "yearly")
MONTHS_PER_INTERVAL: dict[str, int] = {"monthly": 1, "yearly": 12}
FREE = "free"
#: the built-in provider's name; its invoices are "recorded", never "paid"
RECORDING = "recording"


class BillingRefused(AccountError):
    """A refused plan or interval change; the message says why in plain words."""


# prices


class PlanPrice(BaseModel):
    """One plan's prices per billing interval, in cents of ``currency``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    plan: str
    monthly_cents: int = Field(ge=0)
    yearly_cents: int = Field(ge=0)
    currency: str = Field(pattern=r"^[A-Z]{3}$")

    @property
    def name(self) -> str:
        """The plan's name (``Pro``)."""
        return plan(self.plan).name

    def cents(self, interval: str) -> int:
        """The price of one period at ``interval``."""
        return self.yearly_cents if check_interval(interval) == "yearly" else self.monthly_cents


@cache
def load_prices(path: Path = PRICES_FILE) -> dict[str, PlanPrice]:
    """Every plan's prices by code, in the plans' order; every plan of
    ``contracts/plans.yaml`` must have one, and Free must cost nothing."""
    entries = (yaml.safe_load(path.read_text()) or {}).get("plans") or {}
    prices = {code: PlanPrice(plan=code, **fields) for code, fields in entries.items()}
    plans = load_plans()
    if set(prices) != set(plans):
        missing = sorted(set(plans) - set(prices))
        unknown = sorted(set(prices) - set(plans))
        raise ValueError(
            f"{path}: prices must cover the plans; missing {missing}, unknown {unknown}"
        )
    if prices[FREE].monthly_cents or prices[FREE].yearly_cents:
        raise ValueError(f"{path}: Free must cost nothing")
    return {code: prices[code] for code in plans}


def format_amount(cents: int, currency: str) -> str:
    """``2900, "USD"`` as ``29.00 USD`` (for e-mail and pages)."""
    return f"{cents // 100:,}.{cents % 100:02d} {currency}"


# calendar periods


def add_months(when: dt.datetime, months: int) -> dt.datetime:
    """``when`` moved by whole calendar months, the time of day kept; a day the target month
    lacks becomes its last day (31 January + 1 month is 28 or 29 February)."""
    year, month_index = divmod(when.year * 12 + when.month - 1 + months, 12)
    month = month_index + 1
    return when.replace(
        year=year, month=month, day=min(when.day, calendar.monthrange(year, month)[1])
    )


def period_end(starts_at: dt.datetime, interval: str) -> dt.datetime:
    """The end of a period of ``interval`` starting at ``starts_at``."""
    return add_months(starts_at, MONTHS_PER_INTERVAL[check_interval(interval)])


# what the dashboard reads


@dataclass(frozen=True)
class Trial:
    """An invitation trial: the plan on trial, the interval billing starts at when it ends."""

    plan: str
    interval: str
    ends_at: dt.datetime
    cancelled_at: dt.datetime | None

    @property
    def cancelled(self) -> bool:
        """The account returns to Free at the end instead of being billed."""
        return self.cancelled_at is not None


@dataclass(frozen=True)
class Period:
    """A trial or paid period of a plan."""

    plan: str
    interval: str
    kind: str  # trial | paid
    starts_at: dt.datetime
    ends_at: dt.datetime
    invoice_id: str | None


@dataclass(frozen=True)
class Invoice:
    """What was charged (with the recording provider: would have been) for one period."""

    id: str
    plan: str
    interval: str
    period_start: dt.datetime
    period_end: dt.datetime
    amount_cents: int
    currency: str
    provider: str
    provider_reference: str | None
    state: str  # recorded | paid | failed
    created_at: dt.datetime


@dataclass(frozen=True)
class BillingSummary:
    """An account's billing page: its plan and interval, the trial, the current period, the
    invoices (newest first) and the price list."""

    account_id: str
    plan: str
    plan_name: str
    #: the interval the next period is billed at (during a trial: when the trial ends);
    #: None on Free and on a plan the operator set without billing
    interval: str | None
    #: the price of the plan at ``interval`` (0 on Free, None without an interval)
    price_cents: int | None
    currency: str
    trial: Trial | None
    period: Period | None
    invoices: list[Invoice]
    prices: list[PlanPrice]


# payment providers


class PaymentProvider(Protocol):
    """Charges an account; raises when the charge fails."""

    name: str

    def charge(self, account_id: str, amount_cents: int, currency: str, description: str) -> str:
        """Charge ``amount_cents`` and return the provider's reference of the charge."""
        ...


class RecordingProvider:
    """Charges nothing: the invoice records what would have been charged."""

    name = RECORDING

    def charge(self, account_id: str, amount_cents: int, currency: str, description: str) -> str:
        """A fresh reference (``rec_`` and 24 hex digits); no money moves."""
        return "rec_" + secrets.token_hex(12)


# the operations


class Billing:
    """Prices, plan changes and renewals on one control plane, with time from ``clock``."""

    def __init__(
        self,
        engine: sa.Engine,
        clock: Clock,
        store: AccountStore,
        provider: PaymentProvider,
        *,
        prices: Mapping[str, PlanPrice] | None = None,
    ) -> None:
        self.engine = engine
        self.clock = clock
        self.store = store
        self.provider = provider
        self.prices = dict(prices) if prices is not None else load_prices()

    def summary(self, account_id: str) -> BillingSummary:
        """The account's billing as of now."""
        now = self.clock.now()
        with self.engine.connect() as connection:
            row = account_row(connection, account_id)
            period_row = connection.execute(
                sa.select(subscription_periods)
                .where(
                    subscription_periods.c.account_id == account_id,
                    subscription_periods.c.starts_at <= now,
                    subscription_periods.c.ends_at > now,
                )
                .order_by(subscription_periods.c.starts_at.desc(), subscription_periods.c.id.desc())
                .limit(1)
            ).first()
            invoice_rows = connection.execute(
                sa.select(invoices)
                .where(invoices.c.account_id == account_id)
                .order_by(invoices.c.created_at.desc(), invoices.c.period_start.desc())
            ).all()
        trial = _trial(row)
        interval = trial.interval if trial is not None else row.billing_interval
        price = self.prices[row.plan]
        if row.plan == FREE:
            price_cents: int | None = 0
        else:
            price_cents = None if interval is None else price.cents(interval)
        return BillingSummary(
            account_id=account_id,
            plan=row.plan,
            plan_name=plan(row.plan).name,
            interval=interval,
            price_cents=price_cents,
            currency=price.currency,
            trial=trial,
            period=None if period_row is None else _period(period_row),
            invoices=[_invoice(r) for r in invoice_rows],
            prices=list(self.prices.values()),
        )

    def change_plan(
        self, account_id: str, plan_code: str, interval: str | None = None
    ) -> BillingSummary:
        """Move the account to ``plan_code`` now: a paid plan is billed from now at
        ``interval`` (required for a paid plan, ignored for Free); keys beyond the new plan's
        limit are revoked, oldest first. The same plan with another interval changes the
        interval only (from the next period). Webhook endpoints stay as they are: on a plan
        without webhooks they receive nothing."""
        if plan_code not in self.prices:
            raise BillingRefused(
                f"there is no plan {plan_code!r}; choose one of {', '.join(self.prices)}"
            )
        new_name = plan(plan_code).name
        if plan_code == FREE:
            interval = None  # Free is not billed
        else:
            if interval is None:
                raise BillingRefused(f"choose monthly or yearly billing for {new_name}")
            interval = check_interval(interval)
        now = self.clock.now()
        with self.engine.begin() as connection:
            row = locked_account(connection, account_id)
            if plan_code == row.plan:
                if plan_code == FREE:
                    raise BillingRefused("the account is on Free already")
                assert interval is not None
                self._set_interval(connection, row, interval, same_plan=True)
            else:
                # the current period (paid or trial) ends now: no proration, no refund
                end_current_period(connection, account_id, now)
                values: dict[str, object] = {**TRIAL_CLEARED, "billing_interval": interval}
                if plan_code != FREE:
                    assert interval is not None
                    self.open_paid_period(connection, account_id, plan_code, interval, now)
                connection.execute(
                    accounts.update().where(accounts.c.id == account_id).values(**values)
                )
                move_to_plan(connection, account_id, plan_code, now)
        return self.summary(account_id)

    def change_interval(self, account_id: str, interval: str) -> BillingSummary:
        """Bill the account's paid plan at ``interval`` from its next period (during a trial:
        when the trial ends)."""
        interval = check_interval(interval)
        with self.engine.begin() as connection:
            row = locked_account(connection, account_id)
            if row.plan == FREE:
                raise BillingRefused("Free is not billed; choose a paid plan instead")
            self._set_interval(connection, row, interval, same_plan=False)
        return self.summary(account_id)

    def renew_due(self, now: dt.datetime | None = None) -> int:
        """Give every paid period that has ended its next period and invoice (all the periods
        missed, when the job did not run for a while); returns how many periods were added.
        Running it again at the same time adds nothing."""
        now = self.clock.now() if now is None else now
        newest_end = (
            sa.select(subscription_periods.c.ends_at)
            .where(subscription_periods.c.account_id == accounts.c.id)
            .order_by(subscription_periods.c.starts_at.desc(), subscription_periods.c.id.desc())
            .limit(1)
            .correlate(accounts)
            .scalar_subquery()
        )
        due = sa.select(accounts.c.id).where(
            accounts.c.plan != FREE,
            accounts.c.trial_plan.is_(None),
            accounts.c.billing_interval.is_not(None),
            newest_end <= now,
        )
        with self.engine.connect() as connection:
            account_ids = list(connection.execute(due.order_by(accounts.c.id)).scalars())
        return sum(self._renew(account_id, now) for account_id in account_ids)

    def open_paid_period(
        self,
        connection: sa.Connection,
        account_id: str,
        plan_code: str,
        interval: str,
        starts_at: dt.datetime,
    ) -> Period:
        """Charge and record a new paid period of ``plan_code`` from ``starts_at``, in the
        caller's transaction (which holds the account's lock): the trial job uses it to start
        billing at the end of a trial."""
        return self._bill(
            connection, account_id, plan_code, interval, starts_at, period_end(starts_at, interval)
        )

    # internals

    def _set_interval(
        self, connection: sa.Connection, row: sa.Row, interval: str, *, same_plan: bool
    ) -> None:
        name = plan(row.plan).name
        if row.trial_plan is not None:
            if same_plan and row.trial_cancelled_at is not None:
                # choosing the trial's plan again keeps it after the trial: undo the cancellation
                values: dict[str, object] = {"trial_interval": interval, "trial_cancelled_at": None}
            elif interval == row.trial_interval:
                raise BillingRefused(
                    f"the {name} trial already moves to {interval} billing on "
                    f"{as_utc(row.trial_ends_at):%Y-%m-%d}"
                )
            else:
                values = {"trial_interval": interval}
        else:
            if interval == row.billing_interval:
                raise BillingRefused(f"the account is on {name}, billed {interval}, already")
            values = {"billing_interval": interval}
        connection.execute(accounts.update().where(accounts.c.id == row.id).values(**values))

    def _renew(self, account_id: str, now: dt.datetime) -> int:
        with self.engine.begin() as connection:
            row = locked_account(connection, account_id)
            if row.plan == FREE or row.trial_plan is not None or row.billing_interval is None:
                return 0
            run = _paid_run(connection, account_id)
            # looked at again under the lock: another run may have renewed it meanwhile
            if not run or run[0].plan != row.plan or run[0].ends_at > now:
                return 0
            # each end is counted in months from the run's first start, so a period that
            # started on the 31st ends on the 31st again after a shorter month
            anchor = run[-1].starts_at
            months = sum(MONTHS_PER_INTERVAL[p.interval] for p in run)
            starts_at, added = run[0].ends_at, 0
            while starts_at <= now:
                months += MONTHS_PER_INTERVAL[row.billing_interval]
                ends_at = add_months(anchor, months)
                self._bill(
                    connection, account_id, row.plan, row.billing_interval, starts_at, ends_at
                )
                starts_at, added = ends_at, added + 1
            return added

    def _bill(
        self,
        connection: sa.Connection,
        account_id: str,
        plan_code: str,
        interval: str,
        starts_at: dt.datetime,
        ends_at: dt.datetime,
    ) -> Period:
        price = self.prices[plan_code]
        amount = price.cents(interval)
        description = (
            f"findata {plan(plan_code).name}, billed {interval}, "
            f"{starts_at:%Y-%m-%d} to {ends_at:%Y-%m-%d}"
        )
        # charged inside the transaction: a charge that raises records nothing
        reference = self.provider.charge(account_id, amount, price.currency, description)
        now = self.clock.now()
        invoice_id = "inv_" + secrets.token_hex(8)
        connection.execute(
            invoices.insert().values(
                id=invoice_id,
                account_id=account_id,
                plan=plan_code,
                interval=interval,
                period_start=starts_at,
                period_end=ends_at,
                amount_cents=amount,
                currency=price.currency,
                provider=self.provider.name,
                provider_reference=reference,
                state="recorded" if self.provider.name == RECORDING else "paid",
                created_at=now,
            )
        )
        connection.execute(
            subscription_periods.insert().values(
                account_id=account_id,
                plan=plan_code,
                interval=interval,
                kind="paid",
                starts_at=starts_at,
                ends_at=ends_at,
                invoice_id=invoice_id,
                created_at=now,
            )
        )
        return Period(plan_code, interval, "paid", starts_at, ends_at, invoice_id)


# shared with the invitation trials (accounts/invitations.py): all inside the caller's
# transaction

#: the account columns of a trial, cleared
TRIAL_CLEARED: dict[str, object] = {
    "trial_plan": None,
    "trial_interval": None,
    "trial_ends_at": None,
    "trial_cancelled_at": None,
}


def locked_account(connection: sa.Connection, account_id: str) -> sa.Row:
    """Lock the account for this transaction (as ``AccountStore`` does), then read it."""
    lock_account(connection, account_id)
    return account_row(connection, account_id)


def end_current_period(connection: sa.Connection, account_id: str, now: dt.datetime) -> None:
    """End now the period running now (its invoice keeps the period as billed)."""
    connection.execute(
        subscription_periods.update()
        .where(
            subscription_periods.c.account_id == account_id,
            subscription_periods.c.starts_at <= now,
            subscription_periods.c.ends_at > now,
        )
        .values(ends_at=now)
    )


def check_interval(interval: str) -> Interval:
    """``interval`` when it is monthly or yearly, else a plain-words refusal."""
    if interval not in INTERVALS:
        raise BillingRefused(f"unknown billing interval {interval!r}; choose monthly or yearly")
    return interval  # type: ignore[return-value]


def _trial(row: sa.Row) -> Trial | None:
    if row.trial_plan is None:
        return None
    cancelled = None if row.trial_cancelled_at is None else as_utc(row.trial_cancelled_at)
    return Trial(row.trial_plan, row.trial_interval, as_utc(row.trial_ends_at), cancelled)


def _period(row: sa.Row) -> Period:
    return Period(
        row.plan, row.interval, row.kind, as_utc(row.starts_at), as_utc(row.ends_at), row.invoice_id
    )


def _invoice(row: sa.Row) -> Invoice:
    return Invoice(
        id=row.id,
        plan=row.plan,
        interval=row.interval,
        period_start=as_utc(row.period_start),
        period_end=as_utc(row.period_end),
        amount_cents=row.amount_cents,
        currency=row.currency,
        provider=row.provider,
        provider_reference=row.provider_reference,
        state=row.state,
        created_at=as_utc(row.created_at),
    )


def _paid_run(connection: sa.Connection, account_id: str) -> list[Period]:
    """The account's newest run of back-to-back paid periods of one plan, newest first (empty
    when its newest period is not a paid one). A period ended early by a plan change ends a
    run: its invoice still names the end it was billed to."""
    rows = connection.execute(
        sa.select(subscription_periods, invoices.c.period_end)
        .outerjoin(invoices, invoices.c.id == subscription_periods.c.invoice_id)
        .where(subscription_periods.c.account_id == account_id)
        .order_by(subscription_periods.c.starts_at.desc(), subscription_periods.c.id.desc())
    ).all()
    run: list[Period] = []
    for row in rows:
        period = _period(row)
        if period.kind != "paid":
            break
        if run:
            newer = run[-1]
            billed_to = None if row.period_end is None else as_utc(row.period_end)
            if (
                period.plan != newer.plan
                or period.ends_at != newer.starts_at
                or billed_to != period.ends_at
            ):
                break
        run.append(period)
    return run
