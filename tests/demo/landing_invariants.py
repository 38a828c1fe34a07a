"""What generated landing must satisfy for any seed and any day, checked on the files as the
real readers read them back (not on the generator's objects, so a generator bug shows here).

- Every index roster row names its member: its ticker names exactly that security on the day
  it was added (publishers key rosters by ticker).
- Every scenario of the manifest is exactly the case its key names: on the dates it gives, its
  ticker names exactly the entities the case is about (two companies only for ``ambiguous``,
  both classes of one company only for the ``share_classes`` shared ticker).

Used by the scenario tests (the session demo), the dozen-days smoke test
(``check_default_demo_on``) and the property sweep over seeds and days
(``check_seed_and_day``), both run in worker processes.
"""

from __future__ import annotations

import datetime as dt
import json
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import pandas as pd

from findata.demo.generate import DEFAULT_SEED, build_demo, generate_demo
from findata.demo.landing_csv import (
    write_corporate_actions,
    write_index_membership,
    write_security_master,
)
from findata.demo.scenario_checks import ScenarioError
from findata.demo.sizes import SIZES
from findata.sources.landing import Tables, read_all_landing, read_source
from findata.sources.readers.errors import MalformedFileError


def _day(text: str) -> dt.date:
    return dt.date.fromisoformat(text)


def _date(value: Any) -> dt.date | None:
    return None if pd.isna(value) else pd.Timestamp(value).date()


class TickerNames:
    """Who each ticker names on a day, by the security master as read back."""

    def __init__(self, master: pd.DataFrame) -> None:
        self._periods: dict[str, list[tuple[int, dt.date, dt.date | None]]] = defaultdict(list)
        self.issuer_of: dict[int, int] = {}
        for row in master.itertuples():
            entity = int(row.entity_id)
            self._periods[row.ticker].append((entity, _date(row.valid_from), _date(row.valid_to)))
            self.issuer_of[entity] = int(row.issuer_entity_id)

    def on(self, ticker: str, day: dt.date) -> set[int]:
        """The entities ``ticker`` names on ``day``."""
        return {
            entity
            for entity, start, end in self._periods.get(ticker, [])
            if start <= day and (end is None or day <= end)
        }


class _Problems:
    def __init__(self, names: TickerNames) -> None:
        self.names = names
        self.found: list[str] = []

    def expect(self, what: str, ticker: str, day: dt.date, entities: set[int]) -> None:
        named = self.names.on(ticker, day)
        if named != entities:
            self.found.append(
                f"{what}: {ticker!r} on {day} names {sorted(named) or 'nothing'}, "
                f"expected {sorted(entities) or 'nothing'}"
            )

    def one(self, what: str, ticker: str, day: dt.date) -> int | None:
        named = self.names.on(ticker, day)
        if len(named) != 1:
            self.found.append(f"{what}: {ticker!r} on {day} names {sorted(named) or 'nothing'}")
            return None
        return next(iter(named))


def roster_problems(tables: Tables) -> list[str]:
    """Index roster rows whose ticker does not name exactly their member when added."""
    problems = _Problems(TickerNames(tables["security_master"]))
    for row in tables["index_membership"].itertuples():
        problems.expect(f"{row.index} roster", row.ticker, _date(row.added), {int(row.entity_id)})
    return problems.found


def scenario_problems(manifest: dict[str, Any], tables: Tables) -> list[str]:
    """Scenarios of ``manifest`` that are not exactly the case their key names."""
    check = _Problems(TickerNames(tables["security_master"]))
    as_of = _day(manifest["as_of"])

    plain = manifest["plain"]
    check.expect("plain", plain["ticker"], as_of, {plain["entity_id"]})
    classes = manifest["share_classes"]
    check.expect(
        "share_classes", classes["shared_ticker"], as_of, set(classes["security_entity_ids"])
    )
    for ticker, entity in zip(
        classes["class_tickers"], classes["security_entity_ids"], strict=True
    ):
        check.expect("share_classes", ticker, as_of, {entity})
    ambiguous = manifest["ambiguous"]
    check.expect(
        "ambiguous", ambiguous["ticker"], _day(ambiguous["date"]), set(ambiguous["entity_ids"])
    )
    if len({check.names.issuer_of.get(e) for e in ambiguous["entity_ids"]}) != 2:
        check.found.append("ambiguous: the entities are not of two companies")
    for period in manifest["reused"]["periods"]:
        for bound in ("valid_from", "valid_to"):
            if period[bound] is not None:
                check.expect(
                    "reused", manifest["reused"]["ticker"], _day(period[bound]),
                    {period["entity_id"]},
                )  # fmt: skip
    renamed = manifest["renamed"]
    change = _day(renamed["change_date"])
    before = change - dt.timedelta(days=1)
    check.expect("renamed", renamed["old_ticker"], before, {renamed["entity_id"]})
    check.expect("renamed", renamed["old_ticker"], change, set())
    check.expect("renamed", renamed["new_ticker"], change, {renamed["entity_id"]})
    delisted = manifest["delisted"]
    last = _day(delisted["last_date"])
    check.expect("delisted", delisted["ticker"], last, {delisted["entity_id"]})
    check.expect("delisted", delisted["ticker"], last + dt.timedelta(days=1), set())
    orphan = manifest["issuer_without_listing"]
    check.expect(
        "issuer_without_listing", orphan["ticker"], _day(orphan["date"]),
        {orphan["issuer_entity_id"]},
    )  # fmt: skip
    actions = tables["corporate_actions"]
    for scenario in ("split", "dividend"):
        case = manifest[scenario]
        day = _day(case["date"])
        entity = check.one(scenario, case["ticker"], day)
        own = actions[
            (actions["entity_id"] == entity)
            & (actions["action"] == scenario)
            & (actions["ex_date"] == pd.Timestamp(day))
        ]
        if entity is not None and len(own) != 1:
            check.found.append(f"{scenario}: entity {entity} has no {scenario} on {day}")
    for scenario in ("restatement", "insiders", "holdings"):
        check.one(scenario, manifest[scenario]["ticker"], as_of)
    check.found += _index_event_problems(check, manifest["index_events"], tables)
    return check.found


