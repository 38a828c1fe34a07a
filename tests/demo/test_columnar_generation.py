"""The generator's array code gives what the plain rules it stands for give.

The large demo is built without a Python object per bar or per fact: splits are found split by
split in arrays, bars are held as columns, facts are listed and framed in arrays and written to
companyfacts JSON by Arrow's string kernels, files are written on worker threads. Each is checked
here against the plain rule, written out one item at a time as the generator used to do it.
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import numpy as np
import orjson
import pandas as pd
import pytest

from findata.demo.documents import Address, CompanyFacts, Fact, FactColumns, Filing13F
from findata.demo.file_writer import BackgroundWriter
from findata.demo.fundamentals import LABELS
from findata.demo.generate import DEFAULT_SEED, Demo, build_demo
from findata.demo.prices import _split_schedule
from findata.demo.sec_13f import reported_value
from findata.demo.sec_json import companyfacts_json
from findata.demo.sec_json_columns import companyfacts_json_from_columns
from findata.demo.sizes import SIZES

TODAY = dt.date(2026, 11, 25)


@pytest.fixture(scope="module")
def demo() -> Demo:
    """The small demo in memory (the real generator, its manifest checked)."""
    return build_demo(SIZES["small"], DEFAULT_SEED, TODAY)


def _split_schedule_day_by_day(
    rng: np.random.Generator, value: np.ndarray, force_at: int | None
) -> list[tuple[int, float]]:
    """The split rule session by session, as the generator first wrote it."""
    splits: list[tuple[int, float]] = []
    factor, last = 1.0, -252
    threshold = float(rng.uniform(700, 1600))
    for t in range(1, len(value) - 5):
        if force_at is not None and t == force_at:
            splits.append((t, 4.0))
            factor *= 4.0
            last = t
            continue
        if t - last < 252 or (force_at is not None and abs(t - force_at) < 300):
            continue
        traded = value[t] / factor
        if traded > threshold:
            ratio = 4.0 if traded > 2 * threshold else float(rng.choice([2.0, 3.0]))
        elif traded < 1.0:
            ratio = 0.1
        else:
            continue
        splits.append((t, ratio))
        factor *= ratio
        last = t
    return splits


@pytest.mark.parametrize("case", range(300))
def test_splits_are_the_day_by_day_rules(case: int) -> None:
    draw = np.random.default_rng(case)
    n = int(draw.integers(3, 3000))
    # walks that soar (forward splits, some 4-for-1) or sink below a dollar (reverse splits)
    drift = float(draw.choice([-0.004, 0.0, 0.003, 0.006]))
    value = float(draw.uniform(0.5, 900)) * np.exp(np.cumsum(draw.normal(drift, 0.03, n)))
    force_at = None if case % 3 else int(draw.integers(-5, n + 5))
    ours, theirs = np.random.default_rng([case, 1]), np.random.default_rng([case, 1])
    assert _split_schedule(ours, value, force_at) == _split_schedule_day_by_day(
        theirs, value, force_at
    )
    assert ours.random() == theirs.random()  # the same draws were made


def test_price_lookups_are_the_frame_lookups(demo: Demo) -> None:
    history = demo.market.history
    securities, rows, sessions = history.rows_between(0, len(history.sessions))
    frame = pd.DataFrame(
        {
            "entity_id": history.entity_ids[securities],
            "date": history.sessions[sessions],
            "close": history.close[rows],
            "shares": history.shares_outstanding[rows],
        }
    )
    assert len(frame) == len(history.close)
    assert not frame.duplicated(["entity_id", "date"]).any()
    assert frame.equals(frame.sort_values(["entity_id", "date"], kind="stable"))
    draw = np.random.default_rng(5)
    first, last = history.sessions[0].date(), history.sessions[-1].date()
    days = [first - dt.timedelta(days=3), first, last, last + dt.timedelta(days=3)] + [
        first + dt.timedelta(days=int(d)) for d in draw.integers(0, (last - first).days, 25)
    ]
    series = {
        entity_id: (bars["date"].to_numpy(), bars["close"].to_numpy(), bars["shares"].to_numpy())
        for entity_id, bars in frame.groupby("entity_id")
    }
    for day in days:
        on_day = frame[frame["date"] == pd.Timestamp(day)]
        traded = dict(zip(on_day["entity_id"], on_day["close"] * on_day["shares"], strict=True))
        assert history.market_values(day) == traded
        closes = history.closes_on(day)
        for entity_id, (dates, close, shares) in series.items():
            # the last bar on or before the day; the first one's shares before the first bar
            position = int(np.searchsorted(dates, np.datetime64(day), side="right")) - 1
            expected = None if position < 0 else float(close[position])
            assert history.close_on(entity_id, day) == expected == closes.get(entity_id)
            assert history.shares_on(entity_id, day) == float(shares[max(position, 0)])
            assert history.traded_on(entity_id, day) == (entity_id in traded)
    for entity_id, (dates, _, _) in series.items():
        assert history.first_bar(entity_id) == pd.Timestamp(dates[0]).date()
        assert history.last_bar(entity_id) == pd.Timestamp(dates[-1]).date()


def _frames_by_the_rule(facts: list[Fact]) -> list[str | None]:
    """SEC's frames fact by fact: each calendar period's frame to its latest-filed fact."""
    latest: dict[tuple, int] = {}
    for position, fact in enumerate(facts):
        key = (fact.taxonomy, fact.tag, fact.unit, fact.start, fact.end)
        if key not in latest or (fact.filed, fact.accession) >= (
            facts[latest[key]].filed,
            facts[latest[key]].accession,
        ):
            latest[key] = position
    frames: list[str | None] = [None] * len(facts)
    for position in latest.values():
        fact = facts[position]
        quarter = (fact.end.month - 1) // 3 + 1
        if fact.start is None:
            next_quarter = dt.date(fact.end.year + quarter // 4, quarter * 3 % 12 + 1, 1)
            if fact.end == next_quarter - dt.timedelta(days=1):
                frames[position] = f"CY{fact.end.year}Q{quarter}I"
        elif (fact.end - fact.start).days > 300:
            frames[position] = f"CY{fact.end.year}"
        else:
            frames[position] = f"CY{fact.end.year}Q{quarter}"
    return frames


def test_companyfacts_from_columns_are_the_record_writers_bytes(demo: Demo) -> None:
    facts_seen = 0
    for issuer in demo.market.universe.issuers:
        columns = demo.filings[issuer.entity_id].facts
        records = columns.records()
        facts_seen += len(records)
        assert [f.frame for f in records] == _frames_by_the_rule(records)
        record = CompanyFacts(issuer.cik10, issuer.name, tuple(records), LABELS)
        ours = companyfacts_json_from_columns(issuer.cik10, issuer.name, columns, LABELS)
        assert ours == companyfacts_json(record), issuer.cik10
    assert facts_seen > 50_000


def _columns(facts: list[Fact]) -> FactColumns:
    """Hand-made facts as columns (a concept, filing and frame entry each, for the test)."""
    concepts = sorted({(f.taxonomy, f.tag, f.unit) for f in facts}, reverse=True)
    filings = sorted({(f.accession, f.fy, f.fp, f.form, f.filed) for f in facts}, reverse=True)
    frames = sorted({f.frame for f in facts if f.frame})
    return FactColumns(
        concepts=tuple(concepts),
        filings=tuple(filings),
        frames=tuple(frames),
        concept=np.array([concepts.index((f.taxonomy, f.tag, f.unit)) for f in facts]),
        value=np.array([float(f.value) for f in facts]),
        start=np.array([-1 if f.start is None else f.start.toordinal() for f in facts]),
        end=np.array([f.end.toordinal() for f in facts]),
        filing=np.array([filings.index((f.accession, f.fy, f.fp, f.form, f.filed)) for f in facts]),
        frame=np.array([frames.index(f.frame) if f.frame else -1 for f in facts]),
    )


def _fact(tag: str, value: float, end: dt.date, **fields: object) -> Fact:
    defaults: dict[str, object] = {
        "taxonomy": "us-gaap",
        "unit": "USD",
        "accession": "0000000001-24-000001",
        "fy": 2024,
        "fp": "Q1",
        "form": "10-Q",
        "filed": dt.date(2024, 5, 1),
        "start": None,
        "frame": None,
    }
    defaults.update(fields)
    return Fact(tag=tag, value=value, end=end, **defaults)  # type: ignore[arg-type]


def test_companyfacts_from_columns_write_every_kind_of_fact_as_the_records() -> None:
    q1, year = dt.date(2024, 3, 31), dt.date(2024, 12, 31)
    facts = [
        _fact("Revenues", 181_000_000.0, q1, start=dt.date(2024, 1, 1), frame="CY2024Q1"),
        _fact("Revenues", -0.0, year, start=dt.date(2024, 1, 1), form="10-K", fp="FY"),
        _fact("Revenues", 2.0**62, year, start=dt.date(2024, 1, 1), accession="0000000001-25-02"),
        _fact("Revenues", 2.0**63, year, start=dt.date(2024, 1, 1), accession="0000000001-25-03"),
        _fact("EarningsPerShareBasic", 0.05, q1, unit="USD/shares", start=dt.date(2024, 1, 1)),
        _fact("EarningsPerShareBasic", -12.34, q1, unit="USD/shares", frame="CY2024Q1"),
        _fact("EarningsPerShareBasic", 2.0**-20, q1, unit="USD"),  # a second unit of the tag
        _fact("StockholdersEquity", 5.5, q1, frame="CY2024Q1I"),
        _fact("StockIssued", 7.0, q1),  # sorts after StockholdersEquity, ignoring case
        _fact("EntityCommonStockSharesOutstanding", 10.0, q1, taxonomy="dei", unit="shares"),
        _fact("Custom", 1.0, q1, taxonomy="abc", fp="Q1"),  # no label: null, null
        _fact("Custom", 2.0, q1, taxonomy="aaa"),  # an unknown taxonomy after SEC's, by name
    ]
    labels = {**LABELS, "StockIssued": ('Stock "Issued" & <more>', "ünïcode")}
    ours = companyfacts_json_from_columns("0000000001", "ACME & Co ü", _columns(facts), labels)
    assert ours == companyfacts_json(
        CompanyFacts("0000000001", "ACME & Co ü", tuple(facts), labels)
    )
    empty = _columns([])
    assert companyfacts_json_from_columns("1", "ACME", empty, labels) == companyfacts_json(
        CompanyFacts("1", "ACME", ())
    )
    with pytest.raises(ValueError, match="finite"):
        companyfacts_json_from_columns("1", "ACME", _columns([_fact("Revenues", math.nan, q1)]), {})
    too_big = [_fact("Revenues", 2.0**64, q1)]  # SEC's numbers fit in 64 bits: both refuse
    with pytest.raises(orjson.JSONEncodeError):
        companyfacts_json(CompanyFacts("1", "ACME", tuple(too_big)))
    with pytest.raises(orjson.JSONEncodeError):
        companyfacts_json_from_columns("1", "ACME", _columns(too_big), {})


def test_values_in_thousands_are_rounded_half_up_as_decimals_round() -> None:
    filing = Filing13F(
        accession="0000000001-22-000001",
        filed=dt.date(2022, 11, 14),
        period=dt.date(2022, 9, 30),
        manager_cik="0000000001",
        manager_name="ACME Capital",
        manager_address=Address("1 MAIN STREET", "NEW YORK", "NY", "10017"),
        signer_name="A Signer",
        holdings=(),
    )
    assert filing.values_in_thousands
    for value in [0, 1, 499, 500, 501, 1_499, 1_500, 2_500, 10**15 + 500, *range(0, 10**6, 997)]:
        expected = int((Decimal(value) / 1000).quantize(Decimal(1), rounding=ROUND_HALF_UP))
        assert reported_value(filing, value) == expected


def test_background_writer_writes_every_file_and_raises_a_failure(tmp_path: Path) -> None:
    with BackgroundWriter(threads=3, pending=2) as writer:
        for k in range(50):
            writer.write(tmp_path / f"folder{k % 4}" / f"{k}.txt", f"file {k}".encode())
    assert writer.written == 50
    assert sorted(p.read_text() for p in tmp_path.rglob("*.txt")) == sorted(
        f"file {k}" for k in range(50)
    )
    (tmp_path / "taken").mkdir()
    with pytest.raises(IsADirectoryError), BackgroundWriter() as writer:
        writer.write(tmp_path / "taken", b"a folder is in the way")
