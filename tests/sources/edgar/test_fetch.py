"""``findata sec fetch`` against a stand-in for EDGAR on loopback (``edgar_server.py``), serving
recorded public files: what lands, what a second fetch asks, resuming a killed fetch, the one
rate across processes, refusals, bodies that are not what was asked for, and the identity."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from findata.clock import ManualClock
from findata.settings import Settings
from findata.sources.edgar.client import MissingIdentity, SecBlocked
from findata.sources.edgar.fetch import FetchRequest, fetch_sec
from findata.sources.edgar.form_index import read_form_index
from findata.sources.landing import read_form4_unit, read_submissions_unit
from tests.sources.edgar.edgar_server import (
    EDGAR,
    FIXTURES,
    IDENTITY,
    LTS,
    MARVELL,
    REAL,
    TESLA,
    TESLA_FORM4,
    EdgarServer,
    serve_recorded,
    stand_in_environment,
)

#: the day after the last filing day fetched in these tests
TODAY = dt.datetime(2023, 11, 20, 18, tzinfo=dt.UTC)


@pytest.fixture
def edgar() -> Iterator[EdgarServer]:
    server = serve_recorded()
    yield server
    server.stop()


def _settings(home: Path, server: EdgarServer, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "home": home,
        "sec_user_agent": IDENTITY,
        "sec_www_url": server.www_url,
        "sec_data_url": server.data_url,
        "sec_requests_per_second": 10,
        "sec_retries": 3,
        **overrides,
    }
    return Settings(**values)


def _landed(home: Path) -> dict[str, str]:
    landing = home / "landing"
    return {
        str(p.relative_to(landing)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(landing.rglob("*"))
        if p.is_file()
    }


#: Tesla and Marvell, and the 13F manager LTS One, on two filing days with a Form 4 and a 13F
REQUEST = FetchRequest(
    since=dt.date(2021, 12, 16),
    until=dt.date(2021, 12, 16),
    ciks=frozenset({TESLA, MARVELL, LTS}),
)


def _fetch(settings: Settings, request: FetchRequest = REQUEST, **kwargs: Any) -> dict[str, Any]:
    sleeps: list[float] = []
    summary = fetch_sec(settings, request, ManualClock(TODAY), sleep=sleeps.append, **kwargs)
    return {**summary.as_json(), "slept": sleeps}


def test_a_first_fetch_lands_the_real_files_and_a_second_asks_only_whether_they_changed(
    edgar: EdgarServer, tmp_path: Path
) -> None:
    settings = _settings(tmp_path, edgar)
    first = _fetch(settings)
    landed = _landed(tmp_path)
    assert set(landed) == {
        "sec/submissions/CIK0001318605.json",
        "sec/submissions/CIK0001318605-submissions-001.json",
        "sec/submissions/CIK0001835632.json",
        "sec/companyfacts/CIK0001835632.json",
        f"sec/form4/{TESLA_FORM4}_doc4.xml",
        f"sec/company_tickers/company_tickers_exchange.{TODAY:%Y%m%d}.json",
    }
    # byte for byte what the SEC published (gzip on the wire, decoded)
    for path, source in (
        ("sec/submissions/CIK0001318605.json", REAL / "submissions" / "CIK0001318605.json"),
        ("sec/companyfacts/CIK0001835632.json", REAL / "companyfacts" / "CIK0001835632.json"),
        (f"sec/form4/{TESLA_FORM4}_doc4.xml", FIXTURES / "form4" / f"{TESLA_FORM4}_doc4.xml"),
        (
            f"sec/company_tickers/company_tickers_exchange.{TODAY:%Y%m%d}.json",
            EDGAR / "www" / "files" / "company_tickers_exchange.json",
        ),
    ):
        assert landed[path] == hashlib.sha256(source.read_bytes()).hexdigest(), path
    assert all(entry.gzip for entry in edgar.log if entry.status == 200)
    assert all(entry.user_agent == IDENTITY for entry in edgar.log)
    # Tesla filed other Form 4s that day: the index lists them, the server does not hold them
    assert first["missing"] > 0 and first["filings"] == 1
    assert first["files"] == 6 and first["bytes"] == sum(
        (tmp_path / "landing" / p).stat().st_size for p in landed
    )
    assert first["requests"] == len(edgar.log)
    # the readers read what landed
    assert (
        read_form4_unit(tmp_path / "landing" / f"sec/form4/{TESLA_FORM4}_doc4.xml")[
            "form4_filings"
        ].loc[0, "accession"]
        == TESLA_FORM4
    )
    companies = read_submissions_unit(tmp_path / "landing" / "sec/submissions/CIK0001318605.json")[
        "sec_companies"
    ]
    assert companies.loc[0, "name"] == "Tesla, Inc."

    before = len(edgar.log)
    second = _fetch(settings)
    asked = edgar.log[before:]
    assert second["files"] == 0 and second["landed"] == [] and _landed(tmp_path) == landed
    # only what may have changed was asked again, conditionally: the company list, and the
    # submissions of the companies that filed in the window (a Form 4 each; no 10-K or 10-Q: no
    # companyfacts)
    assert sorted((e.path, e.status) for e in asked) == [
        ("/data/submissions/CIK0001318605.json", 304),
        ("/data/submissions/CIK0001835632.json", 304),
        ("/www/files/company_tickers_exchange.json", 304),
    ]


def test_an_incremental_day_fetches_that_days_filings_alone(
    edgar: EdgarServer, tmp_path: Path
) -> None:
    settings = _settings(tmp_path, edgar)
    _fetch(
        settings,
        FetchRequest(since=dt.date(2023, 11, 13), until=dt.date(2023, 11, 13), ciks=REQUEST.ciks),
    )
    before = len(edgar.log)
    # with no --since, a fetch starts the day after the last one settled
    day = _fetch(settings, FetchRequest(until=dt.date(2023, 11, 14), ciks=REQUEST.ciks))
    assert (day["since"], day["until"], day["filings"]) == ("2023-11-14", "2023-11-14", 1)
    assert "sec/13f/0001894188-23-000007" in day["landed"]
    holdings = tmp_path / "landing" / "sec/13f/0001894188-23-000007"
    assert sorted(p.name for p in holdings.iterdir()) == ["infotable.xml", "primary_doc.xml"]
    asked = [entry.path for entry in edgar.log[before:]]
    assert not any("form.20231113" in p for p in asked)
    assert sum("form.20231114" in p for p in asked) == 1
    # LTS One filed that day: its submissions are asked again (the stand-in has none: 404)
    assert "/data/submissions/CIK0001894188.json" in asked


def test_a_days_index_not_yet_published_is_asked_again_next_time(
    edgar: EdgarServer, tmp_path: Path
) -> None:
    settings = _settings(tmp_path, edgar)
    edgar.fail("/www/Archives/edgar/daily-index/2023/QTR4/form.20231114.idx", "404")
    today = dt.datetime(2023, 11, 14, 23, tzinfo=dt.UTC)
    request = FetchRequest(since=dt.date(2023, 11, 14), ciks=REQUEST.ciks)
    early = fetch_sec(settings, request, ManualClock(today), sleep=lambda _: None).as_json()
    assert early["filings"] == 0 and not any("13f" in path for path in early["landed"])
    later = fetch_sec(settings, request, ManualClock(today), sleep=lambda _: None).as_json()
    assert later["filings"] == 1 and "sec/13f/0001894188-23-000007" in later["landed"]


def test_tickers_are_found_in_the_company_list(edgar: EdgarServer, tmp_path: Path) -> None:
    summary = _fetch(
        _settings(tmp_path, edgar),
        FetchRequest(
            since=dt.date(2021, 12, 16),
            until=dt.date(2021, 12, 16),
            forms=frozenset({"4"}),
            tickers=frozenset({"tsla", "NOSUCH"}),
        ),
    )
    assert summary["companies"] == 1 and summary["unknown_tickers"] == ["NOSUCH"]
    assert f"sec/form4/{TESLA_FORM4}_doc4.xml" in summary["landed"]
    assert "sec/companyfacts/CIK0001835632.json" not in summary["landed"]


def test_the_company_list_lands_as_a_snapshot_on_each_day_it_changed(
    edgar: EdgarServer, tmp_path: Path
) -> None:
    settings = _settings(tmp_path, edgar)
    request = FetchRequest(
        since=dt.date(2021, 12, 16), until=dt.date(2021, 12, 16), ciks=REQUEST.ciks
    )
    listed = EDGAR / "www" / "files" / "company_tickers_exchange.json"
    folder = tmp_path / "landing" / "sec" / "company_tickers"

    def fetch_on(day: dt.datetime) -> list[str]:
        fetch_sec(settings, request, ManualClock(day), sleep=lambda _: None)
        return sorted(p.name for p in folder.iterdir())

    first = fetch_on(TODAY)
    assert fetch_on(TODAY + dt.timedelta(days=1)) == first  # unchanged: no new snapshot
    # the SEC drops a ticker: the change lands as that day's snapshot, the earlier one is kept
    document = json.loads(listed.read_bytes())
    document["data"] = [row for row in document["data"] if row[2] != "TSLA"]
    edgar.add_file("/www/files/company_tickers_exchange.json", json.dumps(document).encode())
    later = TODAY + dt.timedelta(days=2)
    assert fetch_on(later) == [*first, f"company_tickers_exchange.{later:%Y%m%d}.json"]
    assert (folder / first[0]).read_bytes() == listed.read_bytes()
    assert json.loads((folder / f"company_tickers_exchange.{later:%Y%m%d}.json").read_bytes()) == (
        document
    )


def test_refusals_are_retried_with_backoff_and_lower_the_shared_rate(
    edgar: EdgarServer, tmp_path: Path
) -> None:
    edgar.fail("/data/submissions/CIK0001318605.json", "429", "429")
    summary = _fetch(_settings(tmp_path, edgar))
    assert summary["retries"] == 2
    assert summary["requests_per_second"] == 2.5  # 10 halved twice, for sec_lowered_minutes
    assert len(summary["slept"]) == 2 and all(s >= 1 for s in summary["slept"])  # Retry-After
    assert "sec/submissions/CIK0001318605.json" in summary["landed"]


def test_a_blocked_address_stops_the_fetch_saying_so(tmp_path: Path) -> None:
    server = serve_recorded(
        limit_per_second=0
    )  # every request over the limit: 403, as when blocked
    try:
        with pytest.raises(SecBlocked, match="blocks an address for about ten minutes"):
            _fetch(_settings(tmp_path, server, sec_retries=2))
        assert len(server.log) == 3 and {e.status for e in server.log} == {403}
    finally:
        server.stop()


def test_bodies_that_are_not_the_file_asked_for_are_retried_never_landed(
    edgar: EdgarServer, tmp_path: Path
) -> None:
    edgar.fail("/data/submissions/CIK0001835632.json", "html200", "truncated")
    edgar.fail("/data/api/xbrl/companyfacts/CIK0001835632.json", "500")
    summary = _fetch(_settings(tmp_path, edgar))
    assert summary["retries"] == 3
    landed = _landed(tmp_path)
    for path, source in (
        ("sec/submissions/CIK0001835632.json", REAL / "submissions" / "CIK0001835632.json"),
        ("sec/companyfacts/CIK0001835632.json", REAL / "companyfacts" / "CIK0001835632.json"),
    ):
        assert landed[path] == hashlib.sha256(source.read_bytes()).hexdigest()


def test_a_truncated_bulk_archive_is_fetched_again(edgar: EdgarServer, tmp_path: Path) -> None:
    edgar.fail("/www/Archives/edgar/daily-index/bulkdata/submissions.zip", "truncated")
    # no universe: a first load takes every company from the bulk archives
    summary = _fetch(
        _settings(tmp_path, edgar),
        FetchRequest(
            since=dt.date(2021, 12, 16), until=dt.date(2021, 12, 16), forms=frozenset({"10-K"})
        ),
    )
    assert summary["retries"] == 1 and summary["companies"] == "all"
    landed = _landed(tmp_path)
    assert (
        landed["sec/submissions/CIK0001318605-submissions-001.json"]
        == hashlib.sha256(
            (REAL / "submissions" / "CIK0001318605-submissions-001.json").read_bytes()
        ).hexdigest()
    )
    assert "sec/companyfacts/CIK0001835632.json" in landed
    # the archives are a first load: a later fetch does not ask for them again
    before = len(edgar.log)
    _fetch(
        _settings(tmp_path, edgar),
        FetchRequest(
            since=dt.date(2021, 12, 16), until=dt.date(2021, 12, 16), forms=frozenset({"10-K"})
        ),
    )
    assert not any(entry.path.endswith(".zip") for entry in edgar.log[before:])


def test_no_identity_no_request(edgar: EdgarServer, tmp_path: Path) -> None:
    for agent in (None, "findata", "no-address at all"):
        with pytest.raises(MissingIdentity, match="FINDATA_SEC_USER_AGENT"):
            _fetch(_settings(tmp_path, edgar, sec_user_agent=agent))
    assert edgar.log == []
    # and the stand-in refuses a client that does not say who it is, as EDGAR does
    answer = httpx.get(f"{edgar.data_url}/submissions/CIK0001318605.json")
    assert answer.status_code == 403 and b"Undeclared Automated Tool" in answer.content


def test_a_recorded_daily_form_index_reads_whole() -> None:
    path = EDGAR / "www/Archives/edgar/daily-index/2020/QTR1/form.20200318.idx"
    entries = read_form_index(path)
    assert len(entries) == 4084
    assert sum(e.form == "4" for e in entries) == 2040
    (manager,) = [e for e in entries if e.form == "13F-HR"]
    assert manager.cik == 1760076 and manager.accession == "0001760076-20-000004"
    assert manager.company == "Global Strategic Investment Solutions, LLC"
    # the day's dissemination: mostly filed that day, some filed earlier
    assert max(e.filed for e in entries) == manager.filed == dt.date(2020, 3, 18)


# -- processes: the command, a kill and a resume, the rate across processes -----------------


def _command(
    home: Path, server: EdgarServer, *args: str, rate: float = 10
) -> subprocess.Popen[str]:
    environment = {**os.environ, **stand_in_environment(server, home, rate)}
    findata = Path(sys.executable).parent / "findata"
    return subprocess.Popen(
        [str(findata), "sec", "fetch", *args],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


ARGS = ("--since", "2021-12-16", "--until", "2021-12-16", "--ciks", f"{TESLA},{MARVELL},{LTS}")


def test_a_killed_fetch_resumes_with_what_is_missing_and_ends_as_an_uninterrupted_one(
    edgar: EdgarServer, tmp_path: Path
) -> None:
    whole, resumed = tmp_path / "whole", tmp_path / "resumed"
    command = _command(whole, edgar, *ARGS, rate=10)
    out, err = command.communicate(timeout=300)
    assert command.returncode == 0, err
    summary = json.loads(out)
    assert summary["files"] == len(_landed(whole)) == 6

    killed = _command(resumed, edgar, *ARGS, rate=4)
    deadline = time.monotonic() + 120
    while not (resumed / "landing" / "sec" / "submissions").exists():
        assert time.monotonic() < deadline and killed.poll() is None
        time.sleep(0.05)
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    partial = _landed(resumed)
    assert 0 < len(partial) < len(_landed(whole))
    before = len(edgar.log)
    again = _command(resumed, edgar, *ARGS, rate=10)
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    assert _landed(resumed) == _landed(whole)
    # what had landed whole before the kill was not fetched again (but for the one file the kill
    # may have caught between landing and the manifest's record of it)
    fetched_again = [
        e.path
        for e in edgar.log[before:]
        if e.status == 200 and Path(e.path).name in {Path(p).name for p in partial}
    ]
    assert len(fetched_again) <= 1, fetched_again
    assert not list((resumed / "fetch" / "sec" / "tmp").iterdir())


def test_one_rate_holds_across_processes_measured_at_theserve_recorded(tmp_path: Path) -> None:
    server = serve_recorded()
    try:
        fetches = [
            _command(
                tmp_path,
                server,
                "--since",
                "2021-12-10",
                "--until",
                "2021-12-20",
                "--ciks",
                str(cik),
                rate=8,
            )
            for cik in (TESLA, MARVELL)
        ]
        for fetch in fetches:
            _, err = fetch.communicate(timeout=300)
            assert fetch.returncode == 0, err
        arrivals = sorted(entry.at for entry in server.log)
        assert len(arrivals) > 20
        busiest = max(
            sum(1 for t in arrivals[i:] if t < start + 1.0) for i, start in enumerate(arrivals)
        )
        # 8 a second spaced 125 ms apart; one more at a window's edge
        assert busiest <= 9, busiest
    finally:
        server.stop()
