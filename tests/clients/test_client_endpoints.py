"""Every endpoint method of the client against a real server on the demo, with real arguments
from the demo's scenarios: each answers what the API answers to the same request over plain
HTTP; typed arguments (dates, sequences, flags) are written as the API reads them; the key and
the base URL come from the arguments or the environment."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from findata_client import Client, Rows
from findata_client.spec import ENDPOINTS
from tests.api.endpoints.api_calls import get, ok_body
from tests.api.server import RunningApi


@dataclass(frozen=True)
class Case:
    """One endpoint method called with real arguments, and the same request over HTTP."""

    call: Callable[[Client], Any]
    path: str
    params: dict[str, Any]
    plan: str = "pro"


def _cases(scenarios: dict[str, Any]) -> dict[str, Case]:
    as_of = dt.date.fromisoformat(scenarios["as_of"])
    plain = scenarios["plain"]["ticker"]
    month_ago = as_of - dt.timedelta(days=30)
    index = scenarios["index_events"]["index"]
    added = scenarios["index_events"]["added"]["date"]
    quarter = scenarios["holdings"]["quarters"][-1]
    manager = scenarios["managers"]["manager_id"]
    manager_quarter = scenarios["holdings_amendments"]["restatement"]["report_date"]
    classes = scenarios["share_classes"]["class_tickers"]
    return {
        "prices": Case(
            lambda c: c.prices(plain, start=month_ago, end=scenarios["as_of"]),
            f"/v1/prices/{plain}",
            {"start": month_ago.isoformat(), "end": scenarios["as_of"]},
        ),
        "fundamentals": Case(
            lambda c: c.fundamentals(scenarios["restatement"]["ticker"], view="as_reported"),
            f"/v1/fundamentals/{scenarios['restatement']['ticker']}",
            {"view": "as_reported"},
        ),
        "metrics": Case(
            lambda c: c.metrics(plain, limit=100),
            f"/v1/metrics/{plain}",
            {"limit": 100},
        ),
        "insiders": Case(
            lambda c: c.insiders(scenarios["insiders"]["ticker"], include_uncoded=True),
            f"/v1/insiders/{scenarios['insiders']['ticker']}",
            {"include_uncoded": "true"},
        ),
        "holdings": Case(
            lambda c: c.holdings(
                scenarios["holdings"]["ticker"], quarter=dt.date.fromisoformat(quarter)
            ),
            f"/v1/holdings/{scenarios['holdings']['ticker']}",
            {"quarter": quarter},
        ),
        "managers": Case(
            lambda c: c.managers(search=scenarios["managers"]["search"]),
            "/v1/managers",
            {"search": scenarios["managers"]["search"]},
        ),
        "manager_holdings": Case(
            lambda c: c.manager_holdings(manager, quarter=manager_quarter),
            f"/v1/managers/{manager}/holdings",
            {"quarter": manager_quarter},
        ),
        "index": Case(
            lambda c: c.index(index, as_of=dt.date.fromisoformat(added)),
            f"/v1/index/{index}",
            {"as_of": added},
        ),
        "index_events": Case(
            lambda c: c.index_events(index, start=added, end=added),
            f"/v1/index/{index}/events",
            {"start": added, "end": added},
        ),
        "search": Case(lambda c: c.search(q=plain), "/v1/search", {"q": plain}),
        "resolve": Case(
            lambda c: c.resolve([plain, *classes], date=as_of),
            f"/v1/resolve/{plain},{','.join(classes)}",
            {"date": as_of.isoformat()},
        ),
        "changes": Case(lambda c: c.changes(limit=5000), "/v1/changes", {"limit": 5000}, "max"),
        "status": Case(lambda c: c.status(), "/v1/status", {}),
        "usage": Case(lambda c: c.usage(), "/v1/auth/usage", {}),
    }


@pytest.fixture(scope="module")
def keys(api: RunningApi) -> dict[str, str]:
    """A Pro and a Max key of this module's own accounts."""
    return {"pro": api.new_key("pro").key, "max": api.new_key("max").key}


