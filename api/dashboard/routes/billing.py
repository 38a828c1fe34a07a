"""The plan and billing page: the current plan and billing interval, the plans compared (from
contracts/plans.yaml), change plan or interval, redeem an invitation (30 days of Pro or Max
free, then billing at the chosen interval unless cancelled), the current period and the
invoices (the built-in provider records what would be charged). Cancelling a trial asks for
confirmation first."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response

from findata.accounts.billing import BillingSummary, format_amount
from findata.accounts.invitations import cancel_trial, redeem
from findata.accounts.store import AccountError
from findata.api.dashboard.deps import Member
from findata.api.dashboard.page import Page, form_text
from findata.api.dashboard.plan_comparison import plan_comparison

router = APIRouter(prefix="/dashboard/billing")
PAGE = "/dashboard/billing"
INTERVALS = ("monthly", "yearly")


def _billing_page(page: Page, status: int = 200, **context: object) -> Response:
    summary: BillingSummary = page.services.billing.summary(page.signed_in.account.id)
    return page.render(
        "billing.html",
        status=status,
        billing=summary,
        amount=format_amount,
        intervals=INTERVALS,
        comparison=plan_comparison(),
        **context,
    )


@router.get("", include_in_schema=False)
def billing(page: Member) -> Response:
    """The account's plan, trial, period, invoices and the price list."""
    return _billing_page(page)


@router.post("/plan", include_in_schema=False)
async def change_plan(page: Member) -> Response:
    """Move to another plan now (a paid plan is billed from now at the chosen interval; a
    downgrade revokes keys beyond the new plan's limit, oldest first)."""
    form = await page.form()
    chosen, interval = form_text(form, "plan").strip(), form_text(form, "interval").strip() or None
    try:
        summary = page.services.billing.change_plan(page.signed_in.account.id, chosen, interval)
    except AccountError as refused:
        return _billing_page(page, status=400, error=str(refused))
    return page.redirect(PAGE, f"You are on {summary.plan_name} now.")


@router.post("/interval", include_in_schema=False)
async def change_interval(page: Member) -> Response:
    """Bill the plan monthly or yearly from the next period."""
    form = await page.form()
    try:
        page.services.billing.change_interval(
            page.signed_in.account.id, form_text(form, "interval").strip()
        )
    except AccountError as refused:
        return _billing_page(page, status=400, error=str(refused))
    return page.redirect(PAGE, "The billing interval changes from the next period.")


@router.post("/invitation", include_in_schema=False)
async def redeem_invitation(page: Member) -> Response:
    """Redeem an invitation code: 30 days of its plan free."""
    form = await page.form()
    services = page.services
    try:
        trial = redeem(
            services.engine, services.clock, page.signed_in.account.id,
            form_text(form, "code").strip(), form_text(form, "interval").strip(),
        )  # fmt: skip
    except AccountError as refused:
        return _billing_page(
            page, status=400, error=str(refused), code=form_text(form, "code").strip()
        )
    return page.redirect(
        PAGE, f"Invitation redeemed: {trial.plan.capitalize()} free until "
        f"{trial.ends_at:%Y-%m-%d %H:%M} UTC; nothing is charged before then.",
    )  # fmt: skip


@router.get("/trial/cancel", include_in_schema=False)
def confirm_cancel(page: Member) -> Response:
    """Ask before cancelling the trial."""
    trial = page.services.billing.summary(page.signed_in.account.id).trial
    if trial is None or trial.cancelled:
        return page.redirect(PAGE)
    return page.confirm(
        title="Cancel the trial?",
        message=f"You keep {trial.plan.capitalize()} until {trial.ends_at:%Y-%m-%d %H:%M} UTC; "
        "then the account returns to Free and nothing is charged. A cancelled trial cannot be "
        "resumed.",
        button="Cancel the trial",
        back=PAGE,
    )


@router.post("/trial/cancel", include_in_schema=False)
async def cancel(page: Member) -> Response:
    """Cancel the trial: the plan stays until the trial ends, then the account returns to Free
    and nothing is charged."""
    await page.form()
    try:
        cancel_trial(page.services.engine, page.services.clock, page.signed_in.account.id)
    except AccountError as refused:
        return _billing_page(page, status=400, error=str(refused))
    return page.redirect(PAGE, "The trial is cancelled: you return to Free when it ends.")
