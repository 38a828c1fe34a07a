"""Invitations (spec "What the service does"): a code gives one free month (30 days) of Pro or
Max, redeemable once by its redeem-by date; billing then starts at the interval chosen on
redemption unless the trial is cancelled before it ends.

Codes look like ``INV-7KQX-M3PA-ZC9D``: twelve symbols from an alphabet without 0/O and 1/I
(60 random bits), stored only as the SHA-256 of the twelve symbols. Each operation runs in one
transaction that locks the account row first, like ``AccountStore``.

Choices: one invitation trial per account, ever; an account on any plan but Free cannot redeem.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

import sqlalchemy as sa

from findata.accounts.billing import (
    FREE,
    TRIAL_CLEARED,
    Billing,
    Trial,
    check_interval,
    format_amount,
    locked_account,
)
from findata.accounts.notices import queue_notice
from findata.accounts.store import AccountError, move_to_plan
from findata.accounts.tables import accounts, invitations, subscription_periods
from findata.clock import Clock, as_utc, utc_today
from findata.contracts import plans
from findata.control_plane.schema import account_notices

TRIAL_LENGTH = dt.timedelta(days=30)
#: the "trial ending soon" e-mail goes out this long before the end
ENDING_SOON = dt.timedelta(days=3)
INVITED_PLANS = ("pro", "max")
#: 32 symbols (5 bits each), none that reads like another: no 0/O, no 1/I
CODE_ALPHABET = "23456789ABCDEFGHJKLMNPQRSTUVWXYZ"
CODE_PREFIX = "INV"
CODE_GROUPS = 3
GROUP_LENGTH = 4
CODE_LENGTH = CODE_GROUPS * GROUP_LENGTH
#: at most this many codes per call
MAX_COUNT = 1000
_SEPARATORS = re.compile(r"[\s\-‐‑‒–—]+")


class InvitationRefused(AccountError):
    """A refused invitation operation; ``reason`` names the cause for the dashboard (one of
    plan, redeem_by, count, unknown_code, already_used, expired, trial_running, paid_plan,
    trial_used, no_trial)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class TrialRun:
    """What one pass of the trial job did."""

    ending_soon_notices: int
    billing_started: int
    returned_to_free: int


# codes


def normalise_code(code: str) -> str | None:
    """The code's twelve symbols, whatever the letter case, spaces and dashes, with or without
    the ``INV`` prefix; None when it cannot be a code."""
    symbols = _SEPARATORS.sub("", code).upper()
    if len(symbols) == len(CODE_PREFIX) + CODE_LENGTH and symbols.startswith(CODE_PREFIX):
        symbols = symbols[len(CODE_PREFIX) :]
    if len(symbols) != CODE_LENGTH or any(c not in CODE_ALPHABET for c in symbols):
        return None
    return symbols


def code_hash(symbols: str) -> str:
    """The stored form of a normalised code: SHA-256, hex."""
    return hashlib.sha256(symbols.encode()).hexdigest()


def format_code(symbols: str) -> str:
    """Twelve symbols as the code people see: ``INV-XXXX-XXXX-XXXX``."""
    groups = [symbols[i : i + GROUP_LENGTH] for i in range(0, CODE_LENGTH, GROUP_LENGTH)]
    return "-".join([CODE_PREFIX, *groups])


def _new_symbols() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


# operations


def create_invitations(
    engine: sa.Engine, clock: Clock, plan: str, redeem_by: dt.date, count: int = 1
) -> list[str]:
    """``count`` new codes for a trial of ``plan`` (pro or max), redeemable up to and
    including ``redeem_by`` (UTC). The codes are returned this once; only their hashes are
    kept."""
    if plan not in INVITED_PLANS:
        raise InvitationRefused(
            "plan", f"invitations are for Pro or Max only, not {plan!r}; choose pro or max"
        )
    today = utc_today(clock)
    if redeem_by < today:
        raise InvitationRefused(
            "redeem_by", f"the redeem-by date {redeem_by} is in the past (today is {today}, UTC)"
        )
    if not 1 <= count <= MAX_COUNT:
        raise InvitationRefused("count", f"create from 1 to {MAX_COUNT} codes at a time")
    now = clock.now()
    symbols = [_new_symbols() for _ in range(count)]
    with engine.begin() as connection:
        connection.execute(
            invitations.insert(),
            [
                {"code_hash": code_hash(s), "plan": plan, "redeem_by": redeem_by, "created_at": now}
                for s in symbols
            ],
        )
    return [format_code(s) for s in symbols]


