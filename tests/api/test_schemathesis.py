"""Schema-driven fuzzing with schemathesis: every route of the served OpenAPI document, asked with
generated paths and parameters by every plan and without a key, against the real server on the
demo, one request at a time and in stateful walks that follow the document's links (the next
page, the change feed). Every answer must be one the document allows (status, body, headers):
never a 500, never a body that breaks its schema. A short run here; ``benchmarks/fuzz_api.py``
runs it longer."""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import CHECKS

from findata.contracts.endpoints import endpoint_names, load_endpoint_contract
from tests.api.openapi_check import OpenApiDocument
from tests.api.server import RunningApi

PLANS = ["free", "pro", "max", "redistribution", None]
#: examples per route, each sent by 5 clients (12: about a thousand requests in all);
#: benchmarks/fuzz_api.py sets more
EXAMPLES = int(os.environ.get("FINDATA_FUZZ_EXAMPLES", "12"))
#: requests sent, by status (printed by the last test)
SENT: Counter[int] = Counter()


@pytest.fixture(scope="module")
def served_document(api: RunningApi) -> dict[str, Any]:
    with api.client() as client:
        return client.get("/openapi.json").json()


@pytest.fixture(scope="module")
def fuzz_schema(served_document: dict[str, Any]) -> Any:
    """The served document as schemathesis reads it (only the ``/v1/`` routes)."""
    return schemathesis.openapi.from_dict(served_document).include(path_regex="^/v1/")


@pytest.fixture(scope="module")
def fuzz_keys(api: RunningApi) -> list[str | None]:
    """A key of every plan, and none."""
    return [api.new_key(plan).key if plan else None for plan in PLANS]


#: every route of the contracts (each is one operation of the document)
ROUTES = [path for name in endpoint_names() for path in load_endpoint_contract(name).paths]


@pytest.mark.parametrize("route", ROUTES)
def test_generated_requests_get_documented_answers(
    route: str,
    api: RunningApi,
    fuzz_schema: Any,
    fuzz_keys: list[str | None],
    served_document: dict[str, Any],
) -> None:
    """Requests generated from the route's operation, each sent with the key of every plan
    and without one."""
    document = OpenApiDocument(served_document)
    # schemathesis's own checks of each answer against the document, but "positive data
    # acceptance" (it wants a 2xx for any text a parameter's schema allows: a string, which
    # the spec answers with its 400s) and the checks of security schemes the document does
    # not declare
    excluded = [check for check in CHECKS.get_all() if check.__name__ in EXCLUDED_CHECKS]

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
        database=None,
    )
    @given(case=fuzz_schema[route]["GET"].as_strategy())
    def answered_as_documented(case: schemathesis.Case) -> None:
        for key in fuzz_keys:
            response = case.call(base_url=api.url, headers={"X-API-Key": key} if key else {})
            SENT[response.status_code] += 1
            assert response.status_code < 500, (case.formatted_path, case.query, response.text)
            case.validate_response(response, excluded_checks=excluded)
            document.check(_as_httpx(response))

    answered_as_documented()


EXCLUDED_CHECKS = {"positive_data_acceptance", "missing_required_header", "ignored_auth"}
#: stateful walks per plan, and calls per walk at most (benchmarks/fuzz_api.py sets more)
WALKS = int(os.environ.get("FINDATA_FUZZ_WALKS", "8"))
#: cursors the server handed out, and the requests that sent one back (from a link)
HANDED_OUT: set[str] = set()
FOLLOWED: Counter[str] = Counter()
#: the walks' requests, by status
STATEFUL: Counter[int] = Counter()


@pytest.mark.parametrize("plan", PLANS)
def test_stateful_walks_follow_next_pages_and_the_change_feed(
    plan: str | None,
    api: RunningApi,
    fuzz_schema: Any,
    fuzz_keys: list[str | None],
    served_document: dict[str, Any],
) -> None:
    """Sequences of calls that follow the document's links (``nextPage`` with the answer's
    ``next_cursor`` and the request's own parameters, ``changesSince`` with its
    ``change_cursor``), each answer checked as the stateless ones are."""
    document = OpenApiDocument(served_document)
    excluded = [check for check in CHECKS.get_all() if check.__name__ in EXCLUDED_CHECKS]
    key = fuzz_keys[PLANS.index(plan)]

    class Walk(fuzz_schema.as_state_machine()):  # type: ignore[misc]
        def get_call_kwargs(self, case: schemathesis.Case) -> dict[str, Any]:
            return {"base_url": api.url, "headers": {"X-API-Key": key} if key else {}}

        def validate_response(self, response: Any, case: schemathesis.Case, **_kwargs: Any) -> None:
            SENT[response.status_code] += 1
            STATEFUL[response.status_code] += 1
            sent_back = {str((case.query or {}).get(name)) for name in ("cursor", "since")}
            if sent_back & HANDED_OUT:
                FOLLOWED[case.operation.path] += 1
            assert response.status_code < 500, (case.formatted_path, case.query, response.text)
            case.validate_response(response, excluded_checks=excluded)
            document.check(_as_httpx(response))
            if response.status_code == 200:
                meta = response.json().get("meta") or {}
                HANDED_OUT.update(
                    meta[name] for name in ("next_cursor", "change_cursor") if meta.get(name)
                )

    Walk.run(
        settings=settings(
            max_examples=WALKS,
            stateful_step_count=6,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
            database=None,
        )
    )


def _as_httpx(response: Any) -> httpx.Response:
    """schemathesis's response (headers as lists of values) as the document check reads it."""
    headers = [(name, value) for name, values in response.headers.items() for value in values]
    request = httpx.Request(response.request.method, response.request.url)
    return httpx.Response(
        response.status_code, headers=headers, content=response.content, request=request
    )


def test_zz_the_run_sent_many_requests() -> None:
    """How many requests the run generated, by status (shown with ``-s``)."""
    total = sum(SENT.values())
    print(f"\nschemathesis: {total} generated requests, by status {dict(sorted(SENT.items()))}")
    walked = dict(sorted(STATEFUL.items()))
    print(f"stateful walks: {STATEFUL.total()} requests, by status {walked}")
    print(f"stateful walks sent a cursor back {FOLLOWED.total()} times: {dict(FOLLOWED)}")
    assert total >= 5 * len(ROUTES) * min(EXAMPLES, 4)
    assert not any(status >= 500 for status in SENT)
    assert FOLLOWED.total() > 0, "no walk followed a link with a cursor it was given"
