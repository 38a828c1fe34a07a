"""Every endpoint answers byte for byte the same from the served copy (the session's server:
datasets as native in-memory tables, ``findata/published/served_copy.py``) as from the version
file's views (a server with ``served_tables_mb=0`` and the row store off), over real HTTP, every
page of each request, status, headers and body."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from findata.api.app import create_app
from findata.settings import Settings
from tests.api.endpoints.api_calls import before_as_of, every_page_as_sent
from tests.api.server import RunningApi, serve, start_clock


@pytest.fixture(scope="module")
def api_on_views(published_home: Path) -> Iterator[RunningApi]:
    """The API on the same published home reading every dataset through the version file's
    views (no copy, no row store)."""
    clock = start_clock()
    settings = Settings(home=published_home, served_tables_mb=0, row_store_mb=0)
    with serve(create_app(settings, clock), clock) as running:
        yield running


def _requests(scenarios: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """A request of each endpoint and of its main parameters, over the demo's cases."""
    plain, split, restated = scenarios["plain"], scenarios["split"], scenarios["restatement"]
    holdings, events = scenarios["holdings"], scenarios["index_events"]
    window = {"start": before_as_of(scenarios, 400), "end": before_as_of(scenarios, 20)}
    return [
        (f"/v1/prices/{plain['ticker']}", {"interval": "1w", **window}),
        (f"/v1/prices/{split['ticker']}", {"interval": "1mo", "adjust": "split"}),
        (f"/v1/prices/{plain['ticker']}", {"limit": 30}),
        (f"/v1/fundamentals/{restated['ticker']}", {"period": "quarterly", "limit": 7}),
        (f"/v1/fundamentals/{restated['ticker']}", {"as_of": restated["first_known"]}),
        (f"/v1/fundamentals/{restated['ticker']}", {"view": "as_reported", "limit": 5}),
        (f"/v1/metrics/{restated['ticker']}", {"as_of": restated["restated_known"], "limit": 9}),
        (f"/v1/insiders/{scenarios['insiders']['ticker']}", {"limit": 25}),
        (f"/v1/holdings/{holdings['ticker']}", {"limit": 40}),
        (f"/v1/holdings/{holdings['ticker']}", {"quarter": holdings["quarters"][2]}),
        (f"/v1/managers/{holdings['manager_id']}/holdings", {"limit": 50}),
        ("/v1/managers", {"q": scenarios["managers"]["search"]}),
        (f"/v1/index/{events['index']}", {"as_of": events["added"]["date"], "limit": 60}),
        (f"/v1/index/{events['index']}/events", {"limit": 50}),
        (f"/v1/resolve/{scenarios['renamed']['old_ticker']}", {}),
        (f"/v1/resolve/{scenarios['ambiguous']['ticker']}", {"date": "2024-01-02"}),
        ("/v1/search", {"q": plain["ticker"][:2]}),
        ("/v1/status", {}),
    ]


def test_every_endpoint_answers_the_same_from_the_copy_as_from_the_views(
    api: RunningApi, api_on_views: RunningApi, scenarios: dict[str, Any]
) -> None:
    servers = [api, api_on_views]
    # an account of its own on each server: the usage headers count the same requests
    keys = [server.new_key("redistribution").key for server in servers]
    statuses = []
    for path, params in _requests(scenarios):
        copied, viewed = (
            every_page_as_sent(server, key, path, params)
            for server, key in zip(servers, keys, strict=True)
        )
        assert copied == viewed, (path, params)
        statuses.append(copied[0][0])
    assert statuses.count(200) >= len(statuses) - 2, statuses  # the requests are answerable
    label = api.app.state.published.current().label
    copy = api.app.state.published.served_copy(label)
    assert copy is not None and "fundamentals" in copy.copied
    views = api_on_views.app.state.published.served_copy(label)
    assert views is not None and views.copied == ()