def redeem(engine: sa.Engine, clock: Clock, account_id: str, code: str, interval: str) -> Trial:
    """Start the invited plan's 30-day trial on the account, billed at ``interval`` (monthly
    or yearly) when it ends. The code is used up, the plan set and the trial period recorded
    in one transaction (the plan with the store's key rule, ``move_to_plan``); of two
    redemptions of one code at once exactly one wins."""
    interval = check_interval(interval)
    symbols = normalise_code(code)
    unknown = InvitationRefused(
        "unknown_code", "there is no invitation with this code; check it and try again"
    )
    if symbols is None:
        raise unknown
    presented = code_hash(symbols)
    now = clock.now()
    with engine.begin() as connection:
        account = locked_account(connection, account_id)
        invitation = connection.execute(
            sa.select(invitations).where(invitations.c.code_hash == presented)
        ).first()
        # found by hash; compared once more in constant time, as keys are
        if invitation is None or not hmac.compare_digest(invitation.code_hash, presented):
            raise unknown
        if invitation.redeemed_by is not None:
            raise _used()
        if now.date() > invitation.redeem_by:
            raise InvitationRefused(
                "expired", f"this invitation expired on {invitation.redeem_by:%Y-%m-%d}"
            )
        _check_can_start_trial(connection, account)
        # the conditional update decides between concurrent redemptions of one code
        won = connection.execute(
            invitations.update()
            .where(invitations.c.code_hash == presented, invitations.c.redeemed_by.is_(None))
            .values(redeemed_by=account_id, redeemed_at=now)
        ).rowcount
        if won != 1:
            raise _used()
        ends_at = now + TRIAL_LENGTH
        connection.execute(
            accounts.update()
            .where(accounts.c.id == account_id)
            .values(
                trial_plan=invitation.plan,
                trial_interval=interval,
                trial_ends_at=ends_at,
                trial_cancelled_at=None,
                billing_interval=None,
            )
        )
        move_to_plan(connection, account_id, invitation.plan, now)
        connection.execute(
            subscription_periods.insert().values(
                account_id=account_id,
                plan=invitation.plan,
                interval=interval,
                kind="trial",
                starts_at=now,
                ends_at=ends_at,
                invoice_id=None,
                created_at=now,
            )
        )
    return Trial(invitation.plan, interval, ends_at, None)


def cancel_trial(engine: sa.Engine, clock: Clock, account_id: str) -> Trial:
    """Cancel the account's running trial: the plan stays until the trial ends, then the
    account returns to Free instead of being billed (a second cancel keeps the first date)."""
    now = clock.now()
    with engine.begin() as connection:
        account = locked_account(connection, account_id)
        if account.trial_plan is None:
            raise InvitationRefused("no_trial", "no invitation trial is running on this account")
        if account.trial_cancelled_at is None:
            connection.execute(
                accounts.update().where(accounts.c.id == account_id).values(trial_cancelled_at=now)
            )
            cancelled_at = now
        else:
            cancelled_at = as_utc(account.trial_cancelled_at)
    return Trial(
        account.trial_plan, account.trial_interval, as_utc(account.trial_ends_at), cancelled_at
    )


def process_trial_ends(engine: sa.Engine, clock: Clock, billing: Billing) -> TrialRun:
    """The trial job: a "trial ending soon" e-mail once per trial within three days of its
    end; at the end, billing starts at the chosen interval (from the trial's end) or, when
    cancelled, the account returns to Free (keys beyond Free's limit revoked, oldest first:
    ``move_to_plan``). Running it again changes nothing more."""
    now = clock.now()
    running = sa.select(accounts.c.id).where(accounts.c.trial_plan.is_not(None))
    with engine.connect() as connection:
        soon = list(
            connection.execute(
                running.where(
                    accounts.c.trial_ends_at > now, accounts.c.trial_ends_at <= now + ENDING_SOON
                ).order_by(accounts.c.id)
            ).scalars()
        )
        ended = list(
            connection.execute(
                running.where(accounts.c.trial_ends_at <= now).order_by(accounts.c.id)
            ).scalars()
        )
    reminded = sum(_remind(engine, now, billing, account_id) for account_id in soon)
    outcomes = [_end_trial(engine, now, billing, account_id) for account_id in ended]
    return TrialRun(
        ending_soon_notices=reminded,
        billing_started=outcomes.count("billed"),
        returned_to_free=outcomes.count("free"),
    )


# internals


def _used() -> InvitationRefused:
    return InvitationRefused("already_used", "this invitation has been used already")


