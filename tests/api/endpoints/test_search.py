"""``/v1/search`` over real HTTP on the published small demo: the envelope and offset meta, the
ranking (walked page by page), the list without ``q``, the 400 texts, keyless == keyed, and
unknown-parameter warnings."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.api.endpoints.api_calls import assert_bad_request, get, ok_body, walk_offset_pages
from tests.api.server import RunningApi

ROW_FIELDS = [
    "entity_id", "ticker", "name", "entity_grain", "issuer_entity_id", "entity_type",
    "share_class", "instrument_type", "exchange", "country", "cik", "figi", "gics_sector",
    "listed_from", "listed_to",
]  # fmt: skip


@pytest.fixture(scope="module")
def listing(api: RunningApi, pro_key: str) -> list[dict[str, Any]]:
    """Every entity, as search lists them without ``q`` (one page)."""
    body = ok_body(_search(api, pro_key, limit=500))
    assert body["meta"]["has_more"] is False
    return body["data"]


def _search(api: RunningApi, key: str | None, **params: Any) -> httpx.Response:
    """GET /v1/search (keyless for ``key=None``)."""
    return get(api, key, "/v1/search", **params)


def _walk(api: RunningApi, key: str | None, limit: int, **params: Any) -> list[dict[str, Any]]:
    """Every row, stepping ``offset`` by ``limit`` up to offset 100,000, checking each page."""
    return walk_offset_pages(
        api, key, "/v1/search", limit, max_pages=-(-100_000 // limit), **params
    )


def _rank(row: dict[str, Any], q: str) -> int:
    """The spec's match order: exact ticker, ticker prefix, name prefix, other."""
    ticker, name = (row["ticker"] or "").upper(), row["name"].lower()
    if ticker == q.upper():
        return 0
    if ticker.startswith(q.upper()):
        return 1
    if name.startswith(q.lower()):
        return 2
    return 3


def _real_queries(listing: list[dict[str, Any]]) -> list[str]:
    """Real queries of the demo whose matches together span every kind of match: the one with
    the most kinds that includes an exact ticker, and the one with the most kinds that includes
    a ticker prefix and a name prefix (so each adjacent pair of ranks is ordered somewhere)."""
    words = {row["ticker"][:n] for row in listing if row["ticker"] for n in (1, 2, 3)}
    words |= {row["ticker"] for row in listing if row["ticker"]}
    kinds_of: dict[str, set[int]] = {}
    found: dict[str, int] = {}
    for q in sorted(words):
        kinds_of[q] = {_rank(row, q) for row in listing if _matches(row, q)}
        found[q] = sum(1 for row in listing if _matches(row, q))
    chosen = []
    for needed in ({0}, {1, 2}):
        fitting = [q for q in sorted(words) if needed <= kinds_of[q]]
        chosen.append(max(fitting, key=lambda q: (len(kinds_of[q]), -found[q])))
    assert set().union(*(kinds_of[q] for q in chosen)) == {0, 1, 2, 3}, chosen
    return chosen


def _matches(row: dict[str, Any], q: str) -> bool:
    """A name or ticker match (the demo's queries find nothing by former ticker, FIGI or CIK)."""
    return q.upper() in (row["ticker"] or "").upper() or q.lower() in row["name"].lower()


def test_envelope_meta_and_rows(api: RunningApi, pro_key: str, listing: list) -> None:
    response = _search(api, pro_key)
    body = ok_body(response)
    assert response.headers["Cache-Control"] == "public, max-age=86400"
    assert list(body) == ["data", "meta"]
    assert body["meta"] == {
        "count": 50,
        "limit": 50,
        "offset": 0,
        "total": len(listing),
        "has_more": True,
    }
    assert all(list(row) == ROW_FIELDS for row in body["data"])
    grains = {row["entity_grain"] for row in listing}
    assert grains == {"security", "issuer"}
    securities = {row["entity_id"]: row for row in listing if row["entity_grain"] == "security"}
    issuers = {row["entity_id"] for row in listing if row["entity_grain"] == "issuer"}
    assert {row["issuer_entity_id"] for row in securities.values()} <= issuers
    assert all(len(row["cik"]) == 10 and row["cik"].isdigit() for row in listing)


def test_without_q_every_entity_by_name_then_entity_id(
    api: RunningApi, pro_key: str, listing: list
) -> None:
    walked = _walk(api, pro_key, 37)
    assert walked == listing
    keys = [(row["name"].lower(), row["entity_id"]) for row in walked]
    assert keys == sorted(keys)
    assert len({row["entity_id"] for row in walked}) == len(walked)
    assert ok_body(_search(api, pro_key, q="", limit=500))["data"] == listing
    assert ok_body(_search(api, pro_key, q="   ", limit=500))["data"] == listing


