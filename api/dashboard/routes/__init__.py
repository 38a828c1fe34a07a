"""The dashboard's pages, one module per concern."""

from findata.api.dashboard.routes import billing, keys, people, usage, webhooks

#: the dashboard's pages, one router per concern
PAGES = (people.router, keys.router, usage.router, billing.router, webhooks.router)
