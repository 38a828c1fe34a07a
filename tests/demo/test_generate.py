"""The demo generator: deterministic, consistent prices, files the real-format readers accept."""

from __future__ import annotations

import datetime as dt
import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
from conftest import Demo

from findata.demo.generate import DEFAULT_SEED, generate_demo, landing_is_empty
from findata.sources.readers.form13f import DOLLARS_FROM


def _digests(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def test_same_seed_gives_byte_identical_files(small_demo: Demo, tmp_path: Path) -> None:
    again = generate_demo(
        tmp_path / "landing",
        tmp_path / "demo",
        size="small",
        seed=DEFAULT_SEED,
        today=small_demo.today,
    )
    assert _digests(tmp_path / "landing") == _digests(small_demo.landing)
    assert (
        again.scenarios_path.read_bytes() == (small_demo.home / "demo/scenarios.json").read_bytes()
    )


def test_another_seed_gives_another_universe(small_demo: Demo, tmp_path: Path) -> None:
    generate_demo(
        tmp_path / "landing",
        tmp_path / "demo",
        size="small",
        seed=DEFAULT_SEED + 1,
        today=small_demo.today,
    )
    ours, theirs = _digests(small_demo.landing), _digests(tmp_path / "landing")
    assert (
        ours["security_master/security_master.csv"] != theirs["security_master/security_master.csv"]
    )


def test_landing_is_empty(tmp_path: Path, small_demo: Demo) -> None:
    assert landing_is_empty(tmp_path / "missing")
    (tmp_path / "empty" / "prices").mkdir(parents=True)
    assert landing_is_empty(tmp_path / "empty")
    assert not landing_is_empty(small_demo.landing)


def test_every_landing_source_has_rows(small_demo: Demo) -> None:
    summary = small_demo.tables.summary()
    assert all(count > 0 for count in summary["files"].values()), summary
    assert all(count > 0 for count in summary["rows"].values()), summary


def test_prices_are_internally_consistent(small_demo: Demo) -> None:
    prices = small_demo.tables.tables["prices"]
    assert (prices["low"] <= prices[["open", "close"]].min(axis=1)).all()
    assert (prices["high"] >= prices[["open", "close"]].max(axis=1)).all()
    assert (prices["low"] > 0).all()
    assert (prices["volume"] >= 0).all()
    assert not prices.duplicated(["entity_id", "date"]).any()
    # no trading on weekends, and none on a US market holiday (Thanksgiving, Independence Day)
    days = pd.DatetimeIndex(prices["date"].unique())
    assert (days.day_of_week < 5).all()
    assert not any((d.month, d.day) == (7, 4) for d in days)


def test_split_adjusted_series_is_continuous_across_every_split(small_demo: Demo) -> None:
    prices = small_demo.tables.tables["prices"].sort_values(["entity_id", "date"])
    splits = small_demo.tables.tables["corporate_actions"]
    splits = splits[splits["action"] == "split"]
    assert len(splits) > 0
    for split in splits.itertuples():
        rows = prices[prices["entity_id"] == split.entity_id].set_index("date")["close"]
        before = rows[rows.index < split.ex_date].iloc[-1]
        after = rows.loc[split.ex_date]
        traded_jump = np.log(before / after)
        adjusted_jump = np.log(before / split.ratio / after)
        assert abs(adjusted_jump) < 0.25, (split, before, after)
        assert abs(traded_jump) > abs(adjusted_jump)


def test_shares_outstanding_follow_splits(small_demo: Demo) -> None:
    prices = small_demo.tables.tables["prices"]
    split = small_demo.tables.tables["corporate_actions"].query("action == 'split'").iloc[0]
    rows = prices[prices["entity_id"] == split["entity_id"]].set_index("date")
    before = rows.loc[rows.index < split["ex_date"], "shares_outstanding"].iloc[-1]
    after = rows.loc[split["ex_date"], "shares_outstanding"]
    assert abs(after / before / split["ratio"] - 1) < 0.001


def test_13f_values_follow_the_2023_unit_rule(small_demo: Demo) -> None:
    covers = small_demo.tables.tables["form13f_filings"]
    early = covers[covers["filed"] < pd.Timestamp(DOLLARS_FROM)]
    late = covers[covers["filed"] >= pd.Timestamp(DOLLARS_FROM)]
    # a demo generated from 2028 on starts after the change: it has no filing in thousands
    # (tests/transforms/test_13f_amendments.py checks both units on fixed dates)
    assert len(late) > 0
    assert set(early["value_unit"]) <= {"thousands"}
    assert set(late["value_unit"]) == {"dollars"}
    # read back in dollars, every holding is worth about shares x the quarter-end close
    holdings = small_demo.tables.tables["form13f_holdings"].merge(
        covers[["accession", "period"]], on="accession"
    )
    shares_rows = holdings[holdings["put_call"].isna()]
    master = small_demo.tables.tables["security_master"][["cusip", "entity_id"]].dropna()
    priced = shares_rows.merge(master.drop_duplicates("cusip"), on="cusip")
    prices = small_demo.tables.tables["prices"][["entity_id", "date", "close"]].sort_values("date")
    priced = pd.merge_asof(
        priced.sort_values("period"), prices, left_on="period", right_on="date", by="entity_id"
    )
    ratio = priced["value_usd"] / (priced["shares"] * priced["close"])
    assert ratio.between(0.99, 1.01).all()


def test_filings_are_not_dated_after_as_of(small_demo: Demo) -> None:
    as_of = pd.Timestamp(dt.date.fromisoformat(small_demo.scenarios["as_of"]))
    tables = small_demo.tables.tables
    assert tables["sec_facts"]["filed"].max() <= as_of
    assert tables["sec_filings"]["filing_date"].max() <= as_of
    assert tables["form13f_filings"]["filed"].max() <= as_of
    assert pd.to_datetime(tables["form4_filings"]["signature_date"]).max() <= as_of
