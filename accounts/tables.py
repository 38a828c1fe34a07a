"""Accounts, API keys and usage counters (SQLAlchemy Core); migration 0002 creates them."""

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

#: IP addresses whose keyless requests are refused (429 temporarily_blocked)
blocked_ips = sa.Table(
    "blocked_ips",
    metadata,
    sa.Column("ip", sa.String(64), primary_key=True),
    sa.Column("blocked_at", sa.DateTime(timezone=True), nullable=False),
)
