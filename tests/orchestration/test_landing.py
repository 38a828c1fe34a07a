"""Landing read source by source, with and without the pipeline's Parquet cache."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
from conftest import Demo

from findata.orchestration.landing import LANDING_SOURCES, read_source


def _same(a: dict[str, pd.DataFrame], b: dict[str, pd.DataFrame]) -> bool:
    return a.keys() == b.keys() and all(
        a[t].equals(b[t]) and a[t].dtypes.to_dict() == b[t].dtypes.to_dict() for t in a
    )


def test_cached_reads_equal_direct_reads(small_demo: Demo, tmp_path: Path) -> None:
    for name in LANDING_SOURCES:
        direct = read_source(small_demo.landing, name)
        cold = read_source(small_demo.landing, name, cache=tmp_path)
        warm = read_source(small_demo.landing, name, cache=tmp_path)
        assert _same(cold, direct) and _same(warm, direct), name


def test_cache_follows_added_changed_and_removed_files(small_demo: Demo, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    shutil.copytree(small_demo.landing / "prices", landing / "prices")
    cache = tmp_path / "cache"
    before = read_source(landing, "prices", cache)["prices"]

    extra = landing / "prices" / "prices_extra.csv"
    extra.write_text(
        "entity_id,ticker,date,open,high,low,close,volume\n9999999,ZZZ,2030-01-02,1,2,1,1.5,10\n"
    )
    added = read_source(landing, "prices", cache)["prices"]
    assert len(added) == len(before) + 1 and added["entity_id"].iloc[-1] == 9999999

    extra.write_text(
        "entity_id,ticker,date,open,high,low,close,volume\n"
        "9999999,ZZZ,2030-01-02,1,2,1,1.75,10\n"
        "9999999,ZZZ,2030-01-03,1,2,1,1.25,10\n"
    )
    changed = read_source(landing, "prices", cache)["prices"]
    assert changed["close"].tail(2).tolist() == [1.75, 1.25]

    extra.unlink()
    removed = read_source(landing, "prices", cache)["prices"]
    assert removed.equals(before)
