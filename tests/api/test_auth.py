"""Where the key is read and every refusal of it, over real HTTP, on SQLite and PostgreSQL
control planes (spec: "Authentication", "Keyless access", "API key", "Account")."""

from __future__ import annotations

import datetime as dt

import httpx
import pytest

from findata.contracts.errors import load_errors
from tests.api.server import RunningApi

KEYED = "/v1/auth/usage"
DETAILS = load_errors().unauthorized_details


def _get(api: RunningApi, path: str = KEYED, **kwargs: object) -> httpx.Response:
    with api.client() as client:
        return client.get(path, **kwargs)  # type: ignore[arg-type]


def _refused(response: httpx.Response, cause: str, **values: str) -> None:
    """A 401 with the cause's detail, `message` repeating it."""
    assert response.status_code == 401, response.text
    body = response.json()
    assert body["code"] == body["error"] == "unauthorized"
    assert body["status"] == 401
    assert body["detail"] == DETAILS[cause].format(**values)  # type: ignore[index]
    assert body["message"] == body["detail"]
    assert "X-RateLimit-Limit-Day" not in response.headers
    assert "Access-Control-Expose-Headers" in response.headers


def test_each_of_the_three_places_gives_the_same_answer(any_api: RunningApi) -> None:
    key = any_api.new_key("pro").key
    answers = [
        _get(any_api, headers={"X-API-Key": key}),
        _get(any_api, params={"api_key": key}),
        _get(any_api, headers={"Authorization": f"Bearer {key}"}),
        _get(any_api, headers={"Authorization": f"bearer {key}"}),
        _get(any_api, headers={"Authorization": f"BEARER {key}"}),
    ]
    assert {response.status_code for response in answers} == {200}
    assert len({response.text for response in answers}) == 1
    assert answers[0].json()["daily_limit"] == 10_000


def test_no_key(any_api: RunningApi) -> None:
    _refused(_get(any_api), "missing")


def test_the_first_place_read_decides_even_when_a_later_one_is_valid(any_api: RunningApi) -> None:
    key = any_api.new_key().key
    stranger = "fdk_" + "0" * 32
    _refused(
        _get(any_api, headers={"X-API-Key": stranger}, params={"api_key": key}), "unrecognised"
    )
    _refused(
        _get(any_api, params={"api_key": key[:-1]}, headers={"Authorization": f"Bearer {key}"}),
        "incomplete",
        place="api_key query parameter",
    )
    _refused(
        _get(any_api, params={"api_key": stranger}, headers={"Authorization": f"Bearer {key}"}),
        "unrecognised",
    )
    # a valid key read first wins over anything later
    ok = _get(
        any_api,
        headers={"X-API-Key": key, "Authorization": "Basic abc"},
        params={"api_key": "nonsense", "token": "x"},
    )
    assert ok.status_code == 200


def test_empty_places_count_as_absent(any_api: RunningApi) -> None:
    key = any_api.new_key().key
    assert _get(any_api, headers={"X-API-Key": ""}, params={"api_key": key}).status_code == 200
    assert (
        _get(
            any_api, params={"api_key": ""}, headers={"Authorization": f"Bearer {key}"}
        ).status_code
        == 200
    )
    _refused(_get(any_api, headers={"X-API-Key": "", "Authorization": ""}), "missing")


@pytest.mark.parametrize(
    "value",
    ["fdk_0123", "'{key}'", '"{key}"', "Bearer {key}", "{key}x", "{upper}", "key={key}"],
)
def test_an_incomplete_value_in_a_bare_place(any_api: RunningApi, value: str) -> None:
    key = any_api.new_key().key
    sent = value.format(key=key, upper=key.upper())
    _refused(_get(any_api, headers={"X-API-Key": sent}), "incomplete", place="X-API-Key header")
    _refused(_get(any_api, params={"api_key": sent}), "incomplete", place="api_key query parameter")


def test_a_space_inside_the_parameter_is_incomplete(any_api: RunningApi) -> None:
    key = any_api.new_key().key
    _refused(
        _get(any_api, params={"api_key": f" {key}"}), "incomplete", place="api_key query parameter"
    )


@pytest.mark.parametrize(
    "value", ["Basic {key}", "Token {key}", "{key}", "Bearer", "Bearer fdk_12", "Bearer '{key}'"]
)
def test_authorization_not_bearer_plus_a_complete_key(any_api: RunningApi, value: str) -> None:
    key = any_api.new_key().key
    _refused(
        _get(any_api, headers={"Authorization": value.format(key=key)}),
        "authorization_not_bearer",
    )


