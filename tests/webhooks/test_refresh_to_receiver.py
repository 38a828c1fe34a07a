"""End to end: a real refresh that adds a day of prices produces one ``data.changed`` event,
delivered over HTTPS to a Max account's endpoint; the subscriber follows ``changes_url`` from its
own saved cursor, re-pulls each record's ``url`` and ends with the rows of a fresh full pull."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
import standardwebhooks
import svix.webhooks
from conftest import PublishedDemo

import findata_client.webhooks
from findata.api.app import create_app
from findata.orchestration.refresh import run_refresh
from findata.settings import Settings, get_settings
from tests.api.server import RunningApi, serve, start_clock
from tests.sources.landing_edits import add_price_day, next_session
from tests.webhooks.receiver import LoopbackCertificates, Receiver, make_rig

PriceKey = tuple[int, str]


class Subscriber:
    """A client that keeps the prices of some securities and keeps them current from the feed
    (spec: "Change feed": delete the record's rows from start to end, store the url's pages)."""

    def __init__(self, api: RunningApi, key: str, entity_ids: list[int]) -> None:
        self.api = api
        self.key = key
        self.entity_ids = entity_ids
        self.rows: dict[PriceKey, dict[str, Any]] = {}
        self.cursor: str | None = None

    def get(self, path_or_url: str, **params: Any) -> dict[str, Any]:
        with self.api.client() as client:
            response = client.get(path_or_url, params=params, headers={"x-api-key": self.key})
        assert response.status_code == 200, response.text
        return response.json()

    def pages(self, path: str, **params: Any) -> list[dict[str, Any]]:
        """Every page of a cursor-paged data query."""
        bodies = [self.get(path, **params)]
        while bodies[-1]["meta"]["next_cursor"]:
            bodies.append(self.get(path, **params, cursor=bodies[-1]["meta"]["next_cursor"]))
        return bodies

    def full_pull(self) -> dict[PriceKey, dict[str, Any]]:
        """Every price row of the securities kept; saves the first page's change cursor."""
        ids = ",".join(map(str, self.entity_ids))
        bodies = self.pages("/v1/prices", entity_id=ids, start="1990-01-01", limit=5000)
        if self.cursor is None:
            self.cursor = bodies[0]["meta"]["change_cursor"]
        return {(row["entity_id"], row["date"]): row for body in bodies for row in body["data"]}

    def follow_feed(self, changes_url: str) -> list[dict[str, Any]]:
        """Apply every record after the saved cursor; returns the records read."""
        records: list[dict[str, Any]] = []
        while True:
            body = self.get(changes_url, since=self.cursor, limit=50)
            records += body["data"]
            for record in body["data"]:
                self.apply(record)
            self.cursor = body["meta"]["next_cursor"]
            if not body["meta"]["has_more"]:
                return records

    def apply(self, record: dict[str, Any]) -> None:
        if record["dataset"] != "prices" or int(record["entity"]) not in self.entity_ids:
            return
        entity, start, end = int(record["entity"]), record["start"], record["end"]
        for key in [k for k in self.rows if k[0] == entity]:
            if (start is None or key[1] >= start) and (end is None or key[1] <= end):
                del self.rows[key]
        path, _, query = record["url"].partition("?")
        params = dict(p.split("=", 1) for p in query.split("&") if not p.endswith("="))
        for body in self.pages(path, **params, limit=5000):
            self.rows.update({(row["entity_id"], row["date"]): row for row in body["data"]})


@pytest.fixture
def two_week_old_home(
    two_week_old_demo: PublishedDemo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Settings, dict[str, Any]]:
    """A copy of the published demo that ends two weeks ago (so a next trading day is not in
    the future)."""
    home = two_week_old_demo.copy_to(tmp_path / "home")
    monkeypatch.setenv("FINDATA_HOME", str(home))
    monkeypatch.setenv("DAGSTER_HOME", str(home / "dagster"))
    return get_settings(), two_week_old_demo.scenarios


def test_a_refresh_reaches_the_subscriber_who_re_pulls_exactly_what_changed(
    two_week_old_home: tuple[Settings, dict[str, Any]],
    receiver: Receiver,
    test_certificates: LoopbackCertificates,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings, scenarios = two_week_old_home
    gainer = scenarios["plain"]["entity_id"]
    unchanged = scenarios["share_classes"]["security_entity_ids"][0]
    clock = start_clock()
    with serve(create_app(settings, clock), clock) as api:
        rig = make_rig(settings.control_plane_url, settings.home_dir, test_certificates)
        account = rig.account("max")
        endpoint_url = receiver.url()
        secret = rig.endpoints.add(account.id, endpoint_url).secret
        subscriber = Subscriber(api, rig.accounts.create_key(account.id).key, [gainer, unchanged])
        subscriber.rows = subscriber.full_pull()
        before = dict(subscriber.rows)

        day = next_session(dt.date.fromisoformat(scenarios["as_of"]))
        add_price_day(settings.landing_dir, day, [gainer])
        monkeypatch.setenv("FINDATA_BASE_URL", api.url)  # the event's changes_url
        outcome = run_refresh(get_settings())
        assert outcome.success and outcome.version

        worker = rig.worker()
        assert worker.run_once().outcomes == {"delivered": 1}
        assert worker.run_once().attempts == 0  # one event for the refresh, sent once
        (request,) = receiver.received(
            endpoint_url.removeprefix(f"https://localhost:{receiver.port}")
        )
        svix.webhooks.Webhook(secret).verify(request.body, request.headers)
        event = standardwebhooks.Webhook(secret).verify(request.body, request.headers)
        assert findata_client.webhooks.verify(request.body, request.headers, secret).raw == event

        assert event["type"] == "data.changed" and event["run_id"] == outcome.run_id
        assert list(event) == [
            "id",
            "type",
            "created",
            "run_id",
            "datasets",
            "cursor_from",
            "cursor_to",
            "changes_url",
        ]
        assert event["changes_url"] == f"{api.url}/v1/changes"
        names = [d["dataset"] for d in event["datasets"]]
        assert names == sorted(names) and "prices" in names
        prices = next(d for d in event["datasets"] if d["dataset"] == "prices")
        assert prices["added"] + prices["changed"] >= 1
        # cursor_from returns this refresh's records first, cursor_to is its last record
        first = subscriber.get(event["changes_url"], since=event["cursor_from"], limit=1)
        assert (
            int(first["data"][0]["id"].removeprefix("chg_"))
            == int(event["cursor_from"].removeprefix("chg_")) + 1
        )
        assert first["meta"]["latest_cursor"] == event["cursor_to"]

        records = subscriber.follow_feed(event["changes_url"])
        assert any(r["dataset"] == "prices" and int(r["entity"]) == gainer for r in records), (
            records
        )
        assert not any(r["dataset"] == "prices" and int(r["entity"]) == unchanged for r in records)
        fresh = subscriber.full_pull()
        assert subscriber.rows == fresh
        assert (gainer, day.isoformat()) in fresh and (gainer, day.isoformat()) not in before
        assert len(fresh) == len(before) + 1
