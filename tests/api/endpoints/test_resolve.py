"""``/v1/resolve/{ticker}`` over real HTTP on the published small demo: the full and the keyless
(restricted) body, meta, the 400/404/409 texts, partial answers on paid plans, and every ticker
scenario of the demo (share classes, ambiguous, reused, renamed, delisted, issuer without a
listing, index membership as of the date)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import httpx

from tests.api.endpoints.api_calls import get, ok_body, query_published
from tests.api.server import RunningApi

ENTITY_FIELDS = [
    "entity_id", "name", "entity_type", "country", "figi", "cik", "entity_grain",
    "issuer_entity_id", "share_class", "instrument_type", "exchange",
]  # fmt: skip
FULL_ONLY = ["ticker_valid_from", "ticker_valid_to", "classifications", "index_membership"]
CANDIDATE_FIELDS = {
    "entity_id", "name", "exchange", "share_class", "last_bar_date", "valid_from", "valid_to",
}  # fmt: skip
LINK_FIELDS = [
    "link_type", "from_ticker", "from_entity_id", "from_valid_from", "from_valid_to",
    "to_ticker", "to_entity_id", "change_date", "to_valid_to",
]  # fmt: skip
FULL_DATASETS = ["entities", "index_membership", "succession_links", "ticker_history"]
KEYLESS_DATASETS = ["entities", "succession_links", "ticker_history"]


def _resolve(api: RunningApi, key: str | None, tickers: str, **params: Any) -> httpx.Response:
    """GET /v1/resolve/{tickers} (keyless for ``key=None``)."""
    return get(api, key, f"/v1/resolve/{tickers}", **params)


def _only(body: dict[str, Any], ticker: str) -> dict[str, Any]:
    """The one entity a ticker resolved to."""
    entities = body["data"][ticker]["entities"]
    assert len(entities) == 1
    return entities[0]


def _error(response: httpx.Response, status: int, code: str, detail: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert (body["error"], body["code"], body["status"], body["detail"]) == (
        code,
        code,
        status,
        detail,
    )
    return body


def _today(api: RunningApi) -> dt.date:
    return api.clock.now().date()


def _day(text: str, days: int) -> str:
    return (dt.date.fromisoformat(text) + dt.timedelta(days=days)).isoformat()


def _entity_name(api: RunningApi, entity_id: int) -> str:
    rows = query_published(api, "SELECT name FROM entities WHERE entity_id = $e", e=entity_id)
    assert rows
    return rows[0]["name"]


def test_full_body_of_a_plain_ticker(api: RunningApi, pro_key: str, scenarios: dict) -> None:
    plain = scenarios["plain"]
    response = _resolve(api, pro_key, plain["ticker"].lower())
    body = ok_body(response)
    assert response.headers["Cache-Control"] == "public, max-age=86400"
    assert list(body) == ["data", "meta"]  # no `restricted`, no warnings
    assert list(body["data"]) == [plain["ticker"]]
    assert list(body["data"][plain["ticker"]]) == ["entities", "succession"]
    entity = _only(body, plain["ticker"])
    assert list(entity) == ENTITY_FIELDS + FULL_ONLY
    assert entity["entity_id"] == plain["entity_id"]
    assert entity["entity_grain"] == "security" and entity["entity_type"] == "corporation"
    assert entity["instrument_type"] == "common"
    assert isinstance(entity["issuer_entity_id"], int)
    assert entity["issuer_entity_id"] != entity["entity_id"]
    assert len(entity["cik"]) == 10 and entity["cik"].isdigit()
    assert entity["ticker_valid_to"] is None
    assert entity["ticker_valid_from"] <= scenarios["as_of"]
    classifications = entity["classifications"]
    assert {"sic_code", "naics_code", "gics_sector", "gics_group", "classification_as_of"} <= set(
        classifications
    )
    for item in entity["index_membership"]:
        assert list(item) == ["index", "index_name", "added", "removed"]
        assert item["index"] == item["index"].upper()
        # added by today; a removal is listed once it has happened
        assert item["added"] <= scenarios["as_of"]
        assert item["removed"] is None or item["removed"] <= scenarios["as_of"]
    assert body["data"][plain["ticker"]]["succession"] == []

    meta = body["meta"]
    today = _today(api).isoformat()
    assert list(meta) == [
        "tickers_requested",
        "tickers_resolved",
        "tickers_unresolved",
        "resolved_as_of",
        "freshness",
    ]
    assert meta["tickers_requested"] == meta["tickers_resolved"] == [plain["ticker"]]
    assert meta["tickers_unresolved"] == []
    assert meta["resolved_as_of"] == today
    version = api.app.state.published.current()
    assert list(meta["freshness"]) == FULL_DATASETS
    for name, freshness in meta["freshness"].items():
        assert freshness["data_through"] is not None, name
        assert freshness["data_through"] == version.data_through.get(name)
    # ticker history is read from the security master snapshot entities cover
    assert meta["freshness"]["ticker_history"]["data_through"] == scenarios["as_of"]


def test_keyless_body_is_restricted(api: RunningApi, pro_key: str, scenarios: dict) -> None:
    renamed = scenarios["renamed"]
    full = ok_body(_resolve(api, pro_key, renamed["new_ticker"]))
    response = _resolve(api, None, renamed["new_ticker"])
    keyless = ok_body(response)
    assert response.headers["Cache-Control"] == "no-store"
    assert list(keyless) == ["restricted", "data", "meta"]
    assert keyless["restricted"] is True
    entity = _only(keyless, renamed["new_ticker"])
    assert list(entity) == ENTITY_FIELDS
    assert entity == {name: _only(full, renamed["new_ticker"])[name] for name in ENTITY_FIELDS}
    # succession links come with or without a key
    links = keyless["data"][renamed["new_ticker"]]["succession"]
    assert links and links == full["data"][renamed["new_ticker"]]["succession"]
    assert list(keyless["meta"]["freshness"]) == KEYLESS_DATASETS
    assert {k: v for k, v in keyless["meta"].items() if k != "freshness"} == {
        k: v for k, v in full["meta"].items() if k != "freshness"
    }


def test_a_wrong_key_is_refused_even_though_none_is_needed(
    api: RunningApi, scenarios: dict
) -> None:
    response = _resolve(api, "fdk_" + "7" * 32, scenarios["plain"]["ticker"])
    assert response.status_code == 401
    assert response.json()["code"] == "unauthorized"


def test_share_classes(api: RunningApi, pro_key: str, scenarios: dict) -> None:
    classes = scenarios["share_classes"]
    # a ticker naming both classes names more than one security: ambiguous on resolve
    today = _today(api).isoformat()
    body = _error(
        _resolve(api, pro_key, classes["shared_ticker"]),
        409,
        "ambiguous_ticker",
        f"Ambiguous ticker on {today}: {classes['shared_ticker']} names more than one entity. "
        "Choose one of the candidates and pass entity_id=<id>.",
    )
    assert body["hint"] == "pass entity_id="
    candidates = body["candidates"][classes["shared_ticker"]]
    assert sorted(c["entity_id"] for c in candidates) == sorted(classes["security_entity_ids"])
    assert all(set(c) == CANDIDATE_FIELDS for c in candidates)
    assert {c["share_class"] for c in candidates} == {"A", "B"}
    # each class ticker names one security of the same issuer
    both = ok_body(_resolve(api, pro_key, ",".join(classes["class_tickers"])))
    resolved = [_only(both, ticker) for ticker in classes["class_tickers"]]
    assert sorted(e["entity_id"] for e in resolved) == sorted(classes["security_entity_ids"])
    assert {e["issuer_entity_id"] for e in resolved} == {classes["issuer_entity_id"]}
    assert sorted(e["share_class"] for e in resolved) == ["A", "B"]
    assert both["meta"]["tickers_resolved"] == classes["class_tickers"]


def test_ambiguous_ticker_on_its_date(api: RunningApi, pro_key: str, scenarios: dict) -> None:
    ambiguous = scenarios["ambiguous"]
    for key in (pro_key, None):
        body = _error(
            _resolve(api, key, ambiguous["ticker"], date=ambiguous["date"]),
            409,
            "ambiguous_ticker",
            f"Ambiguous ticker on {ambiguous['date']}: {ambiguous['ticker']} names more than "
            "one entity. Choose one of the candidates and pass entity_id=<id>.",
        )
        candidates = body["candidates"][ambiguous["ticker"]]
        assert sorted(c["entity_id"] for c in candidates) == sorted(ambiguous["entity_ids"])
        assert len({c["name"] for c in candidates}) == 2  # two different companies
        assert all(c["valid_from"] <= ambiguous["date"] for c in candidates)


def test_paid_plans_get_the_others_when_some_fail(
    api: RunningApi, pro_key: str, scenarios: dict
) -> None:
    plain, ambiguous = scenarios["plain"], scenarios["ambiguous"]
    tickers = f"{ambiguous['ticker']},{plain['ticker']},ZZZZQ"
    body = ok_body(_resolve(api, pro_key, tickers, date=ambiguous["date"]))
    assert list(body["data"]) == [plain["ticker"]]
    meta = body["meta"]
    assert meta["tickers_requested"] == [ambiguous["ticker"], plain["ticker"], "ZZZZQ"]
    assert meta["tickers_resolved"] == [plain["ticker"]]
    assert meta["tickers_unresolved"] == ["ZZZZQ"]
    assert list(meta["tickers_ambiguous"]) == [ambiguous["ticker"]]
    assert sorted(c["entity_id"] for c in meta["tickers_ambiguous"][ambiguous["ticker"]]) == (
        sorted(ambiguous["entity_ids"])
    )
    assert body["warnings"] == [
        f"Ticker {ambiguous['ticker']} is ambiguous on {ambiguous['date']} and was not "
        "resolved; see meta.tickers_ambiguous and pass entity_id=<id>.",
        "No matching entities for: ZZZZQ",
    ]

    unlisted = scenarios["issuer_without_listing"]
    body = ok_body(
        _resolve(api, pro_key, f"{plain['ticker']},{unlisted['ticker']}", date=unlisted["date"])
    )
    assert list(body["data"]) == [plain["ticker"]]
    assert body["meta"]["tickers_unresolved"] == [unlisted["ticker"]]
    assert "tickers_ambiguous" not in body["meta"]
    name = _entity_name(api, unlisted["issuer_entity_id"])
    assert body["warnings"] == [
        f"No listed security on {unlisted['date']} for {unlisted['ticker']}: it names {name} "
        f"(entity_id {unlisted['issuer_entity_id']}); pass "
        f"entity_id={unlisted['issuer_entity_id']} for issuer-level data."
    ]


def test_issuer_without_listing(api: RunningApi, pro_key: str, scenarios: dict) -> None:
    unlisted = scenarios["issuer_without_listing"]
    name = _entity_name(api, unlisted["issuer_entity_id"])
    issuer = unlisted["issuer_entity_id"]
    for key in (pro_key, None):
        _error(
            _resolve(api, key, unlisted["ticker"], date=unlisted["date"]),
            404,
            "not_found",
            f"No listed security on {unlisted['date']} for {unlisted['ticker']}: it names "
            f"{name} (entity_id {issuer}); pass entity_id={issuer} for issuer-level data.",
        )


def test_unknown_ticker(api: RunningApi, pro_key: str) -> None:
    _error(
        _resolve(api, pro_key, "ZZZZQ,ZZZZR"),
        404,
        "not_found",
        "No matching entities for: ZZZZQ, ZZZZR",
    )
    _error(_resolve(api, None, "zzzzq"), 404, "not_found", "No matching entities for: ZZZZQ")


def test_reused_ticker_names_each_company_in_its_period(
    api: RunningApi, pro_key: str, scenarios: dict
) -> None:
    reused = scenarios["reused"]
    first, second = reused["periods"]
    for period in (first, second):
        for day in filter(None, (period["valid_from"], period["valid_to"])):
            body = ok_body(_resolve(api, pro_key, reused["ticker"], date=day))
            entity = _only(body, reused["ticker"])
            assert entity["entity_id"] == period["entity_id"]
            assert entity["ticker_valid_from"] == period["valid_from"]
            assert entity["ticker_valid_to"] == period["valid_to"]
            assert "warnings" not in body
            links = body["data"][reused["ticker"]]["succession"]
            assert {
                "link_type": "reused",
                "from_ticker": reused["ticker"],
                "from_entity_id": first["entity_id"],
                "from_valid_from": first["valid_from"],
                "from_valid_to": first["valid_to"],
                "to_ticker": reused["ticker"],
                "to_entity_id": second["entity_id"],
                "change_date": second["valid_from"],
                "to_valid_to": second["valid_to"],
            } in links
            assert all(list(link) == LINK_FIELDS for link in links)
    first_company = _only(
        ok_body(_resolve(api, pro_key, reused["ticker"], date=first["valid_from"])),
        reused["ticker"],
    )
    second_company = _only(ok_body(_resolve(api, pro_key, reused["ticker"])), reused["ticker"])
    assert first_company["issuer_entity_id"] != second_company["issuer_entity_id"]


def test_renamed_ticker(api: RunningApi, pro_key: str, scenarios: dict) -> None:
    renamed = scenarios["renamed"]
    old, new, change = renamed["old_ticker"], renamed["new_ticker"], renamed["change_date"]
    before = ok_body(_resolve(api, pro_key, old, date=_day(change, -1)))
    assert _only(before, old)["entity_id"] == renamed["entity_id"]
    assert _only(before, old)["ticker_valid_to"] == _day(change, -1)
    assert "warnings" not in before
    after = ok_body(_resolve(api, pro_key, new, date=change))
    assert _only(after, new)["entity_id"] == renamed["entity_id"]
    assert _only(after, new)["ticker_valid_from"] == change
    link = {
        "link_type": "renamed",
        "from_ticker": old,
        "from_entity_id": renamed["entity_id"],
        "to_ticker": new,
        "to_entity_id": renamed["entity_id"],
        "change_date": change,
    }
    for body, ticker in ((before, old), (after, new)):
        links = [
            {k: v for k, v in item.items() if k in link}
            for item in body["data"][ticker]["succession"]
        ]
        assert link in links
    # the new ticker named nothing before the change
    _error(
        _resolve(api, pro_key, new, date=_day(change, -1)),
        404,
        "not_found",
        f"No matching entities for: {new}",
    )


def test_delisted_ticker_names_what_it_named_last(
    api: RunningApi, pro_key: str, scenarios: dict
) -> None:
    delisted = scenarios["delisted"]
    last = ok_body(_resolve(api, pro_key, delisted["ticker"], date=delisted["last_date"]))
    entity = _only(last, delisted["ticker"])
    assert entity["entity_id"] == delisted["entity_id"]
    assert entity["ticker_valid_to"] == delisted["last_date"]
    assert "warnings" not in last
    for day in (_day(delisted["last_date"], 1), None):
        params = {"date": day} if day else {}
        body = ok_body(_resolve(api, pro_key, delisted["ticker"], **params))
        on = day or _today(api).isoformat()
        assert _only(body, delisted["ticker"])["entity_id"] == delisted["entity_id"]
        assert body["warnings"] == [
            f"Ticker {delisted['ticker']} names no listed security on {on}: it last named "
            f"{entity['name']} (entity_id {delisted['entity_id']}) until "
            f"{delisted['last_date']}."
        ]


def test_index_membership_is_what_was_known_on_the_date(
    api: RunningApi, pro_key: str, scenarios: dict
) -> None:
    """As of D: every membership added by D, its removal shown once it has happened (on or
    before D) and never before: no later knowledge, and a past removal stays listed."""
    events = scenarios["index_events"]
    code = events["index"].upper()
    added, removed = events["added"], events["removed"]

    def memberships(ticker: str, day: str) -> list[dict[str, Any]]:
        body = ok_body(_resolve(api, pro_key, ticker, date=day))
        items = [m for m in _only(body, ticker)["index_membership"] if m["index"] == code]
        for item in items:
            assert list(item) == ["index", "index_name", "added", "removed"]
            assert item["added"] <= day and (item["removed"] is None or item["removed"] <= day)
        return items

    # the removal: unknown on the last day as a member, shown on its date and after it
    last_day = memberships(removed["ticker"], _day(removed["date"], -1))
    leaving = [m for m in last_day if m["removed"] is None]
    assert len(leaving) == 1 and leaving[0]["index_name"]
    known = [{**m, "removed": removed["date"]} if m is leaving[0] else m for m in last_day]
    assert memberships(removed["ticker"], removed["date"]) == known
    assert memberships(removed["ticker"], _day(removed["date"], 1)) == known

    # the addition: not listed the day before (not a member then), listed from its date
    before = memberships(added["ticker"], _day(added["date"], -1))
    assert all(m["removed"] is not None for m in before)
    on_the_day = memberships(added["ticker"], added["date"])
    assert on_the_day == [
        *before,
        {"index": code, "index_name": leaving[0]["index_name"], "added": added["date"],
         "removed": None},
    ]  # fmt: skip


def test_parameter_texts_and_ticker_counts(
    api: RunningApi, pro_key: str, free_key: str, scenarios: dict
) -> None:
    plain = scenarios["plain"]["ticker"]
    for bad in ("2026-02-30", "20260101", "2026-1-01", "today"):
        _error(
            _resolve(api, pro_key, plain, date=bad),
            400,
            "bad_request",
            f"Invalid date: '{bad}' (expected a real YYYY-MM-DD date)",
        )
    _error(_resolve(api, pro_key, ","), 400, "bad_request", "Provide a ticker in the path.")
    eleven = ",".join(f"T{n:02d}" for n in range(11))
    _error(_resolve(api, pro_key, eleven), 400, "bad_request", "Maximum 10 tickers per request")
    ten = ok_body(_resolve(api, pro_key, ",".join([plain] + [f"T{n:02d}" for n in range(9)])))
    assert ten["meta"]["tickers_resolved"] == [plain]
    assert len(ten["meta"]["tickers_unresolved"]) == 9
    two = f"{plain},{scenarios['delisted']['ticker']}"
    _error(
        _resolve(api, free_key, two),
        400,
        "bad_request",
        "Free tier allows 1 ticker per request. Upgrade to Pro for up to 10 tickers per request.",
    )
    _error(
        _resolve(api, None, two),
        400,
        "bad_request",
        "Requests without an API key allow 1 ticker. Send a key: the Pro plan allows up to 10 per "
        "request.",
    )
    # repeated tickers count once
    assert ok_body(_resolve(api, free_key, f"{plain},{plain.lower()}"))["meta"][
        "tickers_requested"
    ] == [plain]


def test_dates_default_and_future(api: RunningApi, pro_key: str, scenarios: dict) -> None:
    plain = scenarios["plain"]["ticker"]
    today = _today(api).isoformat()
    body = ok_body(_resolve(api, None, plain, date="9999-12-31"))
    assert body["meta"]["resolved_as_of"] == today
    assert body["warnings"] == [f"date 9999-12-31 is after today; resolved as of today ({today})."]
    assert ok_body(_resolve(api, pro_key, plain, date=""))["meta"]["resolved_as_of"] == today


def test_unknown_parameters_are_named(api: RunningApi, pro_key: str, scenarios: dict) -> None:
    body = ok_body(
        _resolve(api, pro_key, scenarios["plain"]["ticker"], as_of="2026-01-02", foo="1")
    )
    assert body["warnings"] == [
        "Unknown parameter ignored: 'as_of'. Did you mean 'date'?",
        "Unknown parameter ignored: 'foo'",
    ]
    assert body["meta"]["resolved_as_of"] == _today(api).isoformat()