def _check_can_start_trial(connection: sa.Connection, account: sa.Row) -> None:
    if account.trial_plan is not None:
        raise InvitationRefused(
            "trial_running",
            f"a {plans.plan(account.trial_plan).name} trial is running on this account until "
            f"{as_utc(account.trial_ends_at):%Y-%m-%d}",
        )
    if account.plan != FREE:
        raise InvitationRefused(
            "paid_plan",
            "invitations are for accounts on Free; this account is on "
            f"{plans.plan(account.plan).name}",
        )
    had_trial = connection.execute(
        sa.select(subscription_periods.c.id)
        .where(
            subscription_periods.c.account_id == account.id,
            subscription_periods.c.kind == "trial",
        )
        .limit(1)
    ).first()
    if had_trial is not None:
        raise InvitationRefused(
            "trial_used", "this account has had its invitation trial already (one per account)"
        )


def _remind(engine: sa.Engine, now: dt.datetime, billing: Billing, account_id: str) -> int:
    with engine.begin() as connection:
        account = locked_account(connection, account_id)
        if account.trial_plan is None:
            return 0
        ends_at = as_utc(account.trial_ends_at)
        if not now < ends_at <= now + ENDING_SOON:
            return 0
        # once per trial: a trial_ending notice since this trial started counts
        sent = connection.execute(
            sa.select(account_notices.c.id)
            .where(
                account_notices.c.account_id == account_id,
                account_notices.c.kind == "trial_ending",
                account_notices.c.created_at >= ends_at - TRIAL_LENGTH,
            )
            .limit(1)
        ).first()
        if sent is not None:
            return 0
        name = plans.plan(account.trial_plan).name
        when = f"{ends_at:%Y-%m-%d} at {ends_at:%H:%M} UTC"
        if account.trial_cancelled_at is None:
            price = billing.prices[account.trial_plan]
            amount = format_amount(price.cents(account.trial_interval), price.currency)
            per = "month" if account.trial_interval == "monthly" else "year"
            body = (
                f"Your free month of findata {name} ends on {when}. Billing then starts: "
                f"{amount} a {per} ({account.trial_interval} billing).\n\n"
                "To return to Free instead, cancel the trial on the dashboard before then."
            )
        else:
            body = (
                f"Your free month of findata {name} ends on {when}. You cancelled the trial, "
                "so the account returns to Free then and nothing is charged.\n\n"
                f"To keep {name}, choose it on the dashboard's billing page before then."
            )
        queue_notice(
            connection,
            account_id=account_id,
            email=account.email,
            kind="trial_ending",
            subject=f"Your findata {name} trial ends on {ends_at:%Y-%m-%d}",
            body=body,
            now=now,
        )
        return 1


def _end_trial(engine: sa.Engine, now: dt.datetime, billing: Billing, account_id: str) -> str:
    """Close one ended trial: ``billed``, ``free``, or ``skipped`` (processed meanwhile)."""
    with engine.begin() as connection:
        account = locked_account(connection, account_id)
        # looked at again under the lock: another run (or a plan change) may have closed it
        if account.trial_plan is None or as_utc(account.trial_ends_at) > now:
            return "skipped"
        ends_at = as_utc(account.trial_ends_at)
        name = plans.plan(account.trial_plan).name
        values: dict[str, object] = dict(TRIAL_CLEARED)
        if account.plan != account.trial_plan:
            # the operator moved the account to another plan during the trial: that stands
            connection.execute(
                accounts.update().where(accounts.c.id == account_id).values(**values)
            )
            return "skipped"
        if account.trial_cancelled_at is None:
            period = billing.open_paid_period(
                connection, account_id, account.trial_plan, account.trial_interval, ends_at
            )
            price = billing.prices[account.trial_plan]
            amount = format_amount(price.cents(period.interval), price.currency)
            values["billing_interval"] = account.trial_interval
            outcome = "billed"
            subject = f"Your findata {name} trial has ended: billing has started"
            body = (
                f"Your free month of findata {name} ended on {ends_at:%Y-%m-%d}. Billing has "
                f"started at the {period.interval} interval you chose: {amount} for "
                f"{period.starts_at:%Y-%m-%d} to {period.ends_at:%Y-%m-%d} "
                f"(invoice {period.invoice_id}).\n\n"
                "You can change the plan or the interval on the dashboard's billing page."
            )
        else:
            revoked = move_to_plan(connection, account_id, FREE, now)
            values["billing_interval"] = None
            outcome = "free"
            subject = f"Your findata {name} trial has ended: the account is on Free"
            body = (
                f"Your free month of findata {name} ended on {ends_at:%Y-%m-%d}. As you "
                "cancelled the trial, the account is on Free now and nothing was charged."
            )
            if revoked:
                body += (
                    f"\n\nFree allows {plans.plan(FREE).active_keys} active key: the newest "
                    f"stays and {len(revoked)} older key(s) were revoked."
                )
        connection.execute(accounts.update().where(accounts.c.id == account_id).values(**values))
        queue_notice(
            connection,
            account_id=account_id,
            email=account.email,
            kind="trial_ended",
            subject=subject,
            body=body,
            now=now,
        )
        return outcome
