"""``findata demo``'s generation step: the seeded universe written into landing, plus the manifest.

Generation runs in stages (the market: universe, prices, index rosters; then fundamentals,
insiders, holdings), each drawing from its own ``numpy`` generator seeded by ``seed`` and the
stage, in a fixed order; every file's content is laid out in a fixed order and format (files
are written on several threads, so not in a fixed order). So the same seed and the same
``today`` give byte-identical files, for any seed and any day (the generator's property tests
sweep both), and the manifest is checked before anything is written.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from findata.demo import sec_formats
from findata.demo.calendar import trading_sessions
from findata.demo.documents import (
    Address,
    Filing13F,
    FilingIndexEntry,
    Form4Filing,
    FormerName,
    Submissions,
)
from findata.demo.file_writer import BackgroundWriter
from findata.demo.fundamentals import (
    LABELS,
    AccessionCounter,
    IssuerFilings,
    filings_of_universe,
)
from findata.demo.holdings import add_amendments, build_13f_filings, build_managers
from findata.demo.indexes import Membership, build_indexes
from findata.demo.insiders import add_amendment, build_form4_filings
from findata.demo.landing_csv import (
    write_corporate_actions,
    write_index_membership,
    write_prices,
    write_security_master,
)
from findata.demo.price_history import PriceHistory
from findata.demo.prices import simulate_prices
from findata.demo.scenario_checks import check_manifest
from findata.demo.scenarios import build_scenarios
from findata.demo.sizes import SIZES, DemoSize
from findata.demo.universe import SIC_DESCRIPTIONS, Issuer, Universe, build_universe

DEFAULT_SEED = 20_240_601
#: the generation stages, each with a random stream of its own (``stage_rng``)
_STAGES = ("universe", "prices", "indexes", "fundamentals", "insiders", "holdings")
_EXCHANGE_NAMES = {"XNYS": "NYSE", "XNAS": "Nasdaq"}


@dataclass(frozen=True)
class DemoResult:
    """What a generation wrote."""

    landing_dir: Path
    scenarios_path: Path
    as_of: dt.date
    files: int


def landing_is_empty(landing_dir: Path) -> bool:
    """True when landing holds no file at all (the demo only fills an empty landing)."""
    return not landing_dir.exists() or not any(p.is_file() for p in landing_dir.rglob("*"))


def _ordinary_issuers(universe: Universe) -> list[Issuer]:
    """Issuers not built for a scenario, with one security trading over the whole history."""
    first, as_of = universe.sessions[0].date(), universe.as_of
    return [
        i
        for i in universe.ordinary_issuers
        if len(i.securities) == 1
        and i.securities[0].listed == first
        and i.securities[0].delisted is None
        and not i.issuer_tickers
        and i.securities[0].ticker_on(as_of)
    ]


def _listed_tickers(issuer: Issuer, as_of: dt.date) -> list[tuple[str, str]]:
    """The issuer's tickers on ``as_of`` and the SEC's name of each one's venue, as its
    submissions and the SEC's company list give them."""
    listed: dict[str, str] = {}
    for security in issuer.securities:
        for period in security.tickers:
            current = period.valid_from <= as_of and (
                period.valid_to is None or as_of <= period.valid_to
            )
            if current:
                listed.setdefault(period.ticker, _EXCHANGE_NAMES[security.exchange])
    for period in issuer.issuer_tickers:
        if period.valid_to is None:
            listed.setdefault(period.ticker, "OTC")
    return list(listed.items())


def _submissions(
    issuer: Issuer, filings: IssuerFilings, form4s: list[Form4Filing], as_of: dt.date
) -> Submissions:
    """The submissions document of an issuer: current tickers and every filing, newest first
    (``form4s``: the Form 4s filed about the issuer)."""
    listed = _listed_tickers(issuer, as_of)
    tickers = [ticker for ticker, _ in listed]
    exchanges = [exchange for _, exchange in listed]
    index = list(filings.index) + [
        FilingIndexEntry(
            accession=f.accession,
            filing_date=f.filed,
            report_date=f.period_of_report,
            form=f.document_type,
            primary_document=f"xslF345X05/{f.accession}.xml",
            primary_doc_description="FORM " + f.document_type,
            size=4_000 + len(f.non_derivative) * 900 + len(f.derivative) * 1_100,
            is_xbrl=False,
        )
        for f in form4s
    ]
    index.sort(key=lambda e: (e.filing_date, e.accession), reverse=True)
    city, state, zip_code = issuer.city
    return Submissions(
        cik=issuer.cik10,
        name=issuer.name,
        entity_type="operating",
        sic=issuer.sic,
        sic_description=SIC_DESCRIPTIONS[issuer.sic],
        tickers=tuple(tickers),
        exchanges=tuple(exchanges),
        fiscal_year_end="1231",
        state_of_incorporation=issuer.state,
        address=Address(f"{1 + issuer.entity_id % 900} MAIN STREET", city, state, zip_code),
        former_names=tuple(
            FormerName(name=name, date_from=start, date_to=end)
            for name, start, end in issuer.former_names
        ),
        filings=tuple(index),
    )