@pytest.mark.parametrize(
    ("where", "name", "place"),
    [
        ("headers", "api-key", "'api-key' header"),
        ("headers", "apikey", "'apikey' header"),
        ("headers", "x-api-token", "'x-api-token' header"),
        ("headers", "token", "'token' header"),
        ("params", "apikey", "'apikey' query parameter"),
        ("params", "key", "'key' query parameter"),
        ("params", "token", "'token' query parameter"),
        ("params", "access_token", "'access_token' query parameter"),
    ],
)
def test_a_key_under_another_name_is_not_read(
    any_api: RunningApi, where: str, name: str, place: str
) -> None:
    key = any_api.new_key().key
    _refused(_get(any_api, **{where: {name: key}}), "other_name", place=place)


def test_revoked_key_names_its_revocation_date(any_api: RunningApi) -> None:
    issued = any_api.new_key("max")
    any_api.clock.set(dt.datetime(2026, 3, 14, 9, 30, tzinfo=dt.UTC))
    try:
        any_api.store.revoke_key(issued.key)
    finally:
        any_api.clock.set(dt.datetime.now(dt.UTC))
    for response in (
        _get(any_api, headers={"X-API-Key": issued.key}),
        _get(any_api, params={"api_key": issued.key}),
        _get(any_api, headers={"Authorization": f"Bearer {issued.key}"}),
    ):
        _refused(response, "revoked", revoked_on="2026-03-14")
        assert "2026-03-14" in response.json()["detail"]


def test_regenerating_a_free_key_revokes_the_old_one(any_api: RunningApi) -> None:
    first = any_api.new_key("free")
    second = any_api.store.create_key(first.account.id)
    assert _get(any_api, headers={"X-API-Key": second.key}).status_code == 200
    today = any_api.clock.now().date().isoformat()
    _refused(_get(any_api, headers={"X-API-Key": first.key}), "revoked", revoked_on=today)


def test_well_formed_but_unknown_key(any_api: RunningApi) -> None:
    _refused(_get(any_api, headers={"X-API-Key": "fdk_" + "ab" * 16}), "unrecognised")


def test_every_cause_has_its_own_detail(any_api: RunningApi) -> None:
    revoked = any_api.new_key("max").key
    any_api.store.revoke_key(revoked)
    answers = [
        _get(any_api),
        _get(any_api, headers={"X-API-Key": "fdk_1"}),
        _get(any_api, headers={"Authorization": "Basic x"}),
        _get(any_api, headers={"apikey": "fdk_1"}),
        _get(any_api, headers={"X-API-Key": revoked}),
        _get(any_api, headers={"X-API-Key": "fdk_" + "cd" * 16}),
    ]
    assert {response.status_code for response in answers} == {401}
    assert len({response.json()["detail"] for response in answers}) == 6


def test_a_disabled_account_gets_403_with_every_key_place(any_api: RunningApi) -> None:
    issued = any_api.new_key("max")
    any_api.store.set_state(issued.account.id, "disabled")
    for response in (
        _get(any_api, headers={"X-API-Key": issued.key}),
        _get(any_api, params={"api_key": issued.key}),
        _get(any_api, headers={"Authorization": f"Bearer {issued.key}"}),
        _get(any_api, "/v1/no-such-endpoint", headers={"X-API-Key": issued.key}),
    ):
        assert response.status_code == 403, response.text
        body = response.json()
        assert body["code"] == "account_disabled"
        assert body["error"].startswith("Account temporarily disabled. ")
        assert body["error"] != "Account temporarily disabled."  # a contact-support text follows
        assert body["message"] == body["detail"]
    any_api.store.set_state(issued.account.id, "enabled")
    assert _get(any_api, headers={"X-API-Key": issued.key}).status_code == 200


def test_the_key_is_checked_before_the_path(any_api: RunningApi) -> None:
    key = any_api.new_key().key
    _refused(_get(any_api, "/v1/no-such-endpoint"), "missing")
    _refused(
        _get(any_api, "/v1/no-such-endpoint", headers={"X-API-Key": "fdk_1"}),
        "incomplete",
        place="X-API-Key header",
    )
    found = _get(any_api, "/v1/no-such-endpoint", headers={"X-API-Key": key})
    assert found.status_code == 404
    assert found.json() == {
        "error": "not_found",
        "code": "not_found",
        "status": 404,
        "detail": "Unknown endpoint",
    }
    assert "X-RateLimit-Limit-Day" not in found.headers