def _index_event_problems(check: _Problems, case: dict[str, Any], tables: Tables) -> list[str]:
    """The added ticker names the member added that day, not a member the day before; the
    removed ticker names the member removed, on its last day as a member and on the removal date
    itself, and that member never comes back."""
    found: list[str] = []
    roster = tables["index_membership"]
    roster = roster[roster["index"] == case["index"]]
    added_day = _day(case["added"]["date"])
    entity = check.one("index_events.added", case["added"]["ticker"], added_day)
    added = set(roster.loc[roster["added"] == pd.Timestamp(added_day), "entity_id"])
    if entity is not None and entity not in added:
        found.append(f"index_events.added: entity {entity} was not added on {added_day}")
    earlier = roster[(roster["entity_id"] == entity) & (roster["added"] < pd.Timestamp(added_day))]
    if (earlier["removed"].isna() | (earlier["removed"] >= pd.Timestamp(added_day))).any():
        found.append(f"index_events.added: entity {entity} was a member the day before")
    removed_day = _day(case["removed"]["date"])
    ticker = case["removed"]["ticker"]
    entity = check.one("index_events.removed", ticker, removed_day)
    removed = set(roster.loc[roster["removed"] == pd.Timestamp(removed_day), "entity_id"])
    if entity is not None:
        if entity not in removed:
            found.append(f"index_events.removed: entity {entity} was not removed on {removed_day}")
        check.expect("index_events.removed", ticker, removed_day - dt.timedelta(days=1), {entity})
        if (roster.loc[roster["entity_id"] == entity, "added"] >= pd.Timestamp(removed_day)).any():
            found.append(f"index_events.removed: entity {entity} comes back after {removed_day}")
    return found


def check_seed_and_day(seed: int, today: dt.date, size: str = "tiny") -> list[str]:
    """Generate the demo for ``seed`` and ``today`` through the real generator (its own manifest
    check included), write its security master, corporate actions and index rosters with the
    real writers, read them back with the real readers, and return every problem found."""
    where = f"seed {seed} on {today}"
    try:
        demo = build_demo(SIZES[size], seed, today)
    except ScenarioError as error:
        return [f"{where}: {error}"]
    market = demo.market
    with tempfile.TemporaryDirectory() as folder:
        landing = Path(folder)
        write_security_master(market.universe, landing / "security_master" / "master.csv")
        write_index_membership(market.memberships, landing / "index_membership" / "members.csv")
        write_corporate_actions(market.history, landing / "corporate_actions" / "actions.csv")
        try:
            tables: Tables = {}
            for source in ("security_master", "index_membership", "corporate_actions"):
                tables.update(read_source(landing, source))
        except MalformedFileError as error:
            return [f"{where}: {error}"]
    problems = roster_problems(tables) + scenario_problems(demo.scenarios, tables)
    return [f"{where}: {problem}" for problem in problems]


def check_default_demo_on(today: dt.date) -> list[str]:
    """Generate the default demo (small, default seed) as ``findata demo`` would on ``today``,
    read every landing file back with its reader, and return every problem found."""
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder)
        try:
            result = generate_demo(
                home / "landing", home / "demo", size="small", seed=DEFAULT_SEED, today=today
            )
            tables = read_all_landing(home / "landing").tables
        except (ScenarioError, MalformedFileError) as error:
            return [f"{today}: {error}"]
        manifest = json.loads(result.scenarios_path.read_text())
    problems = roster_problems(tables) + scenario_problems(manifest, tables)
    if not result.as_of < today:
        problems.append(f"as_of {result.as_of} is not before {today}")
    if tables["prices"]["date"].max().date() != result.as_of:
        problems.append(f"prices end {tables['prices']['date'].max()}, not on {result.as_of}")
    return [f"{today}: {problem}" for problem in problems]
