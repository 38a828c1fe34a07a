"""E-mail the dashboard sends (verification, password reset): written from the text templates
under ``templates/mail/``, queued in the outbox, and sent right after the response by the
mailer (which retries what fails)."""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa
from starlette.background import BackgroundTask
from starlette.responses import Response

from findata.accounts.notices import queue_notice
from findata.accounts.store import Account
from findata.api.dashboard.services import DashboardServices
from findata.control_plane.schema import account_notices

#: one message of a kind per account in this time, so nobody can flood a mailbox with resets
RESEND_AFTER = dt.timedelta(minutes=2)


def queue_mail(
    services: DashboardServices,
    account: Account,
    kind: str,
    subject: str,
    *,
    sensitive: bool,
    **context: object,
) -> bool:
    """Queue the message ``mail/<kind>.txt`` to the account's address; False (nothing queued)
    when one of that kind went out less than ``RESEND_AFTER`` ago."""
    now = services.clock.now()
    body = services.templates.get_template(f"mail/{kind}.txt").render(
        account=account, base_url=services.settings.base_url.rstrip("/"), **context
    )
    with services.engine.begin() as connection:
        recent = connection.execute(
            sa.select(account_notices.c.id).where(
                account_notices.c.account_id == account.id,
                account_notices.c.kind == kind,
                account_notices.c.created_at > now - RESEND_AFTER,
            )
        ).first()
        if recent is not None:
            return False
        queue_notice(
            connection,
            account_id=account.id,
            email=account.email,
            kind=kind,
            subject=subject,
            body=body,
            now=now,
            box=services.notice_box if sensitive else None,
        )
    return True


def send_soon(services: DashboardServices, response: Response) -> Response:
    """Send what is due right after ``response`` (failures stay queued for the retry loop)."""
    response.background = BackgroundTask(services.mailer.send_due)
    return response
