"""Who may receive webhooks: an enabled account whose plan has the ``webhooks`` capability.

Accounts belong to ``accounts/``, which this part does not import; callers hand in anything that
looks accounts up by id (``findata.accounts.store.AccountStore`` does).
"""

from __future__ import annotations

from typing import Protocol

from findata.contracts.plans import plan


class Subscriber(Protocol):
    """The fields of an account that webhooks read."""

    @property
    def id(self) -> str: ...
    @property
    def email(self) -> str: ...
    @property
    def plan(self) -> str: ...
    @property
    def state(self) -> str: ...


class SubscriberDirectory(Protocol):
    """Looks an account up by id (raises when there is none)."""

    def get_account(self, account_id: str) -> Subscriber: ...


def plan_has_webhooks(subscriber: Subscriber) -> bool:
    """The account's plan includes webhooks (Max, Redistribution)."""
    return plan(subscriber.plan).allows("webhooks")


def receives_webhooks(subscriber: Subscriber) -> bool:
    """Deliveries go out to this account's endpoints (its plan has webhooks and it is enabled)."""
    return subscriber.state == "enabled" and plan_has_webhooks(subscriber)


def endpoint_allowance(subscriber: Subscriber) -> int:
    """How many endpoints the account's plan allows."""
    return plan(subscriber.plan).webhook_endpoints
