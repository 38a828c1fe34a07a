"""The reference, price and index marts hold every scenario of the small demo."""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from conftest import Demo, run_dbt

from findata.demo.sizes import SIZES


@pytest.fixture(scope="module")
def con(small_warehouse: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only connection to the small demo's built warehouse."""
    with duckdb.connect(str(small_warehouse), read_only=True) as connection:
        yield connection


def _day(text: str) -> dt.date:
    return dt.date.fromisoformat(text)


def _rows(con: duckdb.DuckDBPyConnection, sql: str, *params: Any) -> list[dict[str, Any]]:
    """The rows of ``sql`` as dicts."""
    cursor = con.execute(sql, list(params))
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _tickers_on(con: duckdb.DuckDBPyConnection, ticker: str, day: dt.date) -> list[dict[str, Any]]:
    """ticker_history rows that give ``ticker`` on ``day``."""
    return _rows(
        con,
        "select * from marts.ticker_history where ticker = ? and valid_from <= ? "
        "and (valid_to is null or ? <= valid_to) order by entity_id",
        ticker,
        day,
        day,
    )


def _own_entity(con: duckdb.DuckDBPyConnection, ticker: str, day: dt.date) -> int:
    rows = [r for r in _tickers_on(con, ticker, day) if r["ticker_kind"] == "own"]
    assert len(rows) == 1, rows
    return int(rows[0]["entity_id"])


def _bars(con: duckdb.DuckDBPyConnection, entity_id: int) -> list[dict[str, Any]]:
    return _rows(con, "select * from marts.prices where entity_id = ? order by date", entity_id)


# --- prices -------------------------------------------------------------------------------


def test_adj_close_is_continuous_across_the_split(
    con: duckdb.DuckDBPyConnection, small_demo: Demo
) -> None:
    case = small_demo.scenarios["split"]
    day, ratio = _day(case["date"]), float(case["ratio"])
    bars = _bars(con, _own_entity(con, case["ticker"], day))
    at = next(i for i, bar in enumerate(bars) if bar["date"] == day)
    before, on = bars[at - 1], bars[at]
    assert on["split_ratio"] == pytest.approx(ratio)
    # as traded, the close drops by about the ratio; adjusted, the series moves like any day
    assert before["close"] / on["close"] == pytest.approx(ratio, rel=0.3)
    assert abs(on["adj_close"] / before["adj_close"] - 1) < 0.25
    # the bar before the split is divided by this split's ratio more than the split day's bar
    assert before["adj_close"] / before["close"] == pytest.approx(
        on["adj_close"] / on["close"] / ratio
    )
    expected = (on["adj_close"] + on["dividend"] * on["adj_close"] / on["close"]) / before[
        "adj_close"
    ] - 1
    assert on["return_daily"] == pytest.approx(expected)
    # the latest bar is on today's share basis; the first bar has no return
    assert bars[-1]["adj_close"] == pytest.approx(bars[-1]["close"])
    assert bars[0]["return_daily"] is None
    assert sum(1 for bar in bars if bar["split_ratio"] != 1) >= 1
    # adj_close divides by the published split factor: the product of every later split's ratio
    later = 1.0
    for bar in reversed(bars):
        assert bar["split_factor"] == pytest.approx(later, rel=1e-12)
        assert bar["adj_close"] == bar["close"] / bar["split_factor"]
        later *= bar["split_ratio"]


def test_dividend_and_row_fields(con: duckdb.DuckDBPyConnection, small_demo: Demo) -> None:
    case = small_demo.scenarios["dividend"]
    day = _day(case["date"])
    entity_id = _own_entity(con, case["ticker"], day)
    (bar,) = _rows(
        con, "select * from marts.prices where entity_id = ? and date = ?", entity_id, day
    )
    assert bar["dividend"] == pytest.approx(float(case["amount"]))
    assert bar["price_basis"] == "trade"
    assert bar["ticker"] == case["ticker"]
    assert bar["market_cap"] == pytest.approx(bar["close"] * bar["shares_outstanding"])
    entity = _rows(con, "select * from marts.entities where entity_id = ?", entity_id)[0]
    assert (bar["entity_name"], bar["gics_sector"], bar["exchange_code"]) == (
        entity["name"],
        entity["gics_sector"],
        entity["exchange"],
    )
    no_dividend = con.execute(
        "select count(*) from marts.prices where dividend = 0 and split_ratio = 1"
    ).fetchone()
    assert no_dividend is not None and no_dividend[0] > 0


def test_an_action_off_a_trading_day_takes_effect_on_the_next_one(
    small_warehouse: Path, small_demo: Demo, tmp_path: Path
) -> None:
    """Actions are aligned to trading days (int_price_actions_by_day, a view): one on a day
    without a bar moves to the security's next bar, adding to that day's actions; one after
    the last bar is left out; the others stay on their day."""
    copy = tmp_path / "warehouse.duckdb"
    shutil.copyfile(small_warehouse, copy)
    entity_id = small_demo.scenarios["plain"]["entity_id"]
    with duckdb.connect(str(copy)) as con:
        sql = "select * from intermediate.int_price_actions_by_day where entity_id = ? order by 2"
        before = {r["trade_date"]: r for r in _rows(con, sql, entity_id)}
        days = [row["date"] for row in _bars(con, entity_id)]
        # a day without a bar (a weekend or holiday) followed by a bar with no action yet
        gap = next(
            i
            for i in range(1, len(days))
            if (days[i] - days[i - 1]).days > 1 and days[i] not in before
        )
        off_day, next_day = days[gap - 1] + dt.timedelta(days=1), days[gap]
        con.execute(
            "insert into raw.corporate_actions (entity_id, ticker, action, ex_date, ratio, "
            "amount, source_file) values (?, 'X', 'dividend', ?, null, 0.125, 'test'), "
            "(?, 'X', 'split', ?, 3.0, null, 'test'), (?, 'X', 'dividend', ?, null, 9.0, 'test')",
            [entity_id, off_day, entity_id, off_day, entity_id, days[-1] + dt.timedelta(days=1)],
        )
        after = {r["trade_date"]: r for r in _rows(con, sql, entity_id)}
    assert off_day not in after
    assert (after[next_day]["split_ratio"], float(after[next_day]["dividend"])) == (3.0, 0.125)
    assert {d: r for d, r in after.items() if d != next_day} == {
        d: r for d, r in before.items() if d != next_day
    }


def test_delisted_security_last_price_date(
    con: duckdb.DuckDBPyConnection, small_demo: Demo
) -> None:
    case = small_demo.scenarios["delisted"]
    last = _day(case["last_date"])
    (max_date,) = con.execute(
        "select max(date) from marts.prices where entity_id = ?", [case["entity_id"]]
    ).fetchone() or (None,)
    assert max_date == last
    entity = _rows(con, "select * from marts.entities where entity_id = ?", case["entity_id"])[0]
    assert (entity["last_price_date"], entity["listed_to"]) == (last, last)
    assert entity["ticker"] == case["ticker"]


def test_renamed_security_trades_under_each_ticker_in_turn(
    con: duckdb.DuckDBPyConnection, small_demo: Demo
) -> None:
    case = small_demo.scenarios["renamed"]
    change = _day(case["change_date"])
    bars = _bars(con, int(case["entity_id"]))
    tickers = {(bar["date"] >= change, bar["ticker"]) for bar in bars}
    assert tickers == {(False, case["old_ticker"]), (True, case["new_ticker"])}


# --- entities and tickers ------------------------------------------------------------------


def test_share_class_ticker_names_two_securities_of_one_issuer(
    con: duckdb.DuckDBPyConnection, small_demo: Demo
) -> None:
    case = small_demo.scenarios["share_classes"]
    as_of = _day(small_demo.scenarios["as_of"])
    shared = _tickers_on(con, case["shared_ticker"], as_of)
    assert sorted(r["entity_id"] for r in shared) == sorted(case["security_entity_ids"])
    assert {(r["issuer_entity_id"], r["entity_grain"], r["ticker_kind"]) for r in shared} == {
        (case["issuer_entity_id"], "security", "shared_class")
    }
    for class_ticker in case["class_tickers"]:
        (own,) = _tickers_on(con, class_ticker, as_of)
        assert own["ticker_kind"] == "own"
        assert own["entity_id"] in case["security_entity_ids"]
        bars = _bars(con, int(own["entity_id"]))
        assert {bar["ticker"] for bar in bars} == {class_ticker}
    classes = _rows(
        con,
        "select * from marts.entities where issuer_entity_id = ? order by entity_id",
        case["issuer_entity_id"],
    )
    assert [(e["entity_id"], e["entity_grain"]) for e in classes] == [
        (case["issuer_entity_id"], "issuer"),
        *((e, "security") for e in sorted(case["security_entity_ids"])),
    ]
    assert {e["share_class"] for e in classes} == {None, "A", "B"}


def test_ambiguous_ticker_names_two_issuers_on_its_date(
    con: duckdb.DuckDBPyConnection, small_demo: Demo
) -> None:
    case = small_demo.scenarios["ambiguous"]
    rows = _tickers_on(con, case["ticker"], _day(case["date"]))
    assert sorted(r["entity_id"] for r in rows) == sorted(case["entity_ids"])
    assert len({r["issuer_entity_id"] for r in rows}) == 2
    assert {r["ticker_kind"] for r in rows} == {"own"}


def test_issuer_grain_ticker(con: duckdb.DuckDBPyConnection, small_demo: Demo) -> None:
    case = small_demo.scenarios["issuer_without_listing"]
    (row,) = _tickers_on(con, case["ticker"], _day(case["date"]))
    assert (row["entity_id"], row["entity_grain"], row["issuer_entity_id"]) == (
        case["issuer_entity_id"],
        "issuer",
        case["issuer_entity_id"],
    )
    issuer = _rows(
        con, "select * from marts.entities where entity_id = ?", case["issuer_entity_id"]
    )[0]
    assert issuer["entity_grain"] == "issuer"
    assert (issuer["figi"], issuer["exchange"], issuer["ticker"]) == (None, None, case["ticker"])
    # the delisted security that had the ticker before hands it on to its issuer
    links = _rows(
        con,
        "select * from marts.succession_links where to_entity_id = ? and link_type = ?",
        case["issuer_entity_id"],
        "reassigned",
    )
    assert [link["to_ticker"] for link in links] == [case["ticker"]]


def test_every_issuer_and_security_is_an_entity(
    con: duckdb.DuckDBPyConnection, small_demo: Demo
) -> None:
    master = small_demo.tables.tables["security_master"]
    expected = set(master["entity_id"].astype(int)) | set(master["issuer_entity_id"].astype(int))
    entities = _rows(con, "select * from marts.entities")
    assert {e["entity_id"] for e in entities} == expected
    assert all(len(e["cik"]) == 10 and e["cik"].isdigit() for e in entities)
    assert all(e["entity_type"] == "corporation" for e in entities)
    plain_id = small_demo.scenarios["plain"]["entity_id"]
    plain = next(e for e in entities if e["entity_id"] == plain_id)
    assert plain["sic_code"] and plain["gics_sector"] and plain["naics_code"]
    assert plain["classification_as_of"] is not None
    assert plain["listed_to"] is None
    assert plain["last_price_date"] == _day(small_demo.scenarios["as_of"])


def test_reused_and_renamed_succession_links(
    con: duckdb.DuckDBPyConnection, small_demo: Demo
) -> None:
    reused = small_demo.scenarios["reused"]
    first, second = reused["periods"]
    links = _rows(
        con,
        "select * from marts.succession_links where link_type = 'reused' and from_ticker = ?",
        reused["ticker"],
    )
    assert [
        (
            link["from_entity_id"],
            link["from_valid_to"],
            link["to_ticker"],
            link["to_entity_id"],
            link["change_date"],
        )
        for link in links
    ] == [
        (
            first["entity_id"],
            _day(first["valid_to"]),
            reused["ticker"],
            second["entity_id"],
            _day(second["valid_from"]),
        )
    ]
    renamed = small_demo.scenarios["renamed"]
    links = _rows(
        con,
        "select * from marts.succession_links where link_type = 'renamed' and from_ticker = ?",
        renamed["old_ticker"],
    )
    assert [
        (link["from_entity_id"], link["to_entity_id"], link["to_ticker"], link["change_date"])
        for link in links
    ] == [
        (
            renamed["entity_id"],
            renamed["entity_id"],
            renamed["new_ticker"],
            _day(renamed["change_date"]),
        )
    ]


# --- indexes -------------------------------------------------------------------------------


@pytest.mark.parametrize("index", ["sp500", "djia", "ndx100"])
def test_index_roster_size_at_as_of(
    con: duckdb.DuckDBPyConnection, small_demo: Demo, index: str
) -> None:
    as_of = _day(small_demo.scenarios["as_of"])
    size = getattr(SIZES["small"], index)
    members = _rows(
        con,
        "select * from marts.index_membership where index_code = ? and added_date <= ? "
        "and (removed_date is null or ? < removed_date)",
        index,
        as_of,
        as_of,
    )
    assert len(members) == size
    assert len({m["entity_id"] for m in members}) == size
    assert {m["member_grain"] for m in members} == {"security"}
    (current,) = con.execute(
        "select count(*) from marts.index_membership where index_code = ? and removed_date is null",
        [index],
    ).fetchone() or (None,)
    assert current == size


def test_index_events_hold_the_scenario_additions_and_removals(
    con: duckdb.DuckDBPyConnection, small_demo: Demo
) -> None:
    case = small_demo.scenarios["index_events"]
    index = case["index"]
    for event in ("added", "removed"):
        ticker, day = case[event]["ticker"], _day(case[event]["date"])
        rows = _rows(
            con,
            "select * from marts.index_events where index_code = ? and event = ? "
            "and effective_date = ? and ticker = ?",
            index,
            event,
            day,
            ticker,
        )
        assert len(rows) == 1, (event, ticker, day)
        (event_row,) = rows
        assert event_row["entity_id"] is not None
        assert event_row["index_name"] == "S&P 500"
        membership = _rows(
            con,
            "select * from marts.index_membership where membership_id = ?",
            event_row["membership_id"],
        )[0]
        assert membership["entity_id"] == event_row["entity_id"]
        assert membership["added_date" if event == "added" else "removed_date"] == day
    (events,) = con.execute("select count(*) from marts.index_events").fetchone() or (None,)
    (expected,) = con.execute(
        "select count(added_date) + count(removed_date) from marts.index_membership"
    ).fetchone() or (None,)
    assert events == expected


# --- ticker-only layouts (Quandl WIKI prices, publishers' index files) ---------------------


@pytest.fixture(scope="module")
def ticker_only(
    small_warehouse: Path, small_demo: Demo, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[duckdb.DuckDBPyConnection, dt.date]]:
    """A copy of the small warehouse with ticker-only rows added to raw and the marts rebuilt.

    Yields a read-only connection to the copy and the new bars' date (the day after as_of).
    """
    scenarios = small_demo.scenarios
    as_of = _day(scenarios["as_of"])
    later = as_of + dt.timedelta(days=1)
    warehouse = tmp_path_factory.mktemp("ticker-only") / "warehouse.duckdb"
    shutil.copyfile(small_warehouse, warehouse)
    wal = small_warehouse.with_name(small_warehouse.name + ".wal")
    if wal.exists():
        shutil.copyfile(wal, warehouse.with_name(warehouse.name + ".wal"))
    class_a, _ = scenarios["share_classes"]["class_tickers"]
    bars = [
        # ticker, date, close, dividend, split_ratio
        (class_a, later, 10.5, 0.5, 2.0),
        (scenarios["share_classes"]["shared_ticker"], later, 10.5, 0.0, 1.0),
        (scenarios["ambiguous"]["ticker"], later, 10.5, 0.0, 1.0),
        (scenarios["plain"]["ticker"], as_of, 1.0, 0.0, 1.0),
    ]
    with duckdb.connect(str(warehouse)) as con:
        for ticker, day, close, dividend, split_ratio in bars:
            con.execute(
                "insert into raw.prices (entity_id, ticker, date, open, high, low, close, "
                "volume, shares_outstanding, dividend, split_ratio, source_file) "
                "values (null, ?, ?, ?, ?, ?, ?, 1000, null, ?, ?, 'wiki_prices.csv')",
                [ticker, day, close, close + 1, close - 1, close, dividend, split_ratio],
            )
        memberships = [
            ("sp500", scenarios["share_classes"]["class_tickers"][1], later, None),
            ("djia", scenarios["ambiguous"]["ticker"], _day(scenarios["ambiguous"]["date"]), None),
            ("ndx100", scenarios["renamed"]["new_ticker"], None, as_of),
        ]
        for index, ticker, added, removed in memberships:
            con.execute(
                "insert into raw.index_membership (index, entity_id, ticker, added, removed, "
                "name, cik, source_file) values (?, null, ?, ?, ?, null, null, ?)",
                [index, ticker, added, removed, f"{index}_ticker_start_end.csv"],
            )
    result = run_dbt(warehouse, "run", "--select", "+prices", "+index_membership", "+index_events")
    assert result.returncode == 0, result.stdout[-4000:]
    with duckdb.connect(str(warehouse), read_only=True) as connection:
        yield connection, later


def test_ticker_only_bars_resolve_on_their_date(
    ticker_only: tuple[duckdb.DuckDBPyConnection, dt.date],
    con: duckdb.DuckDBPyConnection,
    small_demo: Demo,
) -> None:
    copy, later = ticker_only
    scenarios = small_demo.scenarios
    as_of = _day(scenarios["as_of"])
    class_a = scenarios["share_classes"]["class_tickers"][0]
    entity_id = _own_entity(con, class_a, as_of)
    # only the class ticker resolves: the shared and the ambiguous tickers name two securities
    new_bars = _rows(copy, "select * from marts.prices where date = ?", later)
    assert [(bar["entity_id"], bar["ticker"]) for bar in new_bars] == [(entity_id, class_a)]
    (bar,) = new_bars
    assert (bar["split_ratio"], bar["dividend"], bar["adj_close"]) == (2.0, 0.5, 10.5)
    sql = "select * from marts.prices where entity_id = ? and date = ?"
    (before,) = _rows(con, sql, entity_id, as_of)
    (after,) = _rows(copy, sql, entity_id, as_of)
    # the inline split puts every earlier bar on the new share basis
    assert after["adj_close"] == pytest.approx(before["adj_close"] / 2)
    assert after["split_factor"] == before["split_factor"] * 2
    assert bar["return_daily"] == pytest.approx((10.5 + 0.5) * 2 / after["close"] - 1)
    # a bar our layout already gives keeps our values
    plain = scenarios["plain"]["entity_id"]
    assert _rows(copy, sql, plain, as_of)[0]["close"] == _rows(con, sql, plain, as_of)[0]["close"]


def test_ticker_only_index_rows_resolve_on_their_dates(
    ticker_only: tuple[duckdb.DuckDBPyConnection, dt.date],
    con: duckdb.DuckDBPyConnection,
    small_demo: Demo,
) -> None:
    copy, later = ticker_only
    scenarios = small_demo.scenarios
    as_of = _day(scenarios["as_of"])
    class_b = scenarios["share_classes"]["class_tickers"][1]
    sql = "select * from marts.index_membership where membership_id = ?"
    (member,) = _rows(copy, sql, f"sp500|{class_b}|{later.isoformat()}")
    assert (member["entity_id"], member["ticker"], member["added_date"]) == (
        _own_entity(con, class_b, as_of),
        class_b,
        later,
    )
    ambiguous = scenarios["ambiguous"]
    (member,) = _rows(copy, sql, f"djia|{ambiguous['ticker']}|{ambiguous['date']}")
    assert (member["entity_id"], member["entity_name"], member["member_grain"]) == (
        None,
        None,
        "security",
    )
    renamed = scenarios["renamed"]
    membership_id = f"ndx100|{renamed['new_ticker']}|unknown"
    (member,) = _rows(copy, sql, membership_id)
    assert (member["entity_id"], member["added_date"], member["removed_date"]) == (
        renamed["entity_id"],
        None,
        as_of,
    )
    events = _rows(copy, "select * from marts.index_events where membership_id = ?", membership_id)
    assert [(e["event"], e["effective_date"], e["ticker"]) for e in events] == [
        ("removed", as_of, renamed["new_ticker"])
    ]
