"""The real Dagster refresh job on the small demo: versions, change records, events, failures.

One FINDATA_HOME is taken through a sequence of landing changes, refreshing after each (the
refreshes are what costs time, so each runs once and every test reads its outcome).
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pytest
import sqlalchemy as sa
from conftest import PublishedDemo

from findata.contracts.datasets import dataset_names
from findata.control_plane import schema
from findata.control_plane.database import engine_for
from findata.orchestration.assets import dbt as dbt_assets_module
from findata.orchestration.build_inputs import last_built
from findata.orchestration.dbt_manifest import build_target
from findata.orchestration.refresh import RefreshOutcome, run_refresh
from findata.published.diff import published_differences
from findata.published.versions import (
    attach_version,
    current_version_at,
    open_version,
    version_part_files,
)
from findata.settings import Settings, get_settings
from findata.sources.readers.security_master import read_security_master
from tests.databases import upgraded
from tests.faults import DIED, REFRESH, python_dying_at
from tests.orchestration.dagster_runs import kill_refresh_when_dbt_logs, step_errors
from tests.sources.landing_edits import (
    add_price_day,
    add_split_mid_history,
    file_13f_with_cover_total_off,
    file_form4_and_amend_another,
    next_session,
    reclassify_issuer,
    restate_13f_report,
    restate_bar_and_remove_the_next,
    restate_latest_annual_revenue,
)

#: a GICS sector no demo issuer has, so every bar that carries it was relabelled
RECLASSIFIED_SECTOR = "Reclassified Sector"


@dataclass
class Snapshot:
    """The control plane after a step."""

    versions: list[dict[str, Any]]
    records: list[dict[str, Any]]
    events: list[dict[str, Any]]


@dataclass
class Steps:
    """Each step's refresh outcome and the control plane after it."""

    home: Path
    outcomes: dict[str, RefreshOutcome] = field(default_factory=dict)
    snapshots: dict[str, Snapshot] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)

    def new_records(self, step: str, before: str) -> list[dict[str, Any]]:
        seen = {r["id"] for r in self.snapshots[before].records}
        return [r for r in self.snapshots[step].records if r["id"] not in seen]

    def new_events(self, step: str, before: str) -> list[dict[str, Any]]:
        seen = {e["id"] for e in self.snapshots[before].events}
        return [e for e in self.snapshots[step].events if e["id"] not in seen]


def _snapshot(settings: Settings) -> Snapshot:
    engine = engine_for(settings.control_plane_url)
    with engine.connect() as connection:

        def rows(table: sa.Table) -> list[dict[str, Any]]:
            return [
                dict(r._mapping) for r in connection.execute(sa.select(table).order_by(table.c.id))
            ]

        return Snapshot(rows(schema.versions), rows(schema.change_records), rows(schema.events))


def _current_parts(settings: Settings) -> set[str]:
    """The part files the current version reads."""
    current = current_version_at(settings.control_plane_url)
    assert current is not None
    with duckdb.connect() as con:
        attach_version(con, settings.published_dir / current.file_name, "current")
        return set(version_part_files(con, "current"))


def _recomputed(settings: Settings, fingerprinted: str) -> tuple[list[Any], int]:
    """The keys an incremental mart's last build recomputed (its fingerprint model's rows
    marked is_rebuilt), and how many keys there are."""
    with duckdb.connect(str(settings.warehouse_path), read_only=True) as con:
        rows = con.execute(
            f"SELECT * EXCLUDE (inputs_print) FROM intermediate.{fingerprinted} ORDER BY 1"
        ).fetchall()
    return [key for key, rebuilt in rows if rebuilt], len(rows)


def _fundamentals_recomputed(settings: Settings) -> tuple[list[Any], int]:
    return _recomputed(settings, "int_fundamentals_issuers_fingerprinted")


def _holdings_recomputed(settings: Settings) -> tuple[list[Any], int]:
    return _recomputed(settings, "int_form13f_filings_fingerprinted")


def _check_evaluations(run_id: str | None) -> list[tuple[str, str, bool, set[str]]]:
    """The asset check results of a run: asset, check, passed, metadata keys."""
    if run_id is None:
        return []
    import dagster as dg

    with dg.DagsterInstance.get() as instance:
        events = instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)
    evaluations = [e.dagster_event.asset_check_evaluation_data for e in events if e.dagster_event]
    return [
        (e.asset_key.to_user_string(), e.check_name, e.passed, set(e.metadata)) for e in evaluations
    ]