def _write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path``, creating its folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as out:
        out.write(data)


def stage_rng(seed: int, stage: str) -> np.random.Generator:
    """The random generator of one generation stage. Each stage draws from a stream of its own,
    so what a stage builds depends on the seed and its inputs alone: a change to one stage (the
    13F amendments, say) does not reshuffle the others, and ``build_market`` alone builds
    exactly the market a whole generation builds."""
    return np.random.default_rng([seed, _STAGES.index(stage)])


@dataclass(frozen=True)
class Market:
    """The first stages: who is listed under which ticker, their prices, the index rosters."""

    universe: Universe
    history: PriceHistory
    memberships: list[Membership]

    @property
    def as_of(self) -> dt.date:
        return self.universe.as_of


@dataclass(frozen=True)
class Demo:
    """The whole demo universe in memory, its manifest checked (``check_manifest``)."""

    market: Market
    filings: dict[int, IssuerFilings]
    form4s: list[Form4Filing]
    thirteen_fs: list[Filing13F]
    scenarios: dict[str, Any]


def build_market(demo_size: DemoSize, seed: int, today: dt.date) -> Market:
    """Issuers, securities and their ticker periods over the sessions of ``demo_size.years``
    before ``today``, their daily prices and corporate actions, and the index rosters."""
    sessions = trading_sessions(dt.date(today.year - demo_size.years, today.month, 1), today)
    universe = build_universe(stage_rng(seed, "universe"), demo_size, sessions)
    history = simulate_prices(stage_rng(seed, "prices"), universe)
    memberships = build_indexes(
        stage_rng(seed, "indexes"),
        universe,
        history,
        demo_size.sp500,
        demo_size.djia,
        demo_size.ndx100,
    )
    return Market(universe, history, memberships)


def build_demo(demo_size: DemoSize, seed: int, today: dt.date) -> Demo:
    """The demo universe for ``seed`` and ``today``: prices run to the last trading day before
    ``today`` and every filing is filed by then. Raises ``ScenarioError`` when a scenario of the
    manifest is not exactly the case its key names."""
    market = build_market(demo_size, seed, today)
    universe, history, as_of = market.universe, market.history, market.as_of
    ordinary = _ordinary_issuers(universe)
    restating, insider_issuers = ordinary[0], ordinary[1 : 1 + demo_size.insider_issuers]
    accessions = AccessionCounter()
    filings = filings_of_universe(
        stage_rng(seed, "fundamentals"), universe, history, accessions, restating
    )
    form4s = build_form4_filings(
        stage_rng(seed, "insiders"), universe, history, insider_issuers, accessions
    )
    insider_issuer = next(
        i for i in insider_issuers if any(f.derivative for f in form4s if f.issuer_cik == i.cik10)
    )
    form4s = add_amendment(form4s, insider_issuer, accessions, as_of)
    holdings_rng = stage_rng(seed, "holdings")
    managers = build_managers(holdings_rng, demo_size.managers)
    plain = universe.special["plain"]
    thirteen_fs = build_13f_filings(
        holdings_rng,
        universe,
        history,
        managers,
        demo_size.holdings_per_manager,
        plain,
        accessions,
    )
    thirteen_fs, amendments = add_amendments(
        holdings_rng, universe, history, thirteen_fs, managers[0], plain, accessions
    )
    scenarios = build_scenarios(
        universe,
        history,
        restating=restating,
        restatement=filings[restating.entity_id],
        insider_issuer=insider_issuer,
        manager=managers[0],
        thirteen_fs=thirteen_fs,
        amendments=amendments,
        memberships=market.memberships,
    )
    check_manifest(scenarios, market.universe, market.history, market.memberships)
    return Demo(market, filings, form4s, thirteen_fs, scenarios)


