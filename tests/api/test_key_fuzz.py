"""Random combinations of key places, values and other names thrown at the real server: every
answer is the one the spec's reading rules give (a small model below), never a 500."""

from __future__ import annotations

import string
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from findata.accounts.keys import is_complete_key
from tests.api.server import RunningApi


@dataclass(frozen=True)
class Keys:
    valid: str
    revoked: str
    disabled: str
    unknown: str = "fdk_" + "e" * 32


@pytest.fixture(scope="module")
def keys(api: RunningApi) -> Keys:
    valid = api.new_key("max").key
    revoked = api.new_key("max").key
    api.store.revoke_key(revoked)
    disabled = api.new_key("pro")
    api.store.set_state(disabled.account.id, "disabled")
    return Keys(valid, revoked, disabled.key)


@pytest.fixture(scope="module")
def client(api: RunningApi) -> Iterator[httpx.Client]:
    with api.client() as shared:
        yield shared


# values are kinds, turned into text with the module's keys; "text" is arbitrary printable text
KINDS = ["absent", "empty", "valid", "revoked", "disabled", "unknown", "partial", "quoted", "text"]
TEXT = st.text(
    alphabet=string.ascii_letters + string.digits + string.punctuation + " ", max_size=40
)
OTHER_HEADERS = ["api-key", "apikey", "x-api-token", "token"]
OTHER_PARAMETERS = ["apikey", "key", "token", "access_token"]
PATHS = ["/v1/auth/usage", "/v1/status", "/v1/not-an-endpoint"]


def _value(kind: str, keys: Keys, text: str) -> str | None:
    return {
        "absent": None,
        "empty": "",
        "valid": keys.valid,
        "revoked": keys.revoked,
        "disabled": keys.disabled,
        "unknown": keys.unknown,
        "partial": keys.valid[:20],
        "quoted": f'"{keys.valid}"',
        "text": text,
    }[kind]


def _identity(key: str, keys: Keys) -> int:
    """The status a complete key earns on a keyed endpoint."""
    if key == keys.valid:
        return 200
    if key == keys.disabled:
        return 403
    return 401


def _expected(path: str, headers: dict[str, str], params: dict[str, str], keys: Keys) -> int:
    """The spec's rules, written once more from the spec (not from api/auth.py)."""
    if path == "/v1/status":
        return 200
    # the server sees header values without surrounding whitespace (HTTP strips it)
    first = next(
        (v for v in (headers.get("X-API-Key", "").strip(), params.get("api_key", "")) if v), None
    )
    if first is not None:
        status = _identity(first, keys) if is_complete_key(first) else 401
    else:
        authorization = headers.get("Authorization", "").strip()
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() == "bearer" and is_complete_key(token.strip()):
            status = _identity(token.strip(), keys)
        else:
            status = 401
    if path == "/v1/not-an-endpoint" and status == 200:
        return 404
    return status


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    path=st.sampled_from(PATHS),
    header_kind=st.sampled_from(KINDS),
    parameter_kind=st.sampled_from(KINDS),
    scheme=st.sampled_from(["Bearer", "bearer", "BEARER", "Basic", "Token", "", "Bearer "]),
    authorization_kind=st.sampled_from(KINDS),
    others=st.dictionaries(
        st.sampled_from([f"h:{n}" for n in OTHER_HEADERS] + [f"p:{n}" for n in OTHER_PARAMETERS]),
        st.sampled_from(KINDS[1:]),
        max_size=3,
    ),
    text=TEXT,
)
def test_key_reading_answers_by_the_rules_and_never_500(
    client: httpx.Client,
    keys: Keys,
    path: str,
    header_kind: str,
    parameter_kind: str,
    scheme: str,
    authorization_kind: str,
    others: dict[str, str],
    text: str,
) -> None:
    headers: dict[str, str] = {}
    params: dict[str, str] = {}
    for place, kind in others.items():
        where, name = place.split(":")
        value = _value(kind, keys, text)
        assert value is not None
        (headers if where == "h" else params)[name] = value
    if (value := _value(header_kind, keys, text)) is not None:
        headers["X-API-Key"] = value
    if (value := _value(parameter_kind, keys, text)) is not None:
        params["api_key"] = value
    if (value := _value(authorization_kind, keys, text)) is not None:
        headers["Authorization"] = f"{scheme} {value}" if scheme else value

    # HTTP cannot carry surrounding whitespace in a header value: send what a client can send
    headers = {name: value.strip() for name, value in headers.items()}
    response = client.get(path, headers=headers, params=params)

    assert response.status_code == _expected(path, headers, params, keys), (headers, params)
    body = response.json()
    if response.status_code >= 400:
        assert body["status"] == response.status_code
        assert body["code"] in {"unauthorized", "account_disabled", "not_found"}
        assert body["detail"]
