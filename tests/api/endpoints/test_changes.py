"""``/v1/changes`` over real HTTP: plan gate, every record once and in order from a saved cursor,
``since`` as a data response's ``change_cursor`` or a date, 410 past the 90 days kept."""

from __future__ import annotations

import datetime as dt
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from findata.api.app import create_app
from findata.control_plane.database import engine_for
from findata.control_plane.schema import change_records
from findata.settings import Settings
from tests.api.endpoints.api_calls import get
from tests.api.server import RunningApi, serve, start_clock


def _all_records(settings_home: Path) -> list[int]:
    engine = engine_for(Settings(home=settings_home).control_plane_url)
    with engine.connect() as connection:
        return list(
            connection.execute(
                sa.select(change_records.c.id).order_by(change_records.c.id)
            ).scalars()
        )


def test_free_and_pro_get_402(api: RunningApi) -> None:
    for plan in ("free", "pro"):
        response = get(api, api.new_key(plan).key, "/v1/changes")
        assert response.status_code == 402
        assert response.json()["code"] == "upgrade_required"


def test_every_record_once_and_in_order(api: RunningApi, published_home: Path) -> None:
    key = api.new_key("max").key
    seen: list[str] = []
    cursor = None
    while True:
        params = {"limit": 97, **({"since": cursor} if cursor else {})}
        body = get(api, key, "/v1/changes", **params).json()
        seen += [record["id"] for record in body["data"]]
        assert body["meta"]["latest_cursor"] == f"chg_{_all_records(published_home)[-1]:012d}"
        cursor = body["meta"]["next_cursor"]
        if not body["meta"]["has_more"]:
            break
    assert seen == [f"chg_{n:012d}" for n in _all_records(published_home)]
    # from the last cursor: nothing new, and the same cursor to wait on
    tail = get(api, key, "/v1/changes", since=cursor).json()
    assert tail["data"] == [] and tail["meta"]["next_cursor"] == cursor


def test_records_say_what_to_re_pull(api: RunningApi) -> None:
    records = get(api, api.new_key("max").key, "/v1/changes", limit=5000).json()["data"]
    index = [r for r in records if r["scope"] == "index"]
    assert index and all(r["index"] == r["entity"].upper() for r in index)
    prices = [r for r in records if r["dataset"] == "prices"]
    assert prices and all(r["url"].startswith("/v1/prices") for r in prices)
    assert all({"id", "scope", "url", "start", "end"} <= set(r) for r in records)


def test_a_data_response_gives_the_cursor_to_start_from(api: RunningApi, scenarios: dict) -> None:
    key = api.new_key("max").key
    meta = get(api, key, f"/v1/prices/{scenarios['plain']['ticker']}", limit=1).json()["meta"]
    feed = get(api, key, "/v1/changes", since=meta["change_cursor"]).json()
    assert feed["data"] == []  # the data already holds every change up to its version
    assert feed["meta"]["latest_cursor"] == meta["change_cursor"]
    keyless = get(api, None, "/v1/search", q=scenarios["plain"]["ticker"]).json()
    assert "change_cursor" not in keyless["meta"]


def test_since_texts_and_dates(api: RunningApi) -> None:
    key = api.new_key("max").key
    bad = get(api, key, "/v1/changes", since="yesterday")
    assert bad.status_code == 400
    assert bad.json()["detail"] == (
        "Invalid since: 'yesterday' (expected a change cursor chg_NNNNNNNNNNNN or a date "
        "YYYY-MM-DD)"
    )
    today = api.clock.now().date()
    recent = get(api, key, "/v1/changes", since=today.isoformat(), limit=1)
    assert recent.status_code == 200
    expired = get(api, key, "/v1/changes", since=(today - dt.timedelta(days=91)).isoformat())
    assert expired.status_code == 410
    assert expired.json()["code"] == expired.json()["error"] == "cursor_expired"


def test_a_cursor_past_the_newest_record_was_never_issued(api: RunningApi) -> None:
    key = api.new_key("max").key
    latest = get(api, key, "/v1/changes", limit=1).json()["meta"]["latest_cursor"]
    assert get(api, key, "/v1/changes", since=latest).status_code == 200  # caught up: valid
    past = f"chg_{int(latest.removeprefix('chg_')) + 1:012d}"
    for since in (past, "chg_999999999999"):
        refused = get(api, key, "/v1/changes", since=since)
        assert refused.status_code == 400
        assert refused.json()["detail"] == (
            f"Invalid since: '{since}' is past the newest change record ({latest}); pass a "
            "meta.next_cursor or meta.change_cursor that findata gave you"
        )
    for since in ("chg_00000000000١", "chg_0000000000001", "chg_00000000001"):  # not cursors
        assert get(api, key, "/v1/changes", since=since).status_code == 400


@pytest.fixture
def pruned_api(published_home: Path, tmp_path: Path) -> Iterator[RunningApi]:
    """A copy of the published demo whose 100 oldest records were pruned."""
    home = tmp_path / "home"
    shutil.copytree(published_home / "published", home / "published")
    with (
        sqlite3.connect(published_home / "control.sqlite") as source,
        sqlite3.connect(home / "control.sqlite") as copy,
    ):
        source.backup(copy)
        copy.execute("DELETE FROM change_records WHERE id <= 100")
    clock = start_clock()
    with serve(create_app(Settings(home=home), clock), clock) as running:
        yield running


def test_a_cursor_before_pruned_records_is_410(pruned_api: RunningApi) -> None:
    key = pruned_api.new_key("redistribution").key
    expired = get(pruned_api, key, "/v1/changes", since="chg_000000000050")
    assert expired.status_code == 410
    # a reader who had read every pruned record missed nothing
    fine = get(pruned_api, key, "/v1/changes", since="chg_000000000100", limit=1).json()
    assert fine["data"][0]["id"] == "chg_000000000101"