def _check_severities(run_id: str | None) -> dict[tuple[str, str], tuple[bool, str, Any]]:
    """Per (asset, check) of a run: passed, the result's severity, and its failures metadata."""
    import dagster as dg

    with dg.DagsterInstance.get() as instance:
        events = instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)
    evaluations = [e.dagster_event.asset_check_evaluation_data for e in events if e.dagster_event]
    return {
        (e.asset_key.to_user_string(), e.check_name): (
            e.passed,
            e.severity.value,
            e.metadata["failures"].value if "failures" in e.metadata else None,
        )
        for e in evaluations
    }


UNCHANGED_MARTS_FAILED = "the marts left as built failed to load (test)"


def _failing_after_one(unchanged_marts: Any) -> Any:
    """``_unchanged_marts`` that fails after its first output."""

    def failing(*args: Any, **kwargs: Any) -> Any:
        marts = unchanged_marts(*args, **kwargs)
        yield next(marts)
        raise RuntimeError(UNCHANGED_MARTS_FAILED)

    return failing


def _warehouse_free(settings: Settings) -> bool:
    """Nothing holds the build warehouse (a dbt build still running in the dbt worker would):
    this process can open it for writing."""
    try:
        duckdb.connect(str(settings.warehouse_path)).close()
    except duckdb.IOException:
        return False
    return True


def _dbt_tests_run(settings: Settings) -> dict[str, str]:
    """The dbt tests the last dbt build ran, with their statuses (its ``run_results.json``)."""
    run_results = json.loads((build_target(settings) / "run_results.json").read_text())
    return {
        r["unique_id"].split(".")[2]: r["status"]
        for r in run_results["results"]
        if r["unique_id"].startswith("test.")
    }