def write_demo(demo: Demo, landing_dir: Path, demo_dir: Path) -> DemoResult:
    """Write ``demo`` into ``landing_dir`` in the publishers' formats, and its manifest
    ``demo_dir/scenarios.json``; every file's bytes are fixed by the demo alone.

    The market's CSV files are written on a thread of their own while the SEC documents are
    built (Arrow writes CSV without holding the GIL), and the SEC documents on worker threads
    as they are built (``BackgroundWriter``): on two cores the three overlap."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="demo-market") as market_thread:
        market_files = market_thread.submit(write_market, demo.market, landing_dir)
        with BackgroundWriter() as writer:
            _write_sec_documents(demo, landing_dir / "sec", writer)
        files = writer.written + market_files.result()
    scenarios_path = demo_dir / "scenarios.json"
    _write(scenarios_path, (json.dumps(demo.scenarios, indent=2, sort_keys=False) + "\n").encode())
    return DemoResult(
        landing_dir=landing_dir, scenarios_path=scenarios_path, as_of=demo.market.as_of, files=files
    )


def _write_sec_documents(demo: Demo, sec: Path, writer: BackgroundWriter) -> None:
    """Every issuer's companyfacts and submissions, every Form 4 and every 13F, into ``sec``."""
    as_of = demo.market.as_of
    form4s_by_issuer: dict[str, list[Form4Filing]] = defaultdict(list)
    for form4 in demo.form4s:
        form4s_by_issuer[form4.issuer_cik].append(form4)
    for issuer in demo.market.universe.issuers:
        issuer_filings = demo.filings[issuer.entity_id]
        writer.write(
            sec / sec_formats.companyfacts_file_name(issuer.cik),
            sec_formats.companyfacts_json_from_columns(
                issuer.cik10, issuer.name, issuer_filings.facts, LABELS
            ),
        )
        issuer_form4s = form4s_by_issuer.get(issuer.cik10, [])
        writer.write(
            sec / sec_formats.submissions_file_name(issuer.cik),
            sec_formats.submissions_json(
                _submissions(issuer, issuer_filings, issuer_form4s, as_of)
            ),
        )
    # the company list as a fetch on the last session would land it: each issuer's tickers of
    # that day (the vendor's security master covers every demo issuer, so its rows win)
    listed = [
        (int(issuer.cik), issuer.name, ticker, exchange)
        for issuer in demo.market.universe.issuers
        for ticker, exchange in _listed_tickers(issuer, as_of)
    ]
    writer.write(
        sec / sec_formats.company_list_file_name(as_of), sec_formats.company_list_json(listed)
    )
    for form4 in demo.form4s:
        writer.write(sec / sec_formats.form4_file_name(form4), sec_formats.form4_xml(form4))
    for filing in demo.thirteen_fs:
        primary, table = sec_formats.form13f_file_names(filing)
        writer.write(sec / primary, sec_formats.form13f_primary_doc_xml(filing))
        writer.write(sec / table, sec_formats.form13f_information_table_xml(filing))


def write_market(market: Market, landing_dir: Path) -> int:
    """The market's CSV landing files (prices by year, corporate actions, security master,
    index membership); returns how many files were written."""
    history = market.history
    files = len(write_prices(history, landing_dir / "prices"))
    write_corporate_actions(history, landing_dir / "corporate_actions" / "corporate_actions.csv")
    write_security_master(market.universe, landing_dir / "security_master" / "security_master.csv")
    write_index_membership(
        market.memberships, landing_dir / "index_membership" / "index_membership.csv"
    )
    return files + 3


def generate_demo(
    landing_dir: Path,
    demo_dir: Path,
    *,
    size: str = "small",
    seed: int = DEFAULT_SEED,
    today: dt.date,
) -> DemoResult:
    """Generate the demo universe into ``landing_dir`` and write ``demo_dir/scenarios.json``.

    Prices run to the last trading day before ``today``; every filing is filed by then. Nothing
    is written when the manifest's check fails (``ScenarioError``).
    """
    return write_demo(build_demo(SIZES[size], seed, today), landing_dir, demo_dir)
