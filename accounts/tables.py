"""Accounts, API keys, usage counters (migrations 0002, 0003, 0006), and the dashboard's sign-in,
invitation and billing records (migration 0005) and sessions (0007), as SQLAlchemy Core tables."""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()

#: one row per customer account; `plan` is a code of contracts/plans.yaml
accounts = sa.Table(
    "accounts",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),  # acct_ + 16 hex
    sa.Column("email", sa.String(320), nullable=False, unique=True),  # stored lower-case
    sa.Column("plan", sa.String(32), nullable=False),
    sa.Column("state", sa.String(16), nullable=False),  # enabled | disabled
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("state_changed_at", sa.DateTime(timezone=True), nullable=True),
    # invitation trials (dashboard issue): the plan on trial, billing interval, end of the trial
    sa.Column("trial_plan", sa.String(32), nullable=True),
    sa.Column("trial_interval", sa.String(16), nullable=True),
    sa.Column("trial_ends_at", sa.DateTime(timezone=True), nullable=True),
    # people on the dashboard (0005): argon2 hash (none until a password is set), the address
    # verified, when the password last changed (older sessions and reset links stop working)
    sa.Column("password_hash", sa.String(255), nullable=True),
    sa.Column("email_verified_at", sa.DateTime(timezone=True), nullable=True),
    sa.Column("password_changed_at", sa.DateTime(timezone=True), nullable=True),
    # billing (0005): the interval a paid plan is billed at; a trial the user cancelled
    sa.Column("billing_interval", sa.String(16), nullable=True),  # monthly | yearly
    sa.Column("trial_cancelled_at", sa.DateTime(timezone=True), nullable=True),
)

#: API keys, never in clear: the SHA-256 finds a key, a short prefix tells keys apart
api_keys = sa.Table(
    "api_keys",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column(
        "account_id", sa.String(32), sa.ForeignKey("accounts.id"), nullable=False, index=True
    ),
    sa.Column("key_hash", sa.String(64), nullable=False, unique=True),
    sa.Column("prefix", sa.String(16), nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
    # the key's last use, to the minute (written at most once a minute per key: 0005)
    sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True),
    # what the owner calls the key ("production", "laptop"): shown beside its prefix (0007)
    sa.Column("label", sa.String(64), nullable=True),
)

#: request and row counts per subject (an account id) and UTC window (day or clock hour)
usage_counters = sa.Table(
    "usage_counters",
    metadata,
    sa.Column("subject", sa.String(64), primary_key=True),
    sa.Column("window", sa.String(8), primary_key=True),  # day | hour
    sa.Column("window_start", sa.DateTime(timezone=True), primary_key=True),
    sa.Column("requests", sa.BigInteger, nullable=False),
    sa.Column("rows", sa.BigInteger, nullable=False),
    # requests refused by this window's limit (keyless: the first refusal is the burst 429,
    # the ones after it the rate-limit 429)
    sa.Column("refused", sa.BigInteger, nullable=False, server_default="0"),
)

#: the distinct entities (or, kind "as_of", index roster dates) a subject was served per UTC day
usage_distinct = sa.Table(
    "usage_distinct",
    metadata,
    sa.Column("subject", sa.String(64), primary_key=True),
    sa.Column("day", sa.Date, primary_key=True),
    sa.Column("kind", sa.String(16), primary_key=True),  # entity | as_of
    sa.Column("value", sa.String(32), primary_key=True),
)