@pytest.fixture(scope="module")
def clients(api: RunningApi, keys: dict[str, str]) -> Iterator[dict[str, Client]]:
    made = {plan: Client(key, api.url) for plan, key in keys.items()}
    yield made
    for client in made.values():
        client.close()


def test_every_endpoint_has_a_case(scenarios: dict[str, Any]) -> None:
    assert set(_cases(scenarios)) == set(ENDPOINTS)


@pytest.mark.parametrize("endpoint", sorted(ENDPOINTS))
def test_each_method_answers_what_the_api_answers(
    endpoint: str,
    api: RunningApi,
    scenarios: dict[str, Any],
    keys: dict[str, str],
    clients: dict[str, Client],
) -> None:
    case = _cases(scenarios)[endpoint]
    answer = case.call(clients[case.plan])
    raw = ok_body(get(api, keys[case.plan], case.path, **case.params))
    if isinstance(answer, Rows):
        rows = answer.to_list()
        assert rows, endpoint  # real arguments: something to compare
        assert rows == raw["data"]
        assert answer.meta == raw["meta"]
    else:
        assert answer == raw


def test_typed_arguments_are_written_as_the_api_reads_them(
    clients: dict[str, Client], scenarios: dict[str, Any]
) -> None:
    client = clients["pro"]
    plain = scenarios["plain"]
    as_of = dt.date.fromisoformat(scenarios["as_of"])
    week = {"start": as_of - dt.timedelta(days=7), "end": as_of}
    by_ticker = client.prices(plain["ticker"], **week).to_list()
    assert by_ticker and {row["ticker"] for row in by_ticker} == {plain["ticker"]}
    assert client.prices([plain["ticker"]], **week).to_list() == by_ticker
    assert client.prices(entity_id=plain["entity_id"], **week).to_list() == by_ticker
    assert client.prices(entity_id=[plain["entity_id"]], **week).to_list() == by_ticker
    two = scenarios["share_classes"]["security_entity_ids"]
    both = client.prices(entity_id=two, **week).to_list()
    assert {row["entity_id"] for row in both} == set(two)
    closes = client.prices(plain["ticker"], fields=["close", "volume"], **week).to_list()
    assert set(closes[0]) == {
        "entity_id", "ticker", "entity_name", "gics_sector", "date", "price_basis", "close",
        "volume",
    }  # fmt: skip
    derivatives = client.insiders(scenarios["insiders"]["ticker"], include_derivatives=False)
    assert not any(row["is_derivative"] for row in derivatives)
    with pytest.raises(TypeError):
        client.index(None)  # type: ignore[arg-type]  # the index name is in every path


def test_keyless_and_the_environment(
    api: RunningApi,
    scenarios: dict[str, Any],
    keys: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("FINDATA_API_KEY", raising=False)
    with Client(base_url=api.url) as keyless:
        resolved = keyless.resolve(scenarios["plain"]["ticker"])
        assert resolved["restricted"] is True
        assert keyless.search(q=scenarios["plain"]["ticker"]).first_page.data
    monkeypatch.setenv("FINDATA_API_KEY", keys["max"])
    monkeypatch.setenv("FINDATA_BASE_URL", api.url + "/")
    with Client() as from_environment:
        assert from_environment.base_url == api.url
        assert from_environment.usage()["plan"] == "max"
    with Client(keys["pro"]) as argument_first:
        assert argument_first.usage()["plan"] == "pro"


def test_get_and_paginate_take_paths_queries_and_urls(
    clients: dict[str, Client], scenarios: dict[str, Any], api: RunningApi
) -> None:
    client = clients["pro"]
    plain = scenarios["plain"]
    start = (dt.date.fromisoformat(scenarios["as_of"]) - dt.timedelta(days=20)).isoformat()
    expected = client.prices(entity_id=plain["entity_id"], start=start).to_list()
    # empty values in the query string are dropped (an open end)
    query = f"/v1/prices?entity_id={plain['entity_id']}&start={start}&end="
    assert client.paginate(query, {"limit": 3}).to_list() == expected
    assert client.paginate(api.url + query).to_list() == expected
    body = client.get(query, {"limit": 2})
    assert body["data"] == expected[:2] and body["meta"]["has_more"] is True
