"""``findata invitations create`` and ``findata billing run`` as an operator runs them (a
subprocess with its own FINDATA_HOME), on the SQLite default and on a real PostgreSQL database.

The subprocess runs on the real clock; the trials and periods it processes are made in this
process on a ``ManualClock`` set in the past."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from findata.accounts.billing import Billing, RecordingProvider
from findata.accounts.invitations import code_hash, normalise_code, redeem
from findata.accounts.store import AccountStore
from findata.clock import ManualClock
from findata.control_plane.schema import account_notices
from tests.findata.cli_runner import Cli

CODE_FORMAT = re.compile(r"INV(-[2-9A-HJ-NP-Z]{4}){3}")


@pytest.fixture
def cli(control_plane_url: str, tmp_path: Path) -> Cli:
    database_url = None if control_plane_url.startswith("sqlite") else control_plane_url
    cli = Cli(tmp_path / "home", database_url)
    assert cli.run("db", "upgrade").returncode == 0
    return cli


@pytest.fixture
def engine(cli: Cli) -> Iterator[sa.Engine]:
    """This process's own connection to the CLI's control plane (migrated by the CLI)."""
    engine = sa.create_engine(cli.url, poolclass=sa.NullPool)
    yield engine
    engine.dispose()


def _today() -> dt.date:
    return dt.datetime.now(dt.UTC).date()


def test_invitations_create_prints_the_codes_and_keeps_only_hashes(
    cli: Cli, engine: sa.Engine
) -> None:
    redeem_by = (_today() + dt.timedelta(days=30)).isoformat()
    created = cli.json(
        "invitations", "create", "--plan", "max", "--redeem-by", redeem_by, "--count", "3"
    )
    assert created["plan"] == "max" and created["redeem_by"] == redeem_by
    codes = created["codes"]
    assert len(set(codes)) == 3
    assert all(CODE_FORMAT.fullmatch(code) for code in codes), codes
    (other,) = cli.json("invitations", "create", "--plan", "pro", "--redeem-by", redeem_by)["codes"]
    with engine.connect() as connection:
        stored = connection.execute(sa.text("SELECT code_hash, plan FROM invitations")).all()
    expected = {code_hash(normalise_code(c) or "") for c in [*codes, other]}
    assert {row.code_hash for row in stored} == expected
    assert sorted(row.plan for row in stored) == ["max", "max", "max", "pro"]


def test_invitation_refusals_exit_1_with_the_reason(cli: Cli, engine: sa.Engine) -> None:
    tomorrow = (_today() + dt.timedelta(days=1)).isoformat()
    yesterday = (_today() - dt.timedelta(days=1)).isoformat()
    cases = [
        (("--plan", "free", "--redeem-by", tomorrow), "Pro or Max only"),
        (("--plan", "redistribution", "--redeem-by", tomorrow), "Pro or Max only"),
        (("--plan", "pro", "--redeem-by", yesterday), "is in the past"),
        (("--plan", "pro", "--redeem-by", "2026-13-01"), "YYYY-MM-DD"),
        (("--plan", "pro", "--redeem-by", tomorrow, "--count", "0"), "from 1 to 1000"),
    ]
    for args, reason in cases:
        result = cli.run("invitations", "create", *args)
        assert result.returncode == 1, args
        assert result.stderr.startswith("findata: ") and reason in result.stderr, result.stderr
        assert result.stdout == ""
    with engine.connect() as connection:
        assert connection.execute(sa.text("SELECT count(*) FROM invitations")).scalar() == 0


def test_billing_run_ends_trials_and_renews_once(cli: Cli, engine: sa.Engine) -> None:
    now = dt.datetime.now(dt.UTC)
    past = ManualClock(now - dt.timedelta(days=31))
    store = AccountStore(engine, past)
    billing = Billing(engine, past, store, RecordingProvider())
    redeem_by = (_today() + dt.timedelta(days=1)).isoformat()
    created = cli.json("invitations", "create", "--plan", "pro", "--redeem-by", redeem_by)
    (code,) = created["codes"]
    trial = store.create_account("trial@example.com", "free")
    redeem(engine, past, trial.id, code, "yearly")  # ended a day ago
    paid = store.create_account("paid@example.com", "free")
    past.set(now - dt.timedelta(days=40))
    billing.change_plan(paid.id, "max", "monthly")  # its first month ended about ten days ago

    counts = cli.json("billing", "run")
    assert counts == {
        "ending_soon_notices": 0,
        "billing_started": 1,
        "returned_to_free": 0,
        "periods_renewed": 1,
    }
    assert cli.json("billing", "run") == dict.fromkeys(counts, 0)
    past.set(dt.datetime.now(dt.UTC))
    trial_summary = billing.summary(trial.id)
    assert (trial_summary.plan, trial_summary.trial, trial_summary.interval) == (
        "pro",
        None,
        "yearly",
    )
    assert [i.amount_cents for i in trial_summary.invoices] == [29000]
    assert [i.amount_cents for i in billing.summary(paid.id).invoices] == [9900, 9900]
    with engine.connect() as connection:
        kinds = connection.execute(
            sa.select(account_notices.c.kind).where(account_notices.c.account_id == trial.id)
        ).all()
    assert [k.kind for k in kinds] == ["trial_ended"]