#: one row per answered API call, for the dashboard's seven-day chart and endpoint table
usage_log = sa.Table(
    "usage_log",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("subject", sa.String(64), nullable=False),
    sa.Column("at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("endpoint", sa.String(64), nullable=False),
    sa.Column("status", sa.Integer, nullable=False),
    sa.Column("requests", sa.Integer, nullable=False),  # the per-ticker count
    sa.Column("rows", sa.Integer, nullable=False),
    sa.Index("ix_usage_log_subject_at", "subject", "at"),
)

#: the last usage batch each serving process wrote (accounts/counters/batches.py): a batch retried
#: after a commit whose answer was lost is not added twice (migration 0006)
usage_writes = sa.Table(
    "usage_writes",
    metadata,
    sa.Column("writer", sa.String(32), primary_key=True),  # a process's random id
    sa.Column("last_batch", sa.BigInteger, nullable=False),
    sa.Column("written_at", sa.DateTime(timezone=True), nullable=False),
)

#: IP addresses whose keyless requests are refused (429 temporarily_blocked)
blocked_ips = sa.Table(
    "blocked_ips",
    metadata,
    sa.Column("ip", sa.String(64), primary_key=True),
    sa.Column("blocked_at", sa.DateTime(timezone=True), nullable=False),
)

#: sign-in attempts, per account e-mail and per IP address, for throttling (0005)
sign_in_attempts = sa.Table(
    "sign_in_attempts",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("subject", sa.String(400), nullable=False),  # email:<address> | ip:<address>
    sa.Column("at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("succeeded", sa.Boolean, nullable=False),
    sa.Index("ix_sign_in_attempts_subject_at", "subject", "at"),
)

#: invitation codes (spec: 30 days of Pro or Max free), found by the code's SHA-256 (0005)
invitations = sa.Table(
    "invitations",
    metadata,
    sa.Column("code_hash", sa.String(64), primary_key=True),
    sa.Column("plan", sa.String(32), nullable=False),  # pro | max
    sa.Column("redeem_by", sa.Date, nullable=False),  # the last day it may be redeemed (UTC)
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("redeemed_by", sa.String(32), nullable=True),  # the account
    sa.Column("redeemed_at", sa.DateTime(timezone=True), nullable=True),
)

#: billing periods: one row per trial or paid period of a plan (0005)
subscription_periods = sa.Table(
    "subscription_periods",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("account_id", sa.String(32), nullable=False, index=True),
    sa.Column("plan", sa.String(32), nullable=False),
    sa.Column("interval", sa.String(16), nullable=False),  # monthly | yearly
    sa.Column("kind", sa.String(16), nullable=False),  # trial | paid
    sa.Column("starts_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("ends_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("invoice_id", sa.String(32), nullable=True),  # paid periods
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
)

#: invoices: what was (or, with the built-in provider, would have been) charged (0005)
invoices = sa.Table(
    "invoices",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),  # inv_ + 16 hex
    sa.Column("account_id", sa.String(32), nullable=False, index=True),
    sa.Column("plan", sa.String(32), nullable=False),
    sa.Column("interval", sa.String(16), nullable=False),
    sa.Column("period_start", sa.DateTime(timezone=True), nullable=False),
    sa.Column("period_end", sa.DateTime(timezone=True), nullable=False),
    sa.Column("amount_cents", sa.Integer, nullable=False),
    sa.Column("currency", sa.String(3), nullable=False),
    sa.Column("provider", sa.String(32), nullable=False),
    sa.Column("provider_reference", sa.String(128), nullable=True),
    sa.Column("state", sa.String(16), nullable=False),  # recorded | paid | failed
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
)

#: signed-in dashboard sessions (0007), found by the SHA-256 of the cookie's random token (the
#: token itself is never stored). Sign-out deletes its row; a password change or reset and
#: disabling the account delete every row of the account. ``once`` is a secret shown on the next
#: page only (a new key, a webhook signing secret), encrypted under a key derived from the
#: cookie's token, and cleared when it is shown.
dashboard_sessions = sa.Table(
    "dashboard_sessions",
    metadata,
    sa.Column("token_hash", sa.String(64), primary_key=True),
    sa.Column(
        "account_id", sa.String(32), sa.ForeignKey("accounts.id"), nullable=False, index=True
    ),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False, index=True),
    sa.Column("once", sa.Text, nullable=True),
)
