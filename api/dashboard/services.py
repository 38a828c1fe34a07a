"""What the dashboard's pages use, built once per app: accounts and sign-in, billing, webhook
endpoints, the mail outbox and its sender, session records and cookies, and the page templates."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa
from fastapi.templating import Jinja2Templates

from findata.accounts.billing import Billing, RecordingProvider
from findata.accounts.counters import UsageCounters
from findata.accounts.logins import Logins
from findata.accounts.mailer import Mailer
from findata.accounts.notices import NoticeBox
from findata.accounts.sessions import SessionRecords
from findata.accounts.store import AccountStore
from findata.api.dashboard.sessions import SessionCookies
from findata.clock import Clock
from findata.local_secrets import dashboard_secret
from findata.settings import Settings
from findata.webhooks.endpoints import WebhookEndpoints
from findata.webhooks.signing import SecretBox
from findata.webhooks.url_safety import UrlPolicy

TEMPLATES = Path(__file__).parent / "templates"
STATIC = Path(__file__).parent / "static"


@dataclass(frozen=True)
class DashboardServices:
    """The dashboard's parts (``app.state.dashboard``)."""

    settings: Settings
    engine: sa.Engine
    clock: Clock
    accounts: AccountStore
    counters: UsageCounters
    logins: Logins
    billing: Billing
    webhooks: WebhookEndpoints
    notice_box: NoticeBox
    mailer: Mailer
    sessions: SessionRecords
    cookies: SessionCookies
    templates: Jinja2Templates


def build_services(
    settings: Settings,
    engine: sa.Engine,
    clock: Clock,
    accounts: AccountStore,
    counters: UsageCounters,
) -> DashboardServices:
    """The dashboard's parts on the app's control plane and clock."""
    secret = dashboard_secret(settings)
    templates = Jinja2Templates(directory=TEMPLATES)
    return DashboardServices(
        settings=settings,
        engine=engine,
        clock=clock,
        accounts=accounts,
        counters=counters,
        logins=Logins(engine, clock, secret),
        billing=Billing(engine, clock, accounts, RecordingProvider()),
        webhooks=WebhookEndpoints(
            engine,
            clock,
            accounts,
            SecretBox.from_settings(settings),
            UrlPolicy.from_settings(settings),
        ),
        notice_box=NoticeBox.from_settings(settings),
        mailer=Mailer.from_settings(settings, engine, clock),
        sessions=SessionRecords(engine, clock),
        cookies=SessionCookies(secret),
        templates=templates,
    )