def test_ranking_on_real_queries(api: RunningApi, pro_key: str, listing: list) -> None:
    for q in _real_queries(listing):
        walked = _walk(api, pro_key, 3, q=q.lower())
        assert walked == ok_body(_search(api, pro_key, q=q, limit=500))["data"]  # case insensitive
        expected_ids = {row["entity_id"] for row in listing if _matches(row, q)}
        assert {row["entity_id"] for row in walked} == expected_ids
        assert len(walked) == len(expected_ids)  # no repeats
        keys = [(_rank(row, q), row["name"].lower(), row["entity_id"]) for row in walked]
        assert keys == sorted(keys)
        assert len({key[0] for key in keys}) >= 3


def test_exact_ticker_comes_first(api: RunningApi, pro_key: str, scenarios: dict) -> None:
    plain = scenarios["plain"]
    body = ok_body(_search(api, pro_key, q=plain["ticker"].lower()))
    assert body["data"][0]["entity_id"] == plain["entity_id"]
    assert body["data"][0]["ticker"] == plain["ticker"]


def test_former_ticker_and_cik_find_the_entity(
    api: RunningApi, pro_key: str, scenarios: dict
) -> None:
    renamed = scenarios["renamed"]
    found = ok_body(_search(api, pro_key, q=renamed["old_ticker"]))["data"]
    assert renamed["entity_id"] in {row["entity_id"] for row in found}
    row = next(r for r in found if r["entity_id"] == renamed["entity_id"])
    assert row["ticker"] == renamed["new_ticker"]

    plain = ok_body(_search(api, pro_key, q=scenarios["plain"]["ticker"]))["data"][0]
    by_cik = ok_body(_search(api, pro_key, q=plain["cik"].lstrip("0")))["data"]
    assert {row["entity_id"] for row in by_cik} >= {plain["entity_id"], plain["issuer_entity_id"]}
    assert all(row["cik"] == plain["cik"] for row in by_cik)


def test_no_match_and_offset_past_the_end(api: RunningApi, pro_key: str, listing: list) -> None:
    assert ok_body(_search(api, pro_key, q="zzzq-nothing"))["meta"] == {
        "count": 0,
        "limit": 50,
        "offset": 0,
        "total": 0,
        "has_more": False,
    }
    past = ok_body(_search(api, pro_key, offset=len(listing) + 5))
    assert past["data"] == [] and past["meta"]["has_more"] is False
    assert past["meta"]["total"] == len(listing)


def test_limit_and_offset_texts(api: RunningApi, pro_key: str) -> None:
    assert_bad_request(_search(api, pro_key, limit=501), "limit max is 500")
    assert_bad_request(_search(api, pro_key, limit=999_999_999), "limit max is 500")
    for bad in ("0", "-1", "abc", "5e1", "50.5"):
        assert_bad_request(_search(api, pro_key, limit=bad), "limit must be a positive integer")
    for bad in ("-1", "abc", "1.5"):
        assert_bad_request(_search(api, None, offset=bad), "offset must be a non-negative integer")
    assert ok_body(_search(api, pro_key, limit=500))["meta"]["limit"] == 500
    assert ok_body(_search(api, pro_key, limit="20.0"))["meta"]["limit"] == 20
    assert ok_body(_search(api, pro_key, limit=""))["meta"]["limit"] == 50


def test_same_answer_with_or_without_a_key(api: RunningApi, pro_key: str, scenarios: dict) -> None:
    free = api.new_key("free").key
    params = {"q": scenarios["plain"]["ticker"][:1], "limit": 7, "offset": 3}
    answers = [_search(api, key, **params) for key in (None, pro_key, free)]
    assert {response.status_code for response in answers} == {200}
    assert len({response.text for response in answers}) == 1
    assert len({response.headers["Cache-Control"] for response in answers}) == 1
    refused = _search(api, "fdk_" + "7" * 32)
    assert refused.status_code == 401 and refused.json()["code"] == "unauthorized"


def test_unknown_parameters_are_named(api: RunningApi) -> None:
    body = ok_body(_search(api, None, query="x", page_size=5, foo="1"))
    assert body["warnings"] == [
        "Unknown parameter ignored: 'query'. Did you mean 'q'?",
        "Unknown parameter ignored: 'page_size'. Did you mean 'limit'?",
        "Unknown parameter ignored: 'foo'",
    ]
    assert body["meta"]["limit"] == 50  # the variants are not read
