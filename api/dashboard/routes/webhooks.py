"""The webhooks pages (Max and Redistribution; Free and Pro see what they would get), on
``webhooks.endpoints.WebhookEndpoints``: add an endpoint (its ``whsec_`` secret shown once, on
the endpoint's page the form leads to), the list with states, pause, resume, send a test, rotate
the secret (shown once too), remove (after a confirmation), and each endpoint's delivery log
(50 newest of 30 days) with Resend on Failed and No retries left."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response

from findata.api.dashboard.deps import Member
from findata.api.dashboard.page import Page, form_text
from findata.contracts.plans import plan
from findata.webhooks.endpoints import SecretShown, WebhookRefused

router = APIRouter(prefix="/dashboard/webhooks")
LIST = "/dashboard/webhooks"


def _list_page(page: Page, status: int = 200, **context: object) -> Response:
    account = page.signed_in.account
    return page.render(
        "webhooks.html",
        status=status,
        plan=plan(account.plan),
        endpoints=page.services.webhooks.list(account.id),
        **context,
    )


def _secret_shown(endpoint_id: str) -> str:
    """What the session holds for an endpoint's page: its signing secret, to show once."""
    return f"webhook-secret:{endpoint_id}"


def _endpoint_page(page: Page, endpoint_id: str, status: int = 200, **context: object) -> Response:
    account_id = page.signed_in.account.id
    try:
        endpoint = page.services.webhooks.get(endpoint_id, account_id)
        log = page.services.webhooks.log(endpoint_id, account_id)
    except WebhookRefused as refused:
        return _list_page(page, status=refused.status, error=str(refused))
    return page.render(
        "webhook.html",
        status=status,
        plan=plan(page.signed_in.account.plan),
        endpoint=endpoint,
        log=log,
        **context,
    )


@router.get("", include_in_schema=False)
def endpoints(page: Member) -> Response:
    """The account's endpoints (or, on Free and Pro, what Max would give)."""
    return _list_page(page)


@router.post("", include_in_schema=False)
async def add_endpoint(page: Member) -> Response:
    """Add an endpoint; its signing secret is shown this once."""
    form = await page.form()
    url = form_text(form, "url").strip()
    try:
        shown: SecretShown = page.services.webhooks.add(page.signed_in.account.id, url)
    except WebhookRefused as refused:
        return _list_page(page, status=refused.status, error=str(refused), url=url)
    endpoint_id = shown.endpoint.endpoint_id
    page.hold_once(_secret_shown(endpoint_id), secret=shown.secret, rotated=False)
    return page.redirect(f"{LIST}/{endpoint_id}")


@router.get("/{endpoint_id}", include_in_schema=False)
def endpoint(page: Member, endpoint_id: str) -> Response:
    """One endpoint: its state and delivery log, and a secret just made (this once)."""
    shown = page.take_once(_secret_shown(endpoint_id))
    return _endpoint_page(
        page, endpoint_id, new_secret=shown.get("secret"), rotated=shown.get("rotated", False)
    )


@router.get("/{endpoint_id}/remove", include_in_schema=False)
def confirm_remove(page: Member, endpoint_id: str) -> Response:
    """Ask before removing an endpoint."""
    try:
        found = page.services.webhooks.get(endpoint_id, page.signed_in.account.id)
    except WebhookRefused as refused:
        return _list_page(page, status=refused.status, error=str(refused))
    return page.confirm(
        title="Remove this endpoint?",
        message=f"Nothing more is sent to {found.url}, and its delivery log goes with it.",
        button="Remove endpoint",
        back=f"{LIST}/{endpoint_id}",
    )


ACTIONS = {
    "pause": "The endpoint is paused: nothing is sent until you resume it.",
    "resume": "The endpoint is active again.",
    "test": "A webhook.test event is on its way; it shows in the log below.",
    "remove": "The endpoint is removed.",
}


@router.post("/{endpoint_id}/{action}", include_in_schema=False)
async def endpoint_action(page: Member, endpoint_id: str, action: str) -> Response:
    """Pause, resume, send a test, rotate the secret (shown once) or remove (confirmed)."""
    await page.form()
    account_id = page.signed_in.account.id
    service = page.services.webhooks
    try:
        if action == "rotate":
            shown = service.rotate_secret(endpoint_id, account_id)
            page.hold_once(_secret_shown(endpoint_id), secret=shown.secret, rotated=True)
            return page.redirect(f"{LIST}/{endpoint_id}")
        if action not in ACTIONS:
            return _endpoint_page(page, endpoint_id, status=404, error="No such action.")
        {
            "pause": service.pause,
            "resume": service.resume,
            "test": service.send_test,
            "remove": service.remove,
        }[action](endpoint_id, account_id)
    except WebhookRefused as refused:
        if refused.status == 404:
            return _list_page(page, status=404, error=str(refused))
        return _endpoint_page(page, endpoint_id, status=refused.status, error=str(refused))
    target = LIST if action == "remove" else f"{LIST}/{endpoint_id}"
    return page.redirect(target, ACTIONS[action])


@router.post("/{endpoint_id}/deliveries/{delivery_id}/resend", include_in_schema=False)
async def resend(page: Member, endpoint_id: str, delivery_id: str) -> Response:
    """Send a Failed or No-retries-left delivery's event again."""
    await page.form()
    account_id = page.signed_in.account.id
    try:
        page.services.webhooks.get(endpoint_id, account_id)
        page.services.webhooks.resend(delivery_id, account_id)
    except WebhookRefused as refused:
        return _endpoint_page(page, endpoint_id, status=refused.status, error=str(refused))
    return page.redirect(f"{LIST}/{endpoint_id}", "The event is sent again; see the log.")
