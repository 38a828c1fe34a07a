"""Fetch the SEC's public files into landing: what ``findata sec fetch`` and the fetch assets
run.

A fetch covers a range of filing days and a universe of companies (``universe.py``):

1. the company list (``company_tickers_exchange.json``), which turns tickers and exchanges into
   CIKs and, landed whole as ``landing/sec/company_tickers/company_tickers_exchange.YYYYMMDD.json``
   on each day it changed, is the history of the SEC's tickers (the security master's SEC rows);
2. each day's form index, kept under ``$FINDATA_HOME/fetch/sec/daily-index`` (a day without one
   — a weekend, a holiday — is settled once it is two days old; a later day is asked again);
3. submissions (``landing/sec/submissions/CIK##########.json`` and its ``filings.files``
   pages) of each company in the universe never fetched, and of each that filed since;
   companyfacts (``landing/sec/companyfacts``) of each never fetched and each that filed a
   10-K or 10-Q (or an amendment) since. With no universe given, a first load takes both from
   the bulk archives (``submissions.zip``, ``companyfacts.zip``) instead of a request per company;
4. each Form 4 (``landing/sec/form4/<accession>_<document>.xml``) and 13F-HR
   (``landing/sec/13f/<accession>/primary_doc.xml`` and ``infotable.xml``) in the indexes, found
   through the filing's folder listing (``index.json``).

Every body is checked before it lands (``bodies.py``) and lands by an atomic rename from
``fetch/sec/tmp``; the manifest (``manifest.py``) records it after, so a killed fetch resumes with
what is missing, and a second fetch asks only for what may have changed (conditionally).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shutil
import tempfile
import threading
import zipfile
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from findata.clock import Clock, utc_today
from findata.settings import Settings
from findata.sources.edgar.bodies import Kind
from findata.sources.edgar.client import Download, EdgarClient, checked_identity
from findata.sources.edgar.form_index import IndexEntry, daily_form_index_path, read_form_index
from findata.sources.edgar.manifest import FetchedFile, FetchManifest
from findata.sources.edgar.rate_limit import SharedRateLimit
from findata.sources.edgar.universe import Universe, choose_universe, read_company_list
from findata.sources.readers.sec_company_tickers import snapshot_name

#: what ``--forms`` may name, and the form types (with amendments) each stands for
FORMS: dict[str, tuple[str, ...]] = {
    "4": ("4", "4/A"),
    "13F-HR": ("13F-HR", "13F-HR/A"),
    "10-K": ("10-K", "10-K/A"),
    "10-Q": ("10-Q", "10-Q/A"),
}
#: forms whose filing brings a company's companyfacts up to date
_FACTS_FORMS = {"10-K", "10-K/A", "10-Q", "10-Q/A"}
#: a day this many days old with no form index has none (a weekend, a holiday)
_SETTLED_AFTER_DAYS = 2
#: a first fetch with no --since covers this many days back from --until
FIRST_FETCH_DAYS = 7

Outcome = Literal["landed", "unchanged", "missing"]
#: landed paths a summary lists
LANDED_SHOWN = 200
#: the company list as last fetched, and where its snapshots land (under landing/)
COMPANY_LIST = "fetch/sec/company_tickers_exchange.json"
COMPANY_LIST_FOLDER = "sec/company_tickers"


@dataclass(frozen=True)
class FetchRequest:
    """What to fetch: filing days ``since``..``until`` (defaults: from the day after the last
    settled one, or a week back on a first fetch; to today), forms (keys of ``FORMS``), and the
    universe."""

    since: dt.date | None = None
    until: dt.date | None = None
    forms: frozenset[str] = frozenset(FORMS)
    tickers: frozenset[str] = frozenset()
    ciks: frozenset[int] = frozenset()
    exchanges: frozenset[str] = frozenset()


def request_for(
    settings: Settings,
    *,
    since: dt.date | None = None,
    until: dt.date | None = None,
    forms: frozenset[str] | None = None,
    universe: tuple[frozenset[str], frozenset[int], frozenset[str]] | None = None,
) -> FetchRequest:
    """A request for ``since``..``until``; the forms and the universe (tickers, CIKs,
    exchanges) given, else the settings' (``FINDATA_SEC_FORMS``, ``FINDATA_SEC_TICKERS``, …)."""
    chosen = frozenset(forms if forms is not None else settings.sec_forms)
    if unknown := sorted(chosen - set(FORMS)):
        raise ValueError(f"forms: {', '.join(unknown)} not one of {', '.join(FORMS)}")
    tickers, ciks, exchanges = universe or (
        frozenset(settings.sec_tickers),
        frozenset(settings.sec_ciks),
        frozenset(settings.sec_exchanges),
    )
    return FetchRequest(since, until, chosen, tickers, ciks, exchanges)