@pytest.fixture(scope="module")
def steps(two_week_old_demo: PublishedDemo, tmp_path_factory: pytest.TempPathFactory) -> Steps:
    # a copy of the demo that ends two weeks ago, so that the trading days the steps add are not
    # in the future (the prices contract refuses dates after today)
    home = two_week_old_demo.copy_to(tmp_path_factory.mktemp("pipeline") / "home")
    scenarios = two_week_old_demo.scenarios
    master = read_security_master(home / "landing/security_master/security_master.csv")
    result = Steps(home)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FINDATA_HOME", str(home))
        patch.setenv("DAGSTER_HOME", str(home / "dagster"))
        settings = get_settings()
        landing = settings.landing_dir

        def step(name: str, *, force: bool = False, run_when_unchanged: bool = False) -> None:
            result.outcomes[name] = run_refresh(
                settings, force=force, run_when_unchanged=run_when_unchanged
            )
            result.snapshots[name] = _snapshot(settings)
            result.facts[f"record_after_{name}"] = last_built(settings)
            result.facts[f"parts_after_{name}"] = _current_parts(settings)
            result.facts[f"checks_of_{name}"] = _check_evaluations(result.outcomes[name].run_id)

        result.outcomes["first"] = two_week_old_demo.first
        result.snapshots["first"] = _snapshot(settings)
        result.facts["parts_after_first"] = _current_parts(settings)
        step("unchanged")  # starts no run: nothing a build reads changed
        step("unchanged_run", run_when_unchanged=True)  # the run stops at its first step
        step("forced", force=True)  # builds all the same, and finds nothing to publish
        result.facts["fundamentals_after_forced"] = _fundamentals_recomputed(settings)
        result.facts["holdings_after_forced"] = _holdings_recomputed(settings)

        as_of = dt.date.fromisoformat(scenarios["as_of"])
        day = next_session(as_of)
        gainers = [
            scenarios["plain"]["entity_id"],
            *scenarios["share_classes"]["security_entity_ids"],
        ]
        add_price_day(landing, day, gainers)
        result.facts.update(day=day, day_before=as_of, gainers=gainers)
        step("one_day")
        result.facts["dbt_tests_of_one_day"] = _dbt_tests_run(settings)

        row = master[master["ticker"] == scenarios["plain"]["ticker"]].iloc[0]
        period_end, accession = restate_latest_annual_revenue(landing, row["cik"].zfill(10), as_of)
        result.facts.update(
            issuer=int(row["issuer_entity_id"]), period_end=period_end, accession=accession
        )
        step("restated")
        result.facts["fundamentals_after_restated"] = _fundamentals_recomputed(settings)

        # every bar of a security carries its sector: an issuer moved to another one relabels
        # the whole history of its securities (the prices mart compares their every year)
        delisted = master[master["entity_id"] == scenarios["delisted"]["entity_id"]].iloc[0]
        result.facts["reclassified"] = reclassify_issuer(
            landing, int(delisted["issuer_entity_id"]), RECLASSIFIED_SECTOR
        )
        step("reclassified")
        result.facts["fundamentals_after_reclassified"] = _fundamentals_recomputed(settings)
        result.facts["holdings_after_reclassified"] = _holdings_recomputed(settings)

        # the insider transactions mart is incremental by filing: a new Form 4 and one changed
        # in place recompute those two filings
        result.facts["form4_filed"] = file_form4_and_amend_another(landing)
        step("form4_filed")
        result.facts["insider_after_form4_filed"] = _recomputed(
            settings, "int_form4_filings_fingerprinted"
        )

        # the holdings mart is incremental by filing: a restatement recomputes every filing of
        # its manager's quarter (the report it replaces is no longer current)
        result.facts["form13f_restated"] = restate_13f_report(landing)
        step("form13f_restated")
        result.facts["holdings_after_form13f_restated"] = _holdings_recomputed(settings)

        # a 13F whose cover total is more than rounding away from its rows: a warning-level
        # contract rule, reported (WARN) without stopping the publish; that filing recomputed
        result.facts["cover_total_off"] = file_13f_with_cover_total_off(landing)
        step("cover_total_off")
        result.facts["holdings_after_cover_total_off"] = _holdings_recomputed(settings)
        result.facts["severities_of_cover_total_off"] = _check_severities(
            result.outcomes["cover_total_off"].run_id
        )

        # the prices mart is incremental: a split landed late for an earlier date re-adjusts
        # every bar of that security before it; a restated bar (and the next one removed)
        # rebuilds that security from the restated date on
        split_entity = scenarios["plain"]["entity_id"]
        result.facts.update(
            split_entity=split_entity, split_day=add_split_mid_history(landing, split_entity)
        )
        step("split_added")
        restated_entity = scenarios["share_classes"]["security_entity_ids"][0]
        result.facts.update(
            restated_entity=restated_entity,
            restated_days=restate_bar_and_remove_the_next(landing, restated_entity),
        )
        # first a run whose dbt step fails as it yields the marts left as built, before dbt
        # runs: nothing is published, nothing holds the warehouse
        with pytest.MonkeyPatch.context() as failing:
            failing.setattr(
                dbt_assets_module,
                "_unchanged_marts",
                _failing_after_one(dbt_assets_module._unchanged_marts),
            )
            step("failed_before_dbt_output")
        result.facts["warehouse_free_after_failure"] = _warehouse_free(settings)
        result.facts["failed_step_errors"] = step_errors(
            str(result.outcomes["failed_before_dbt_output"].run_id)
        )
        # then killed (SIGKILL to its process group) while dbt rebuilds the prices mart
        # incrementally, just as its pre-hook deletes the bars to rebuild; then run again
        result.facts["killed_in_dbt"] = kill_refresh_when_dbt_logs(
            settings, b"using prices_rebuild_scope"
        )
        result.facts["current_after_kill"] = current_version_at(settings.control_plane_url)
        result.snapshots["killed_in_dbt"] = _snapshot(settings)
        step("bar_restated")

        # the same landing built from nothing in a home of its own: what the refreshes after
        # each change published must be exactly what a full rebuild publishes
        rebuilt_home = tmp_path_factory.mktemp("pipeline-rebuilt") / "home"
        shutil.copytree(landing, rebuilt_home / "landing")
        patch.setenv("FINDATA_HOME", str(rebuilt_home))
        patch.setenv("DAGSTER_HOME", str(rebuilt_home / "dagster"))
        upgraded(get_settings().control_plane_url)
        rebuilt = run_refresh(get_settings())
        result.facts["rebuilt"] = rebuilt_home / "published" / f"{rebuilt.version}.duckdb"
        patch.setenv("FINDATA_HOME", str(home))
        patch.setenv("DAGSTER_HOME", str(home / "dagster"))

        bad = landing / "prices" / "prices_bad.csv"
        bad.write_text(
            "entity_id,ticker,date,open,high,low,close,volume\n"
            f"{gainers[0]},X,{day.isoformat()},10,9,11,10,100\n"
        )
        step("high_below_low")
        bad.unlink()

        future = (as_of + dt.timedelta(days=400)).isoformat()
        bad.write_text(
            "entity_id,ticker,date,open,high,low,close,volume\n"
            f"{gainers[0]},X,{future},10,11,9,10,100\n"
        )
        step("future_date")
        bad.unlink()

        # a refresh killed after writing its version file, before the commit; then again
        add_price_day(landing, next_session(day), gainers[:1])
        # (dies as it starts writing the version's row: its file is in place, nothing committed)
        crashed = subprocess.run(
            python_dying_at("findata.published.publish:_insert_records", REFRESH),
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        result.facts.update(
            crash_returncode=crashed.returncode,
            files_after_crash=sorted(p.name for p in settings.published_dir.glob("*.duckdb")),
        )
        result.snapshots["crashed"] = _snapshot(settings)
        step("after_crash")
    return result


def test_first_refresh_publishes_a_version_with_records_and_one_event(steps: Steps) -> None:
    outcome = steps.outcomes["first"]
    assert outcome.success and outcome.version is not None
    snapshot = steps.snapshots["first"]
    assert [v["label"] for v in snapshot.versions] == [outcome.version]
    # every dataset's data_through is recorded, as its contract says how to find it
    through = snapshot.versions[0]["data_through"]
    assert set(through) == set(dataset_names()) and None not in through.values()
    assert through["ticker_history"] == through["entities"] == through["prices"]
    assert len(snapshot.records) == outcome.records > 0
    assert len(snapshot.events) == 1
    event = snapshot.events[0]["payload"]
    assert event["type"] == "data.changed" and event["run_id"] == outcome.run_id
    assert [d["dataset"] for d in event["datasets"]] == sorted(
        d["dataset"] for d in event["datasets"]
    )
    assert (steps.home / "published" / f"{outcome.version}.duckdb").exists()


def test_unchanged_landing_publishes_nothing(steps: Steps) -> None:
    for step in ("unchanged", "unchanged_run", "forced"):
        outcome = steps.outcomes[step]
        assert outcome.success and outcome.version is None
        assert steps.new_records(step, "first") == []
        assert steps.new_events(step, "first") == []
        assert len(steps.snapshots[step].versions) == 1


def test_a_refresh_with_nothing_new_stops_before_any_work_and_says_so(steps: Steps) -> None:
    first = steps.outcomes["first"].version
    assert steps.outcomes["unchanged"].unchanged_since == first
    assert steps.outcomes["unchanged"].run_id is None
    assert steps.facts["record_after_unchanged"].version == first
    # the same through Dagster (as the schedule and the UI run it): its first step says so
    assert steps.outcomes["unchanged_run"].unchanged_since == first
    assert steps.outcomes["unchanged_run"].run_id is not None
    assert steps.facts["record_after_unchanged_run"].version == first
    # forced, it builds (and records the build); every other step built as its landing changed
    assert steps.outcomes["forced"].unchanged_since is None
    assert steps.facts["record_after_forced"].version == first
    built = ("one_day", "restated", "split_added", "bar_restated")
    assert all(steps.outcomes[s].unchanged_since is None for s in built)
    assert all(steps.facts[f"record_after_{s}"].version == steps.outcomes[s].version for s in built)
    # a failed run leaves no record: the warehouse it changed is built again next time
    assert steps.facts["record_after_high_below_low"] is None


def test_the_refreshes_publish_exactly_what_a_full_rebuild_of_the_same_landing_does(
    steps: Steps,
) -> None:
    """Four refreshes after changes (raw sources kept, dbt models of unchanged sources left,
    prices rebuilt incrementally, unchanged marts not checked again, the diff skipped for
    unchanged datasets) against one build from nothing: every table, every row and column."""
    last = steps.home / "published" / f"{steps.outcomes['bar_restated'].version}.duckdb"
    assert published_differences(last, steps.facts["rebuilt"]) == []


def test_a_split_landed_for_an_earlier_date_re_adjusts_that_security_before_it(
    steps: Steps,
) -> None:
    records = steps.new_records("split_added", "reclassified")
    prices = [r for r in records if r["dataset"] == "prices"]
    assert [int(r["entity"]) for r in prices] == [steps.facts["split_entity"]]
    version = steps.snapshots["split_added"].versions[-1]["file_name"]
    with open_version(steps.home / "published" / version) as con:
        (first,) = con.execute(
            "SELECT min(date) FROM prices WHERE entity_id = ?", [steps.facts["split_entity"]]
        ).fetchone()
    assert (prices[0]["start"], prices[0]["end"]) == (first, steps.facts["split_day"])


def test_an_issuer_moved_to_another_sector_relabels_every_bar_of_its_securities(
    steps: Steps,
) -> None:
    records = steps.new_records("reclassified", "restated")
    prices = [r for r in records if r["dataset"] == "prices"]
    assert sorted(int(r["entity"]) for r in prices) == steps.facts["reclassified"]
    version = steps.snapshots["reclassified"].versions[-1]["file_name"]
    with open_version(steps.home / "published" / version) as con:
        sectors = con.execute(
            "SELECT DISTINCT gics_sector FROM prices WHERE list_contains(?, entity_id)",
            [steps.facts["reclassified"]],
        ).fetchall()
    assert sectors == [(RECLASSIFIED_SECTOR,)]


def test_a_restated_bar_changes_that_security_from_its_date(steps: Steps) -> None:
    records = steps.new_records("bar_restated", "split_added")
    prices = [r for r in records if r["dataset"] == "prices"]
    assert [int(r["entity"]) for r in prices] == [steps.facts["restated_entity"]]
    restated, removed = steps.facts["restated_days"]
    # the restated bar, the removed one, and the bar after it (its return reads a new close)
    assert prices[0]["start"] == restated and prices[0]["end"] > removed
    assert prices[0]["rows"] == 3


def test_the_checks_of_marts_that_did_not_change_are_not_run_again(steps: Steps) -> None:
    """A mart whose rows are the current version's, built by the same code and contracts,
    passed its contract when that version was built; a forced build, or one after a failed run,
    checks every mart."""
    one_day = set(steps.outcomes["one_day"].unchanged_marts)
    assert "prices" not in one_day
    assert {"insider_transactions", "institutional_holdings", "managers"} <= one_day
    restated = set(steps.outcomes["restated"].unchanged_marts)
    assert "fundamentals" not in restated and "prices" in restated
    assert steps.outcomes["forced"].unchanged_marts == []
    assert steps.outcomes["future_date"].unchanged_marts == []


def test_a_partial_build_runs_the_dbt_tests_of_what_it_rebuilt(steps: Steps) -> None:
    """dbt's tests run in ``dbt build``, not as Dagster checks: a one-day build runs the tests
    of the models it rebuilt, with a relationship of a rebuilt model to a mart left as built
    (cautious selection), and not the tests of marts the day's bars do not reach."""
    ran = steps.facts["dbt_tests_of_one_day"]
    assert ran and set(ran.values()) == {"pass"}
    assert any(name.startswith("relationships_prices_entity_id_") for name in ran)
    # entities is rebuilt (its listing dates read prices): a relationship to it ran
    assert "entities" not in steps.outcomes["one_day"].unchanged_marts
    assert "relationships_insider_transactions_entity_id__entity_id__ref_entities_" in ran
    assert "unique_managers_cik" not in ran
    # the run's only asset checks are the data contracts
    assert {c for _, c, _, _ in steps.facts["checks_of_one_day"]} == {"data_contract"}


def test_a_mart_that_changed_is_checked_on_the_rows_it_changed(steps: Steps) -> None:
    """The day's new bars, not the whole history; a forced build checks every row."""
    one_day = steps.outcomes["one_day"].changed_rows_checked
    assert one_day["prices"] == len(steps.facts["gainers"])
    assert steps.outcomes["forced"].changed_rows_checked == {}
    # the split security's bars up to its split day (re-adjusted), nothing else
    version = steps.snapshots["split_added"].versions[-1]["file_name"]
    with open_version(steps.home / "published" / version) as con:
        (re_adjusted,) = con.execute(
            "SELECT count(*) FROM prices WHERE entity_id = ? AND date <= ?",
            [steps.facts["split_entity"], steps.facts["split_day"]],
        ).fetchone()
    # (the outcomes in the message: a step before it that failed makes this one check all)
    split_added = steps.outcomes["split_added"]
    before = {name: (o.success, o.version) for name, o in steps.outcomes.items()}
    assert split_added.changed_rows_checked.get("prices") == re_adjusted, (split_added, before)
    # after a killed run every row is checked again
    assert steps.outcomes["bar_restated"].changed_rows_checked == {}


def test_incremental_marts_are_fingerprinted_checked_and_diffed_on_their_rebuilt_rows(
    steps: Steps,
) -> None:
    """After a build that made the current version, an incremental mart's check and publish
    read the rows its build recomputed (kept as <mart>__rebuilt), not the whole mart: the
    day's bars; the filings a Form 4, a 13F or a restating 10-K/A recomputed. A forced build,
    and the one after a killed run, scan every mart. The records they give are the exact ones
    (the tests above; the published rows equal a full rebuild's)."""
    one_day = steps.outcomes["one_day"]
    assert one_day.checked_from_rebuilt_rows == ["prices"]
    assert one_day.published_from_rebuilt_rows == ["prices"]
    for step, mart in [
        ("restated", "fundamentals"),
        ("form4_filed", "insider_transactions"),
        ("form13f_restated", "institutional_holdings"),
        ("split_added", "prices"),
    ]:
        outcome = steps.outcomes[step]
        assert mart in outcome.checked_from_rebuilt_rows, (step, outcome)
        assert mart in outcome.published_from_rebuilt_rows, (step, outcome)
    for step in ("forced", "bar_restated"):
        outcome = steps.outcomes[step]
        assert outcome.checked_from_rebuilt_rows == [], (step, outcome)
        assert outcome.published_from_rebuilt_rows == [], (step, outcome)


def test_one_more_trading_day_changes_exactly_the_securities_that_gained_a_row(
    steps: Steps,
) -> None:
    day = steps.facts["day"]
    records = steps.new_records("one_day", "unchanged")
    prices = [r for r in records if r["dataset"] == "prices"]
    assert sorted(int(r["entity"]) for r in prices) == sorted(steps.facts["gainers"])
    assert all(r["start"] == r["end"] == day and r["rows"] == 1 for r in prices)
    other = {(r["dataset"], r["entity"]) for r in records if r["dataset"] != "prices"}
    gainers = {str(e) for e in steps.facts["gainers"]}
    assert all(entity in gainers for _, entity in other), other
    assert len(steps.new_events("one_day", "unchanged")) == 1


def test_a_version_shares_every_part_it_did_not_change(steps: Steps) -> None:
    """One more trading day writes again the parts of the datasets it changed (this year's
    prices, not their history, unless the day opens a new year: then the split moves and both
    prices parts are new): the new version reads every other part from the files the version
    before it reads."""
    before, after = steps.facts["parts_after_unchanged"], steps.facts["parts_after_one_day"]
    assert steps.facts["parts_after_first"] == before
    written = {tuple(Path(p).name.split("__")[:2]) for p in after - before}
    changed = {r["dataset"] for r in steps.new_records("one_day", "unchanged")}
    assert {dataset for dataset, _ in written} == changed
    new_year = steps.facts["day"].year != steps.facts["day_before"].year
    assert ("prices", "recent") in written
    assert (("prices", "history") in written) == new_year
    assert len(after - before) == len(before - after) == len(written)


def test_a_restating_filing_changes_that_issuer_only_and_keeps_the_old_figures(
    steps: Steps,
) -> None:
    records = steps.new_records("restated", "one_day")
    datasets = {r["dataset"] for r in records}
    assert "fundamentals" in datasets
    assert {r["entity"] for r in records} == {str(steps.facts["issuer"])}
    version = steps.snapshots["restated"].versions[-1]["file_name"]
    with open_version(steps.home / "published" / version) as con:
        rows = con.execute(
            "SELECT accession, known_from FROM fundamentals WHERE issuer_entity_id = ? "
            "AND period_end = ? AND period_type = 'annual' ORDER BY known_from",
            [steps.facts["issuer"], steps.facts["period_end"]],
        ).fetchall()
    assert len(rows) >= 2 and rows[-1][0] == steps.facts["accession"]


def test_fundamentals_are_recomputed_for_the_issuers_whose_filings_changed_alone(
    steps: Steps,
) -> None:
    # a forced build recomputes every issuer; a restating filing its issuer alone (the
    # published rows equal a full rebuild's: test_the_refreshes_publish_exactly_...); a sector
    # moved in the security master changes no issuer's CIKs or filings: none
    recomputed, issuers = steps.facts["fundamentals_after_forced"]
    assert issuers > 10 and len(recomputed) == issuers
    assert steps.facts["fundamentals_after_restated"] == ([steps.facts["issuer"]], issuers)
    assert steps.facts["fundamentals_after_reclassified"] == ([], issuers)


def test_insider_transactions_are_recomputed_for_the_filings_that_changed_alone(
    steps: Steps,
) -> None:
    new, changed = steps.facts["form4_filed"]
    assert steps.outcomes["form4_filed"].success, steps.outcomes["form4_filed"]
    recomputed, filings = steps.facts["insider_after_form4_filed"]
    assert sorted(recomputed) == sorted([new, changed]) and filings > 10
    records = steps.new_records("form4_filed", "reclassified")
    assert {r["dataset"] for r in records} == {"insider_transactions"}
    version = steps.snapshots["form4_filed"].versions[-1]["file_name"]
    with open_version(steps.home / "published" / version) as con:
        filed = con.execute(
            "SELECT count(*) FROM insider_transactions WHERE document_id = ?", [new]
        ).fetchall()
    assert filed[0][0] >= 1


def test_holdings_are_recomputed_for_the_quarters_whose_filings_changed_alone(
    steps: Steps,
) -> None:
    # a forced build recomputes every filing; a sector move changes no filing's inputs (the
    # tickers its CUSIPs are labelled with are the same); a restatement recomputes itself and
    # the report of its manager's quarter it supersedes
    recomputed, filings = steps.facts["holdings_after_forced"]
    assert filings > 10 and len(recomputed) == filings
    assert steps.facts["holdings_after_reclassified"] == ([], filings)
    new, restated = steps.facts["form13f_restated"]
    assert steps.outcomes["form13f_restated"].success, steps.outcomes["form13f_restated"]
    assert steps.facts["holdings_after_form13f_restated"] == (sorted([restated, new]), filings + 1)
    records = steps.new_records("form13f_restated", "form4_filed")
    assert "institutional_holdings" in {r["dataset"] for r in records}
    assert {r["dataset"] for r in records} <= {"institutional_holdings", "managers"}
    version = steps.snapshots["form13f_restated"].versions[-1]["file_name"]
    with open_version(steps.home / "published" / version) as con:
        current = dict(
            con.execute(
                "SELECT accession, bool_and(is_current) FROM institutional_holdings "
                "WHERE accession IN (SELECT unnest(?)) GROUP BY accession",
                [[restated, new]],
            ).fetchall()
        )
    assert current == {restated: False, new: True}


def test_a_cover_total_rounding_does_not_explain_warns_and_publishes(steps: Steps) -> None:
    """The filing's rows are published as filed with the difference recorded; its mart's
    contract check fails with WARN severity (the warning-level rule), which does not block the
    publish; nothing else is recomputed or warned about."""
    outcome, accession = steps.outcomes["cover_total_off"], steps.facts["cover_total_off"]
    assert outcome.success and outcome.version is not None, outcome
    assert outcome.failed_checks == []
    assert outcome.warned_checks == ["marts/institutional_holdings:data_contract"]
    passed, severity, failures = steps.facts["severities_of_cover_total_off"][
        ("marts/institutional_holdings", "data_contract")
    ]
    assert (passed, severity) == (False, "WARN")
    (failure,) = failures
    assert failure == {
        "expectation": "expect_column_values_to_be_in_set",
        "columns": ["cover_total_status"],
        "summary": failure["summary"],
        "rule": "allowed",
        "severity": "warning",
    }
    # the filing's 278 rows, alone: the check read the rows the build changed
    assert failure["summary"].startswith("278 unexpected of 278 rows; e.g. 'mismatch'")
    others = {k: v for k, v in steps.facts["severities_of_cover_total_off"].items() if not v[0]}
    assert list(others) == [("marts/institutional_holdings", "data_contract")]
    _, before = steps.facts["holdings_after_form13f_restated"]
    assert steps.facts["holdings_after_cover_total_off"] == ([accession], before + 1)
    version = steps.snapshots["cover_total_off"].versions[-1]["file_name"]
    with open_version(steps.home / "published" / version) as con:
        rows = con.execute(
            "SELECT count(*), sum(value_usd), min(cover_value_difference_usd), "
            "max(cover_value_difference_usd), max(cover_value_difference_ratio), "
            "list(DISTINCT cover_total_status) FROM institutional_holdings WHERE accession = ?",
            [accession],
        ).fetchone()
        elsewhere = con.execute(
            "SELECT list(DISTINCT cover_total_status) FROM institutional_holdings "
            "WHERE accession <> ?",
            [accession],
        ).fetchone()
    assert rows == (
        278,
        1_129_298_000,
        1_000_000,
        1_000_000,
        1_000_000 / 1_130_298_000,
        ["mismatch"],
    )
    assert elsewhere == (["equal"],)  # the demo's covers add up


@pytest.mark.parametrize("step", ["high_below_low", "future_date"])
def test_a_bad_landing_file_publishes_nothing(steps: Steps, step: str) -> None:
    assert not steps.outcomes[step].success
    before = steps.snapshots["bar_restated"]
    after = steps.snapshots[step]
    assert (len(after.versions), len(after.records), len(after.events)) == (
        len(before.versions),
        len(before.records),
        len(before.events),
    )


def test_the_future_dated_row_fails_the_prices_contract_check(steps: Steps) -> None:
    assert any("prices" in name for name in steps.outcomes["future_date"].failed_checks)


def test_a_refresh_killed_in_the_incremental_dbt_step_leaves_the_version_and_reruns(
    steps: Steps,
) -> None:
    """Killed while dbt deleted the prices bars it was about to rebuild: the current version is
    the one before, nothing was recorded; the next refresh publishes the change, and the
    sequence's last version equals a full rebuild (test above)."""
    assert steps.facts["killed_in_dbt"]
    before, killed = steps.snapshots["split_added"], steps.snapshots["killed_in_dbt"]
    assert (killed.versions, killed.records, killed.events) == (
        before.versions,
        before.records,
        before.events,
    )
    assert steps.facts["current_after_kill"].label == steps.outcomes["split_added"].version
    assert steps.outcomes["bar_restated"].success
    assert [
        int(r["entity"])
        for r in steps.new_records("bar_restated", "killed_in_dbt")
        if r["dataset"] == "prices"
    ] == [steps.facts["restated_entity"]]


def test_a_dbt_step_failing_before_dbt_runs_publishes_nothing(steps: Steps) -> None:
    """A failure as the step yields the marts left as built publishes nothing and leaves the
    warehouse free (dbt runs in the step's process and closes the file after each command);
    the refreshes after it build the change (the killed one's test above)."""
    outcome = steps.outcomes["failed_before_dbt_output"]
    assert not outcome.success and outcome.version is None
    assert UNCHANGED_MARTS_FAILED in steps.facts["failed_step_errors"]["dbt_models"]
    assert steps.facts["warehouse_free_after_failure"]
    before, failed = steps.snapshots["split_added"], steps.snapshots["failed_before_dbt_output"]
    assert (failed.versions, failed.records, failed.events) == (
        before.versions,
        before.records,
        before.events,
    )


def test_a_crash_before_the_commit_then_a_rerun_publishes_exactly_once(steps: Steps) -> None:
    assert steps.facts["crash_returncode"] == DIED
    crashed, before = steps.snapshots["crashed"], steps.snapshots["bar_restated"]
    assert len(crashed.versions) == len(before.versions)  # the crashed version is not current
    assert len(crashed.records) == len(before.records)
    after = steps.snapshots["after_crash"]
    assert steps.outcomes["after_crash"].success
    assert len(after.versions) == len(before.versions) + 1
    records = steps.new_records("after_crash", "crashed")
    prices = [r for r in records if r["dataset"] == "prices"]
    assert [int(r["entity"]) for r in prices] == steps.facts["gainers"][:1]
    assert len(steps.new_events("after_crash", "crashed")) == 1
    files = sorted(p.name for p in (steps.home / "published").glob("*.duckdb"))
    assert files == sorted(v["file_name"] for v in after.versions)
    # the parts the crashed publish wrote are the rerun's, written once: every part on disk
    # is read by a version on disk
    read: set[str] = set()
    with duckdb.connect() as con:
        for n, name in enumerate(files):
            attach_version(con, steps.home / "published" / name, f"v{n}")
            read.update(version_part_files(con, f"v{n}"))
    on_disk = {f"parts/{p.name}" for p in (steps.home / "published" / "parts").iterdir()}
    assert on_disk == read
