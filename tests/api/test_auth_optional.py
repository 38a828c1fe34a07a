"""Keys where they are optional (resolve and search: spec "Keyless access"): a sent key is still
checked, everything else is answered as keyless. The rule on the real control plane; the routes
that use it arrive with the data endpoints and are tested over HTTP there."""

from __future__ import annotations

import pytest

from findata.api.auth import authenticate, read_key
from findata.api.errors import AccountDisabled, Unauthorized
from tests.api.server import RunningApi

UNKNOWN = "fdk_" + "7" * 32


def _optional(api: RunningApi, headers: dict[str, str], query: dict[str, str] | None = None):
    lowered = {name.lower(): value for name, value in headers.items()}
    return authenticate(read_key(lowered, query or {}), api.store, "optional").owner


@pytest.mark.parametrize(
    ("headers", "query"),
    [
        ({}, {}),
        ({"apikey": "fdk_1"}, {}),
        ({}, {"token": UNKNOWN}),
        ({"Authorization": "Basic abc"}, {}),
        ({"Authorization": "Bearer fdk_12"}, {}),
        ({"X-API-Key": ""}, {"api_key": ""}),
    ],
)
def test_no_key_other_names_and_other_authorization_are_keyless(
    any_api: RunningApi, headers: dict[str, str], query: dict[str, str]
) -> None:
    assert _optional(any_api, headers, query) is None


def test_a_sent_key_is_still_checked(any_api: RunningApi) -> None:
    revoked = any_api.new_key("max").key
    any_api.store.revoke_key(revoked)
    disabled = any_api.new_key()
    any_api.store.set_state(disabled.account.id, "disabled")
    refusals = [
        ({"X-API-Key": "fdk_1"}, {}, "incomplete"),
        ({}, {"api_key": '"' + UNKNOWN + '"'}, "incomplete"),
        ({"X-API-Key": UNKNOWN}, {}, "unrecognised"),
        ({}, {"api_key": revoked}, "revoked"),
        ({"Authorization": f"Bearer {UNKNOWN}"}, {}, "unrecognised"),
        ({"Authorization": f"bearer {revoked}"}, {}, "revoked"),
    ]
    for headers, query, cause in refusals:
        with pytest.raises(Unauthorized) as refused:
            _optional(any_api, headers, query)
        assert refused.value.cause == cause
    with pytest.raises(AccountDisabled):
        _optional(any_api, {"X-API-Key": disabled.key})
    valid = any_api.new_key("pro")
    owner = _optional(any_api, {"Authorization": f"Bearer {valid.key}"})
    assert owner is not None and owner.account.id == valid.account.id