@dataclass
class FetchSummary:
    """What a fetch did; ``findata sec fetch`` prints it as JSON."""

    since: str
    until: str
    companies: int | Literal["all"]
    unknown_tickers: list[str]
    index_days: int = 0
    filings: int = 0
    files: int = 0
    bytes: int = 0
    unchanged: int = 0
    missing: int = 0
    requests: int = 0
    retries: int = 0
    not_modified: int = 0
    requests_per_second: float = 0.0
    #: paths of what landed (files, 13F folders), relative to landing
    landed: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        """The summary as a JSON object: the first ``LANDED_SHOWN`` landed paths, sorted (a bulk
        load lands hundreds of thousands), and how many more."""
        data = asdict(self)
        landed = sorted(path.removeprefix("landing/") for path in self.landed)
        data["landed"] = landed[:LANDED_SHOWN]
        data["landed_not_shown"] = len(landed[LANDED_SHOWN:])
        return data


class SecFetch:
    """One fetch: a client, the manifest, and where files land."""

    def __init__(
        self, settings: Settings, clock: Clock, *, sleep: Callable[[float], None] | None = None
    ) -> None:
        identity = checked_identity(settings.sec_user_agent)
        self.settings = settings
        self.clock = clock
        self.home = settings.home_dir
        self.state = settings.fetch_dir / "sec"
        self.state.mkdir(parents=True, exist_ok=True)
        self.tmp = _own_temp_folder(self.state / "tmp")
        self.manifest = FetchManifest(self.state / "manifest.sqlite")
        self.limit = SharedRateLimit(
            self.state / "rate.sqlite",
            settings.sec_requests_per_second,
            settings.sec_lowered_minutes * 60,
        )
        kwargs = {"sleep": sleep} if sleep else {}
        self.client = EdgarClient(identity, self.limit, retries=settings.sec_retries, **kwargs)
        self.www = settings.sec_www_url.rstrip("/")
        self.data = settings.sec_data_url.rstrip("/")
        self._landed: list[str] = []
        self._unchanged = 0
        self._bytes = 0
        self._tally_lock = threading.Lock()

    def close(self) -> None:
        """Close the client, the rate limit and the manifest."""
        self.client.close()
        self.limit.close()
        self.manifest.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _tally(self, *, landed: str | None = None, size: int = 0, unchanged: int = 0) -> None:
        with self._tally_lock:
            if landed is not None:
                self._landed.append(landed)
            self._bytes += size
            self._unchanged += unchanged

    # -- the steps --------------------------------------------------------------------------

    def run(self, request: FetchRequest) -> FetchSummary:
        """Fetch what ``request`` covers; the summary."""
        today = utc_today(self.clock)
        until = request.until or today
        if until > today:
            raise ValueError(f"--until {until} is after today ({today})")
        last = self.manifest.last_index_day()
        since = request.since or (
            min(last + dt.timedelta(days=1), until)
            if last
            else until - dt.timedelta(days=FIRST_FETCH_DAYS - 1)
        )
        if since > until:
            raise ValueError(f"--since {since} is after --until {until}")
        universe = self._universe(request, today)
        forms = {form for name in request.forms for form in FORMS[name]}
        entries = [e for e in self._index_entries(since, until, today) if universe.covers(e.cik)]
        wanted = [e for e in entries if e.form in forms]
        self._companies(universe, wanted, facts="10-K" in request.forms or "10-Q" in request.forms)
        filings = self._filings(e for e in wanted if e.form not in _FACTS_FORMS)
        counts = self.client.counts
        days = (until - since).days + 1
        return FetchSummary(
            since=since.isoformat(),
            until=until.isoformat(),
            companies="all" if universe.ciks is None else len(universe.ciks),
            unknown_tickers=list(universe.unknown_tickers),
            index_days=days,
            filings=filings,
            files=len(self._landed),
            bytes=self._bytes,
            unchanged=self._unchanged,
            missing=counts.missing,
            requests=counts.requests,
            retries=counts.retries,
            not_modified=counts.not_modified,
            requests_per_second=round(1000 / self.limit.interval_ms(), 3),
            landed=self._landed,
        )

    def _universe(self, request: FetchRequest, today: dt.date) -> Universe:
        """The company list, fetched (if changed) and landed as the day's snapshot; the
        universe the request names in it."""
        url = f"{self.www}/files/company_tickers_exchange.json"
        listed = None
        if self._fetch(url, Kind.JSON, COMPANY_LIST, True) != "missing":
            self._land_company_list(today)
            listed = read_company_list(self.home / COMPANY_LIST)
        return choose_universe(
            listed, ciks=request.ciks, tickers=request.tickers, exchanges=request.exchanges
        )

    def _land_company_list(self, today: dt.date) -> None:
        """Land the company list as ``today``'s snapshot when it differs from the latest one
        landed: the snapshots are the only history of tickers the SEC gives (a ticker is known
        listed from the first snapshot that has it), so each change is kept, whatever the
        universe."""
        folder = self.home / "landing" / COMPANY_LIST_FOLDER
        current = (self.home / COMPANY_LIST).read_bytes()
        landed = sorted(folder.glob("company_tickers_exchange.*.json"))
        if landed and landed[-1].read_bytes() == current:
            return
        target = folder / snapshot_name(today)
        staged = self.tmp / _temp_name()
        staged.write_bytes(current)
        self._place(staged, target)
        self._tally(landed=str(target.relative_to(self.home)), size=len(current))

    def _index_entries(self, since: dt.date, until: dt.date, today: dt.date) -> list[IndexEntry]:
        """Every entry of the form indexes of ``since``..``until``, fetching those not settled."""
        entries: list[IndexEntry] = []
        day = since
        while day <= until:
            local = f"fetch/sec/daily-index/form.{day:%Y%m%d}.idx"
            status = self.manifest.index_day(day)
            if status is None:
                url = f"{self.www}{daily_form_index_path(day)}"
                # a 404 settles nothing by itself: a recent day's index may come later
                outcome = self._fetch(url, Kind.FORM_INDEX, local, False, ask_missing=True)
                if outcome == "missing":
                    if (today - day).days >= _SETTLED_AFTER_DAYS:
                        self.manifest.record_index_day(day, "none", 0)
                else:
                    day_entries = read_form_index(self.home / local)
                    self.manifest.record_index_day(day, "fetched", len(day_entries))
                    entries += day_entries
            elif status == "fetched":
                entries += read_form_index(self.home / local)
            day += dt.timedelta(days=1)
        return entries

    def _companies(self, universe: Universe, wanted: list[IndexEntry], *, facts: bool) -> None:
        """Submissions and companyfacts of the companies new to the fetch or that filed."""
        filed = {e.cik for e in wanted}
        filed_facts = {e.cik for e in wanted if e.form in _FACTS_FORMS}
        if universe.ciks is None:
            # a first load only: later fetches keep companies current by what they file
            self._bulk("submissions")
            if facts:
                self._bulk("companyfacts")
            new_submissions, new_facts = set(), set()
        else:
            # a company never fetched (but not one the SEC answered 404, until it files)
            new_submissions = {
                cik
                for cik in universe.ciks - self.manifest.fetched_ciks("sec/submissions")
                if not self.manifest.is_missing(f"{self.data}/submissions/CIK{cik:010d}.json")
            }
            new_facts = universe.ciks - self.manifest.fetched_ciks("sec/companyfacts")
        self._each(lambda cik: self._submissions(cik), sorted(filed | new_submissions))
        if facts:
            # a company the SEC has no facts for (404) is asked again once it files a 10-K/10-Q
            new_facts = {cik for cik in new_facts if not self.manifest.is_missing(self._facts(cik))}
            self._each(
                lambda cik: self._fetch(
                    self._facts(cik),
                    Kind.JSON,
                    f"landing/sec/companyfacts/CIK{cik:010d}.json",
                    True,
                ),
                sorted(filed_facts | new_facts),
            )

    def _facts(self, cik: int) -> str:
        """The URL of a company's companyfacts."""
        return f"{self.data}/api/xbrl/companyfacts/CIK{cik:010d}.json"

    def _submissions(self, cik: int) -> None:
        """A company's submissions JSON and the continuation pages it lists."""
        name = f"CIK{cik:010d}.json"
        path = f"landing/sec/submissions/{name}"
        if self._fetch(f"{self.data}/submissions/{name}", Kind.JSON, path, True) == "missing":
            return
        document = json.loads((self.home / path).read_bytes())
        for page in document.get("filings", {}).get("files", []):
            page_name = page["name"]
            # a page holds filings older than `recent`: it does not change once written
            self._fetch(
                f"{self.data}/submissions/{page_name}",
                Kind.JSON,
                f"landing/sec/submissions/{page_name}",
                mutable=False,
            )

    def _bulk(self, name: Literal["submissions", "companyfacts"]) -> None:
        """A first load of every company from the SEC's nightly archive ``<name>.zip`` (once:
        an archive fetched before is not asked again)."""
        archive = f"fetch/sec/bulk/{name}.zip"
        url = f"{self.www}/Archives/edgar/daily-index/bulkdata/{name}.zip"
        if self.manifest.file(url) is not None:
            return
        if self._fetch(url, Kind.ZIP, archive, mutable=False) != "landed":
            return
        with zipfile.ZipFile(self.home / archive) as members:
            for info in members.infolist():
                if info.is_dir() or not info.filename.endswith(".json"):
                    continue
                target = self.home / "landing" / "sec" / name / Path(info.filename).name
                with (
                    tempfile.NamedTemporaryFile(dir=self.tmp, delete=False) as out,
                    members.open(info) as member,
                ):
                    shutil.copyfileobj(member, out)
                self._place(Path(out.name), target)
                self._tally(landed=str(target.relative_to(self.home)), size=info.file_size)

    def _filings(self, entries: Iterable[IndexEntry]) -> int:
        """Each Form 4 and 13F-HR of ``entries`` (one per accession); how many landed."""
        by_accession = {e.accession: e for e in entries}
        outcomes = self._each(self._filing, sorted(by_accession.values(), key=lambda e: e.path))
        return sum(1 for outcome in outcomes if outcome == "landed")

    def _filing(self, entry: IndexEntry) -> Outcome:
        accession = entry.accession
        is_13f = entry.form.startswith("13F")
        landed = self.home / "landing" / "sec" / ("13f" if is_13f else "form4")
        if is_13f and (landed / accession).is_dir():
            return "unchanged"
        if not is_13f and any(landed.glob(f"{accession}_*.xml")):
            return "unchanged"
        folder = f"{self.www}/Archives/{entry.folder_url_path}"
        listing = f"fetch/sec/filings/{accession}-index.json"
        if self._fetch(f"{folder}/index.json", Kind.JSON, listing, mutable=False) == "missing":
            return "missing"
        items = json.loads((self.home / listing).read_bytes())["directory"]["item"]
        documents = sorted(i["name"] for i in items if i["name"].lower().endswith(".xml"))
        if not is_13f:
            outcomes = [
                self._fetch(
                    f"{folder}/{name}", Kind.XML, f"landing/sec/form4/{accession}_{name}", False
                )
                for name in documents
            ]
            return "landed" if "landed" in outcomes else "missing"
        tables = [name for name in documents if name.lower() != "primary_doc.xml"]
        if "primary_doc.xml" not in [d.lower() for d in documents] or len(tables) != 1:
            return "missing"  # a 13F without its information table (a notice) has no holdings
        staging = Path(tempfile.mkdtemp(dir=self.tmp))
        for name, as_name in (("primary_doc.xml", "primary_doc.xml"), (tables[0], "infotable.xml")):
            if self._download(f"{folder}/{name}", Kind.XML, staging / as_name).status == "missing":
                return "missing"
        self._place(staging, landed / accession)
        return "landed"

    # -- one file ---------------------------------------------------------------------------

    def _fetch(
        self, url: str, kind: Kind, path: str, mutable: bool, *, ask_missing: bool = False
    ) -> Outcome:
        """Land ``url`` at ``path`` (relative to home) unless the manifest says it is there:
        ``mutable`` files are asked again, conditionally; the others never once landed. A URL
        that answered 404 is not asked again unless ``ask_missing``."""
        target = self.home / path
        known = self.manifest.file(url)
        present = known is not None and target.is_file() and target.stat().st_size == known.size
        if present and not mutable:
            self._tally(unchanged=1)
            return "unchanged"
        if not (present or mutable or ask_missing) and self.manifest.is_missing(url):
            return "missing"
        conditional = known if present else None
        body = self.tmp / _temp_name()
        downloaded = self._download(url, kind, body, conditional)
        if downloaded.status == "missing":
            return "missing"
        if downloaded.status == "not_modified":
            self._tally(unchanged=1)
            return "unchanged"
        digest, size = _sha256(body), body.stat().st_size
        if present and known is not None and known.sha256 == digest:
            body.unlink()
            self._tally(unchanged=1)
            return "unchanged"
        self._place(body, target)
        if path.startswith("landing/"):  # the summary counts what landed, not the fetch's own
            self._tally(landed=path, size=size)
        self.manifest.record_file(
            FetchedFile(url, path, size, digest, downloaded.etag, downloaded.last_modified),
            self.clock.now(),
        )
        return "landed"

    def _download(
        self, url: str, kind: Kind, into: Path, known: FetchedFile | None = None
    ) -> Download:
        """``url`` into ``into`` (conditionally on ``known``'s validators); a 404 is recorded."""
        result = self.client.download(
            url,
            kind,
            into,
            etag=known.etag if known else None,
            last_modified=known.last_modified if known else None,
        )
        if result.status == "missing":
            self.manifest.record_missing(url, self.clock.now())
        return result

    def _place(self, source: Path, target: Path) -> None:
        """Move a whole file or folder into place with one rename (same file system)."""
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            if target.exists():
                shutil.rmtree(source)
                return
            os.replace(source, target)
            size = sum(p.stat().st_size for p in target.iterdir())
            self._tally(landed=str(target.relative_to(self.home)), size=size)
            return
        os.replace(source, target)

    def _each(self, work: Callable[[Any], Any], items: list[Any]) -> list[Any]:
        """``work`` on each item, ``sec_workers`` at a time (all under the one rate)."""
        if len(items) <= 1 or self.settings.sec_workers == 1:
            return [work(item) for item in items]
        with ThreadPoolExecutor(self.settings.sec_workers, thread_name_prefix="sec-fetch") as pool:
            return list(pool.map(work, items))


def _own_temp_folder(parent: Path) -> Path:
    """A folder for this process's downloads under ``parent``; the folders of processes that
    are gone (a killed fetch's half-written files) are removed."""
    parent.mkdir(parents=True, exist_ok=True)
    for folder in parent.iterdir():
        if folder.name.isdigit() and not _running(int(folder.name)):
            shutil.rmtree(folder, ignore_errors=True)
    own = parent / str(os.getpid())
    shutil.rmtree(own, ignore_errors=True)
    own.mkdir()
    return own


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _temp_name() -> str:
    return f"{os.getpid()}-{os.urandom(8).hex()}"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch_sec(
    settings: Settings,
    request: FetchRequest,
    clock: Clock,
    *,
    sleep: Callable[[float], None] | None = None,
) -> FetchSummary:
    """Run one fetch (``FetchRequest``) on ``settings``' home; its summary."""
    fetch = SecFetch(settings, clock, sleep=sleep)
    try:
        return fetch.run(request)
    finally:
        fetch.close()
