"""Dataset contracts as Great Expectations suites: each rule passes, each rule fails by name."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from findata.contracts.datasets import DatasetContract, dataset_names, load_dataset_contract
from findata.orchestration.checks.frames import read_frame
from findata.orchestration.checks.suite import ordered_pairs, row_count_floor
from findata.orchestration.checks.unchanged import compare_with_version
from findata.orchestration.checks.warehouse import contracted_marts
from findata.orchestration.contract_checks import (
    ContractCheckResult,
    build_suite,
    check_dataset,
    check_mart,
    run_contract_checks,
    write_data_docs,
)
from findata.published.parts import (
    plan_parts,
    write_missing_parts,
    write_version_file,
)

TODAY = dt.date(2026, 11, 20)
PAIR = "expect_column_pair_values_a_to_be_greater_than_b"
BETWEEN = "expect_column_values_to_be_between"
NOT_NULL = "expect_column_values_to_not_be_null"


@pytest.fixture(scope="module")
def prices() -> DatasetContract:
    return load_dataset_contract("prices")


def raw_prices() -> pd.DataFrame:
    """Two securities over three sessions, every prices rule satisfied (values untyped)."""
    rows = []
    for entity_id, ticker, name, sector, exchange in [
        (101, "AAA", "Alpha Corp", "Industrials", "XNYS"),
        (102, "BBB", "Beta Inc", None, "XNAS"),
    ]:
        for i, day in enumerate(["2026-11-16", "2026-11-17", "2026-11-18"]):
            close = 10.0 + i
            rows.append(
                {
                    "entity_id": entity_id,
                    "ticker": ticker,
                    "entity_name": name,
                    "gics_sector": sector,
                    "date": day,
                    "price_basis": "trade",
                    "open": close - 0.5,
                    "high": close + 1.0,
                    "low": close - 1.0,
                    "close": close,
                    "adj_close": close,
                    "volume": 1000 * (i + 1),
                    "shares_outstanding": None if i == 0 else 5_000_000,
                    "return_daily": None if i == 0 else 0.1,
                    "split_ratio": 1.0,
                    "split_factor": 1.0,
                    "dividend": 0.25 if i == 2 else 0.0,
                    "market_cap": None if i == 0 else close * 5_000_000,
                    "exchange_code": exchange,
                }
            )
    return pd.DataFrame(rows)


def as_mart(raw: pd.DataFrame, contract: DatasetContract) -> pd.DataFrame:
    """``raw`` cast to the contract's DuckDB types and read back as DuckDB hands a mart over.

    Columns not in the contract are kept (cast by DuckDB's inference), so a wrong frame stays
    wrong.
    """
    types = {c.name: c.type for c in contract.columns}
    select = ", ".join(
        f'cast("{name}" as {types[name]}) as "{name}"' if name in types else f'"{name}"'
        for name in raw.columns
    )
    with duckdb.connect() as con:
        con.register("raw", raw.astype(object).where(raw.notna(), None))
        return read_frame(con, f"select {select} from raw")


def check(
    frame: pd.DataFrame,
    contract: DatasetContract,
    previous_rows: int | None = None,
) -> ContractCheckResult:
    return check_dataset(frame, contract, today=TODAY, previous_rows=previous_rows)


def failed(result: ContractCheckResult) -> set[tuple[str, tuple[str, ...]]]:
    return {(f.expectation, f.columns) for f in result.failures}


# --- the suite itself ---------------------------------------------------------------------


def test_suite_is_derived_from_the_contract(prices: DatasetContract) -> None:
    suite = build_suite(prices, today=TODAY, previous_rows=1000)
    assert suite.name == "prices"
    by_rule: dict[str, list] = {}
    for expectation in suite.expectations:
        by_rule.setdefault(expectation.meta["rule"], []).append(expectation)
    assert by_rule["columns"][0].column_list == prices.column_names
    assert [e.column for e in by_rule["type"]] == prices.column_names
    assert {e.column for e in by_rule["not_null"]} == {
        c.name for c in prices.columns if not c.nullable
    }
    (key,) = by_rule["key"]
    assert key.expectation_type == "expect_compound_columns_to_be_unique"
    assert key.column_list == prices.key
    # [low, open, high] and [low, close, high]: every pair, the shared (low, high) once.
    assert sorted((e.column_B, e.column_A) for e in by_rule["ordered"]) == sorted(
        {("low", "open"), ("low", "high"), ("open", "high"), ("low", "close"), ("close", "high")}
    )
    assert all(
        e.or_equal and e.ignore_row_if == "either_value_is_missing" for e in by_rule["ordered"]
    )
    assert {e.column for e in by_rule["positive"]} == set(prices.checks.positive)
    assert all(e.strict_min and e.min_value == 0 for e in by_rule["positive"])
    assert {e.column for e in by_rule["non_negative"]} == set(prices.checks.non_negative)
    assert all(not e.strict_min and e.min_value == 0 for e in by_rule["non_negative"])
    (allowed,) = by_rule["allowed"]
    assert (allowed.column, list(allowed.value_set)) == ("price_basis", ["trade"])
    (dates,) = by_rule["date_range"]
    assert dates.column == "date"
    assert (dates.min_value, dates.max_value) == (
        dt.datetime(1900, 1, 1),
        dt.datetime(2026, 11, 20),
    )
    (count,) = by_rule["row_count_min_ratio"]
    assert count.min_value == 900


def test_no_row_count_expectation_without_a_previous_version(prices: DatasetContract) -> None:
    suite = build_suite(prices, today=TODAY, previous_rows=None)
    assert "expect_table_row_count_to_be_between" not in {
        e.expectation_type for e in suite.expectations
    }


def test_row_count_floor_is_exact() -> None:
    assert row_count_floor(10, 0.9) == 9
    assert row_count_floor(11, 0.9) == 10  # 9.9 rows: at least 10
    assert row_count_floor(0, 0.9) == 0
    assert row_count_floor(13_700_000, 0.9) == 12_330_000


def test_ordered_chain_checks_every_pair() -> None:
    assert ordered_pairs(["a", "b", "c"]) == [("a", "b"), ("a", "c"), ("b", "c")]


# --- a good frame passes, each broken rule fails by name ---------------------------------


def test_good_prices_pass(prices: DatasetContract) -> None:
    frame = as_mart(raw_prices(), prices)
    assert str(frame["shares_outstanding"].dtype) == "Int64"  # nullable BIGINT, as DuckDB gives it
    result = check(frame, prices, previous_rows=6)
    assert result.success, result.failures
    assert (result.dataset, result.row_count, result.failures) == ("prices", 6, ())
    statistics = result.validation["statistics"]
    assert statistics["unsuccessful_expectations"] == 0
    assert statistics["evaluated_expectations"] == len(result.suite["expectations"])


def test_duplicate_key_fails(prices: DatasetContract) -> None:
    raw = raw_prices()
    raw = pd.concat([raw, raw.iloc[[1]]], ignore_index=True)
    result = check(as_mart(raw, prices), prices)
    assert failed(result) == {("expect_compound_columns_to_be_unique", ("entity_id", "date"))}
    assert (
        result.failures[0].summary == "2 unexpected of 7 rows; e.g. [101, '2026-11-17T00:00:00'] x2"
    )
    json.dumps(result.validation)  # plain JSON (Dagster metadata, files)


def test_null_key_fails(prices: DatasetContract) -> None:
    raw = raw_prices()
    raw.loc[2, "entity_id"] = None
    result = check(as_mart(raw, prices), prices)
    assert failed(result) == {(NOT_NULL, ("entity_id",))}


def test_high_below_low_fails(prices: DatasetContract) -> None:
    raw = raw_prices()
    raw.loc[3, "high"] = raw.loc[3, "low"] - 0.5
    result = check(as_mart(raw, prices), prices)
    assert failed(result) == {
        (PAIR, ("high", "low")),
        (PAIR, ("high", "open")),
        (PAIR, ("high", "close")),
    }
    assert all(f.rule == "ordered" for f in result.failures)


def test_nulls_in_an_ordered_chain_are_skipped(prices: DatasetContract) -> None:
    raw = raw_prices()
    raw.loc[3, "low"] = None  # a not-null failure, but no ordering failure
    result = check(as_mart(raw, prices), prices)
    assert failed(result) == {(NOT_NULL, ("low",))}


def test_negative_volume_fails(prices: DatasetContract) -> None:
    raw = raw_prices()
    raw.loc[4, "volume"] = -5
    result = check(as_mart(raw, prices), prices)
    assert failed(result) == {(BETWEEN, ("volume",))}
    assert result.failures[0].rule == "non_negative"
    assert "-5" in result.failures[0].summary


def test_zero_price_fails_positive(prices: DatasetContract) -> None:
    raw = raw_prices()
    raw.loc[0, ["low", "open"]] = 0.0
    result = check(as_mart(raw, prices), prices)
    assert failed(result) == {(BETWEEN, ("open",)), (BETWEEN, ("low",))}
    assert {f.rule for f in result.failures} == {"positive"}


def test_unknown_price_basis_fails(prices: DatasetContract) -> None:
    raw = raw_prices()
    raw.loc[5, "price_basis"] = "adjusted"
    result = check(as_mart(raw, prices), prices)
    assert failed(result) == {("expect_column_values_to_be_in_set", ("price_basis",))}
    assert "'adjusted'" in result.failures[0].summary


def test_date_after_today_fails(prices: DatasetContract) -> None:
    raw = raw_prices()
    raw.loc[5, "date"] = (TODAY + dt.timedelta(days=1)).isoformat()
    result = check(as_mart(raw, prices), prices)
    assert failed(result) == {(BETWEEN, ("date",))}
    assert result.failures[0].rule == "date_range"
    # today itself is allowed
    raw.loc[5, "date"] = TODAY.isoformat()
    assert check(as_mart(raw, prices), prices).success


def test_missing_column_fails(prices: DatasetContract) -> None:
    result = check(as_mart(raw_prices().drop(columns=["volume"]), prices), prices)
    assert not result.success
    assert ("expect_table_columns_to_match_ordered_list", ()) in failed(result)
    assert (NOT_NULL, ("volume",)) in failed(result)  # GE reports the missing column as an error


def test_renamed_or_reordered_columns_fail(prices: DatasetContract) -> None:
    renamed = as_mart(raw_prices().rename(columns={"exchange_code": "exchange"}), prices)
    assert ("expect_table_columns_to_match_ordered_list", ()) in failed(check(renamed, prices))
    frame = as_mart(raw_prices(), prices)
    reordered = frame[[*prices.column_names[1:], prices.column_names[0]]]
    assert failed(check(reordered, prices)) == {("expect_table_columns_to_match_ordered_list", ())}


def test_wrong_type_fails(prices: DatasetContract) -> None:
    frame = as_mart(raw_prices(), prices)
    frame["volume"] = frame["volume"].astype("float64")
    frame["ticker"] = range(len(frame))
    result = check(frame, prices)
    assert failed(result) == {
        ("expect_column_values_to_be_in_type_list", ("volume",)),
        ("expect_column_values_to_be_in_type_list", ("ticker",)),
    }


def test_row_count_collapse_fails(prices: DatasetContract) -> None:
    frame = as_mart(raw_prices(), prices)
    assert check(frame, prices, previous_rows=6).success  # 6 of 6
    result = check(frame, prices, previous_rows=7)  # 6 of 7 < 90 %: at least 7 needed
    assert failed(result) == {("expect_table_row_count_to_be_between", ())}
    assert result.failures[0].rule == "row_count_min_ratio"
    assert result.failures[0].summary == "observed 6; expected at least 7"


# --- marts in a DuckDB file, data docs ------------------------------------------------------


def write_mart(database: Path, frame: pd.DataFrame, contract: DatasetContract) -> None:
    """Store ``frame`` as ``marts.<contract.name>`` with the contract's column types."""
    columns = ", ".join(f'"{c.name}" {c.type}' for c in contract.columns)
    with duckdb.connect(str(database)) as con:
        con.execute("create schema if not exists marts")
        con.execute(f'create or replace table marts."{contract.name}" ({columns})')
        con.register("frame", frame)
        con.execute(f'insert into marts."{contract.name}" select * from frame')


def many_prices(entities: int, days: int) -> pd.DataFrame:
    """A valid prices frame of ``entities x days`` rows (built from the hand-made one)."""
    base = raw_prices().iloc[[1]].reset_index(drop=True)
    rows = base.loc[base.index.repeat(entities * days)].reset_index(drop=True)
    rows["entity_id"] = [1000 + i // days for i in range(len(rows))]
    rows["date"] = [
        (dt.date(2020, 1, 1) + dt.timedelta(days=i % days)).isoformat() for i in range(len(rows))
    ]
    return rows


def test_run_contract_checks_on_a_warehouse(tmp_path: Path, prices: DatasetContract) -> None:
    database = tmp_path / "warehouse.duckdb"
    write_mart(database, as_mart(raw_prices(), prices), prices)
    (result,) = run_contract_checks(database, "marts", today=TODAY, previous_counts={"prices": 6})
    assert (result.dataset, result.success, result.row_count, result.method) == (
        "prices",
        True,
        6,
        "full",
    )
    (result,) = run_contract_checks(database, "marts", today=TODAY, previous_counts={"prices": 100})
    assert failed(result) == {("expect_table_row_count_to_be_between", ())}
    assert run_contract_checks(database, "staging", today=TODAY, previous_counts={}) == []


def test_catalogue_types_are_checked_exactly(tmp_path: Path, prices: DatasetContract) -> None:
    """A TIMESTAMP where the contract says DATE looks the same on a pandas frame."""
    database = tmp_path / "warehouse.duckdb"
    write_mart(database, as_mart(raw_prices(), prices), prices)
    with duckdb.connect(str(database)) as con:
        con.execute('alter table marts.prices alter "date" type timestamp')
    (result,) = run_contract_checks(database, "marts", today=TODAY, previous_counts={})
    assert not result.success
    assert failed(result) == {("duckdb_column_type", ("date",))}
    assert result.failures[0].summary == "DuckDB type TIMESTAMP; contract DATE"


def test_large_mart_keeps_keys_nulls_and_counts_exact(
    tmp_path: Path, prices: DatasetContract
) -> None:
    """Above the whole-frame limit, key/null/count rules see every row; the rest a sample."""
    raw = many_prices(entities=40, days=100)  # 4,000 rows
    raw.loc[3999] = raw.loc[3998]  # one duplicated key, in the last rows
    raw.loc[2500, "exchange_code"] = None  # one null in a non-key column
    database = tmp_path / "warehouse.duckdb"
    write_mart(database, as_mart(raw, prices), prices)
    options = {"full_check_max_rows": 1000, "sample_rows": 50}
    (result,) = run_contract_checks(
        database, "marts", today=TODAY, previous_counts={"prices": 5000}, **options
    )
    assert result.method == "exact+sample"
    assert result.row_count == 4000
    assert failed(result) == {
        ("expect_compound_columns_to_be_unique", ("entity_id", "date")),
        (NOT_NULL, ("exchange_code",)),
        ("expect_table_row_count_to_be_between", ()),
    }
    # One merged GE result, in the suite's order, each result saying what it read.
    validation = result.validation
    assert validation["suite_name"] == "prices"
    assert [r["expectation_config"]["type"] for r in validation["results"]] == [
        e["type"] for e in result.suite["expectations"]
    ]
    rows = {
        (r["expectation_config"]["type"], r["meta"]["rows"], r["result"].get("element_count"))
        for r in validation["results"]
        if r["expectation_config"]["type"] in {NOT_NULL, "expect_column_values_to_be_in_set"}
    }
    assert (NOT_NULL, "all", 4000) in rows
    assert any(kind == "sample" and 0 < n < 4000 for _, kind, n in rows)
    info = validation["meta"]["contract_check"]
    assert info["method"] == "exact+sample" and 0 < info["sample_rows"] < 4000

    # The same mart without defects passes the same way.
    write_mart(database, as_mart(many_prices(entities=40, days=100), prices), prices)
    (result,) = run_contract_checks(
        database, "marts", today=TODAY, previous_counts={"prices": 4000}, **options
    )
    assert result.success, result.failures
    assert result.validation["statistics"]["evaluated_expectations"] == len(
        result.suite["expectations"]
    )
    json.dumps(result.validation)

    # A missing column is reported, not raised, in every part that needs it.
    write_mart(database, as_mart(many_prices(entities=40, days=100), prices), prices)
    with duckdb.connect(str(database)) as con:
        con.execute("alter table marts.prices drop column exchange_code")
    (result,) = run_contract_checks(database, "marts", today=TODAY, previous_counts={}, **options)
    assert ("expect_table_columns_to_match_ordered_list", ()) in failed(result)
    assert (NOT_NULL, ("exchange_code",)) in failed(result)


def test_data_docs_name_the_suites_and_write_nowhere_else(
    tmp_path: Path, prices: DatasetContract, monkeypatch: pytest.MonkeyPatch
) -> None:
    work, home, out = tmp_path / "cwd", tmp_path / "home", tmp_path / "contracts" / "data_docs"
    work.mkdir()
    home.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("HOME", str(home))
    good = check(as_mart(raw_prices(), prices), prices, previous_rows=6)
    bad_raw = raw_prices()
    bad_raw.loc[0, "price_basis"] = "adjusted"
    bad = check(as_mart(bad_raw, prices), prices)
    index = write_data_docs([good, bad], out)
    assert index == out.resolve() / "index.html"
    html = index.read_text()
    assert "prices" in html
    assert (out / "expectations" / "prices.html").exists()
    pages = list((out / "validations" / "prices").rglob("*.html"))
    assert len(pages) == 2
    assert any("adjusted" in page.read_text() for page in pages)
    assert list(work.iterdir()) == [] and list(home.iterdir()) == []
    assert os.environ.get("GX_ANALYTICS_ENABLED") == "false"


def test_importing_the_module_does_not_import_great_expectations() -> None:
    code = (
        "import sys, findata.orchestration.contract_checks; "
        "print('great_expectations' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).parents[2],
    )
    assert out.stdout.strip() == "False"


# --- warning-level rules (checks.warn) --------------------------------------------------


def raw_holdings(statuses: list[str | None]) -> pd.DataFrame:
    """One 13F filing's rows, one per cover-total status, every blocking rule satisfied."""
    return pd.DataFrame(
        [
            {
                "accession": "0001850858-21-000001",
                "line_number": line,
                "manager_id": 1850858,
                "report_date": "2021-09-30",
                "filing_date": "2021-10-15",
                "cusip": "88579Y101",
                "shares": 3326,
                "value_usd": 584_000,
                "is_amendment": False,
                "is_current": True,
                "cover_value_difference_usd": None if status is None else 1_000_000,
                "cover_value_difference_ratio": None if status is None else 0.001,
                "cover_total_status": status,
            }
            for line, status in enumerate(statuses, start=1)
        ]
    )


def holdings_mart(raw: pd.DataFrame, contract: DatasetContract) -> pd.DataFrame:
    """``raw`` with the contract's every column (absent ones null), as a mart is read."""
    full = raw.reindex(columns=contract.column_names)
    return as_mart(full, contract)


def test_warning_level_rules_are_last_with_warning_severity() -> None:
    holdings = load_dataset_contract("institutional_holdings")
    expectations = build_suite(holdings, today=TODAY).expectations
    *blocking, warning = expectations
    assert all(e.severity == "critical" for e in blocking)
    assert (warning.severity, warning.meta["rule"], warning.column) == (
        "warning",
        "allowed",
        "cover_total_status",
    )
    assert list(warning.value_set) == ["equal", "rounding"]
    # the data docs show the description in place of GE's own sentence
    assert warning.description == (
        "WARNING, does not stop the publish: cover_total_status values must belong to this "
        "set: equal rounding."
    )


def test_a_warning_level_failure_is_reported_and_does_not_fail_the_check(
    tmp_path: Path,
) -> None:
    holdings = load_dataset_contract("institutional_holdings")
    fine = check(holdings_mart(raw_holdings(["equal", "rounding", None]), holdings), holdings)
    assert (fine.success, fine.failures) == (True, ())

    warned = check(holdings_mart(raw_holdings(["equal", "mismatch"]), holdings), holdings)
    assert warned.success  # nothing that stops the publish
    assert warned.failures == warned.warnings
    (warning,) = warned.warnings
    assert warning == (
        "expect_column_values_to_be_in_set",
        ("cover_total_status",),
        "1 unexpected of 2 rows; e.g. 'mismatch'",
        "allowed",
        "warning",
    )
    assert not warning.blocking

    # with a blocking failure as well, the check fails, and the warning is still a warning
    raw = raw_holdings(["mismatch"]).assign(shares=-1)
    both = check(holdings_mart(raw, holdings), holdings)
    assert not both.success
    assert {(f.rule, f.severity) for f in both.failures} == {
        ("non_negative", "critical"),
        ("allowed", "warning"),
    }

    index = write_data_docs([warned], tmp_path / "data_docs")
    (page,) = (index.parent / "validations" / "institutional_holdings").rglob("*.html")
    text = page.read_text()
    assert "WARNING, does not stop the publish: cover_total_status values must belong" in text
    assert "mismatch" in text


def test_a_warning_level_failure_keeps_its_severity_when_sampled(tmp_path: Path) -> None:
    """Above the whole-frame limit the row rules, warnings too, run on a sample (partitioned)."""
    holdings = load_dataset_contract("institutional_holdings")
    database = tmp_path / "warehouse.duckdb"
    write_mart(database, holdings_mart(raw_holdings(["mismatch"] * 20), holdings), holdings)
    with duckdb.connect(str(database), read_only=True) as con:
        result = check_mart(
            con, "marts", holdings, today=TODAY, previous_rows=None, full_check_max_rows=10
        )
    assert result.method == "exact+sample" and result.success
    assert [(f.rule, f.severity) for f in result.failures] == [("allowed", "warning")]


# --- the small demo -----------------------------------------------------------------------


def test_contracts_hold_on_the_small_demo(
    small_warehouse: Path, demo_today: dt.date, tmp_path: Path
) -> None:
    with duckdb.connect(str(small_warehouse), read_only=True) as con:
        counts = {
            name: con.execute(f'select count(*) from marts."{name}"').fetchall()[0][0]
            for name in contracted_marts(con, "marts")
        }
    # the small demo builds a mart of every contract
    assert sorted(counts) == sorted(dataset_names())
    results = run_contract_checks(
        small_warehouse, "marts", today=demo_today, previous_counts=counts
    )
    assert [r.dataset for r in results] == sorted(counts)
    for result in results:
        assert result.success, (result.dataset, result.failures)
        assert result.method == "full"
        assert result.row_count == counts[result.dataset]
    index = write_data_docs(results, tmp_path / "contracts" / "data_docs")
    assert index.exists()
    html = index.read_text()
    for result in results:
        assert result.dataset in html
        assert (index.parent / "expectations" / f"{result.dataset}.html").exists()


def test_the_contracted_marts_are_the_tables_and_views_named_for_a_contract(
    tmp_path: Path,
) -> None:
    with duckdb.connect(str(tmp_path / "w.duckdb")) as con:
        con.execute("create schema marts")
        con.execute("create schema other")
        con.execute("create table marts.prices (x int)")
        con.execute("create view marts.entities as select 1 as x")
        con.execute("create table marts.not_a_contract (x int)")
        con.execute("create table other.metrics (x int)")
        assert contracted_marts(con, "marts") == ["entities", "prices"]
        assert contracted_marts(con, "other") == ["metrics"]
        assert contracted_marts(con, "none") == []


def _published_copy(warehouse: Path, published: Path, contract: DatasetContract) -> None:
    """The mart as a published version holds it (``main.<name>``)."""
    with duckdb.connect(str(published)) as con:
        con.execute(f"attach '{warehouse}' as build (read_only)")
        con.execute(f'create table main."{contract.name}" as select * from build.marts.prices')


def test_a_changed_mart_is_checked_on_its_changed_rows(
    tmp_path: Path, prices: DatasetContract
) -> None:
    """Row rules read the rows the version does not hold (and those sharing their keys); a
    new row repeating an old row's key is a duplicate; the row count is the whole table's."""
    warehouse, published = tmp_path / "warehouse.duckdb", tmp_path / "version.duckdb"
    old = as_mart(many_prices(entities=10, days=30), prices)
    write_mart(warehouse, old, prices)
    _published_copy(warehouse, published, prices)
    new_day = old[old["date"] == old["date"].max()].assign(date=dt.date(2020, 2, 1))
    write_mart(warehouse, pd.concat([old, new_day], ignore_index=True), prices)
    with duckdb.connect(str(warehouse), read_only=True) as con:
        comparison = compare_with_version(con, "marts", prices, ("v1", published))
        result = check_mart(
            con, "marts", prices, today=TODAY, previous_rows=300, compared_with=comparison
        )
    assert (result.success, result.method, result.row_count) == (True, "changed", 310)
    assert result.validation["meta"]["contract_check"]["changed_rows"] == 10

    bad = new_day.assign(high=new_day["low"] - 1)  # high below low, in new rows only
    repeated = old.iloc[[0]].assign(close=old["close"].iloc[0] + 1)  # an old key again
    write_mart(warehouse, pd.concat([old, bad, repeated], ignore_index=True), prices)
    with duckdb.connect(str(warehouse), read_only=True) as con:
        comparison = compare_with_version(con, "marts", prices, ("v1", published))
        result = check_mart(
            con, "marts", prices, today=TODAY, previous_rows=1000, compared_with=comparison
        )
    assert result.validation["meta"]["contract_check"]["changed_rows"] == 12
    assert {
        ("expect_column_pair_values_a_to_be_greater_than_b", ("high", "low")),
        ("expect_compound_columns_to_be_unique", ("entity_id", "date")),
        ("expect_table_row_count_to_be_between", ()),
    } <= failed(result)


def _published_parts(warehouse: Path, published: Path, contract: DatasetContract) -> Path:
    """The mart as a version of parts holds it (as publish writes it); the version file."""
    with duckdb.connect() as con:
        con.execute(f"attach '{warehouse}' as build (read_only)")
        parts = plan_parts(con, contract, "build.marts.prices")
        write_missing_parts(con, published, contract, "build.marts.prices", parts)
    write_version_file(published / "v1.duckdb", published, [contract], parts)
    return published / "v1.duckdb"


def test_a_mart_holding_the_versions_rows_compares_unchanged(
    tmp_path: Path, prices: DatasetContract
) -> None:
    """The mart is unchanged against a version of parts and one holding its table itself;
    one changed value makes it differ from both."""
    warehouse, published = tmp_path / "warehouse.duckdb", tmp_path / "published"
    published.mkdir()
    old = as_mart(many_prices(entities=10, days=30), prices)
    write_mart(warehouse, old, prices)
    versions = [("parts", _published_parts(warehouse, published, prices))]
    _published_copy(warehouse, published / "whole.duckdb", prices)
    versions.append(("whole", published / "whole.duckdb"))
    changed = old.copy()
    changed.loc[0, "volume"] = changed.loc[0, "volume"] + 1
    for frame, unchanged in [(old, True), (changed, False)]:
        write_mart(warehouse, frame, prices)
        with duckdb.connect(str(warehouse), read_only=True) as con:
            for label, file in versions:
                comparison = compare_with_version(con, "marts", prices, (label, file))
                assert comparison is not None and comparison.unchanged is unchanged, label
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert compare_with_version(con, "marts", prices, None) is None


def test_only_the_parts_that_differ_from_the_version_are_compared(
    tmp_path: Path, prices: DatasetContract
) -> None:
    """Against a version of parts (history before this year, recent rows), a new day compares
    this year's rows only (the history part's rows are the version's); a changed row of the
    history makes it compared too, and its rule failure is found."""
    warehouse, published = tmp_path / "warehouse.duckdb", tmp_path / "published"
    old = as_mart(many_prices(entities=10, days=30), prices)
    old["date"] = old["date"] - dt.timedelta(days=20)  # 2019-12-12 .. 2020-01-10
    write_mart(warehouse, old, prices)
    version = _published_parts(warehouse, published, prices)
    new_day = old[old["date"] == old["date"].max()].assign(date=dt.date(2020, 2, 1))
    write_mart(warehouse, pd.concat([old, new_day], ignore_index=True), prices)
    with duckdb.connect(str(warehouse), read_only=True) as con:
        comparison = compare_with_version(con, "marts", prices, ("v1", version))
        assert comparison is not None and not comparison.unchanged
        assert comparison.scope == "(\"date\" >= DATE '2020-01-01')"
        result = check_mart(
            con, "marts", prices, today=TODAY, previous_rows=300, compared_with=comparison
        )
    assert (result.success, result.method, result.row_count) == (True, "changed", 310)
    assert result.validation["meta"]["contract_check"]["changed_rows"] == 10

    history = old["date"] < pd.Timestamp(2020, 1, 1)
    bad = old.copy()
    bad.loc[history.idxmax(), "high"] = bad.loc[history.idxmax(), "low"] - 1  # a 2019 row
    write_mart(warehouse, pd.concat([bad, new_day], ignore_index=True), prices)
    with duckdb.connect(str(warehouse), read_only=True) as con:
        comparison = compare_with_version(con, "marts", prices, ("v1", version))
        assert comparison is not None and comparison.scope.count(" OR ") == 1  # both parts
        result = check_mart(
            con, "marts", prices, today=TODAY, previous_rows=300, compared_with=comparison
        )
    assert result.validation["meta"]["contract_check"]["changed_rows"] == 11
    assert ("expect_column_pair_values_a_to_be_greater_than_b", ("high", "low")) in failed(result)
