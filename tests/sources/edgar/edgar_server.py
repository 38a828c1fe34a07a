"""A stand-in for EDGAR on loopback, serving its URL layout from recorded public files.

``/www/...`` stands for https://www.sec.gov and ``/data/...`` for https://data.sec.gov. What it
holds is real: submissions and companyfacts JSON as data.sec.gov served them, Form 4 documents,
and full-submission text files whose documents it serves one by one as EDGAR does. What EDGAR
generates from its filings, this server generates the same way from what it holds: a filing
folder's listing (``index.json``), each day's form index (one line per filing and filer, from the
held submissions' filing lists and the text files' headers), and the nightly bulk archives.

It behaves as EDGAR does where a fetcher must cope: a request without a declared User-Agent gets
403 and the "Undeclared Automated Tool" page; over ``limit_per_second`` requests in a second get
403 "Request Rate Threshold Exceeded"; gzip when asked; ``ETag``/``Last-Modified`` with 304 on
a conditional request; 404 for a filing that an index lists but the server does not hold. Faults
queued per path (``fail``) answer the next requests for it: ``html200`` (an HTML error page with
status 200), ``truncated`` (the first half of the body, announced as whole), ``500``, ``429``,
``404`` (not there yet: a day's index before EDGAR publishes it).
Every request is logged with its arrival time.
"""

from __future__ import annotations

import datetime as dt
import gzip
import hashlib
import io
import json
import re
import sys
import threading
import time
import zipfile
from collections import defaultdict, deque
from dataclasses import dataclass
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from findata.sources.readers.sec_sgml import read_submission_text

_IDENTITY = re.compile(r"^\S.*\s\S+@\S+\.\S+$")
_UNDECLARED = (
    b"<!DOCTYPE html><html><head><title>SEC.gov | Request Rate Threshold Exceeded</title></head>"
    b"<body><h1>Your Request Originates from an Undeclared Automated Tool</h1></body></html>"
)
_RATE_PAGE = (
    b"<!DOCTYPE html><html><head><title>SEC.gov | Request Rate Threshold Exceeded</title></head>"
    b"<body><h1>Request Rate Threshold Exceeded</h1></body></html>"
)
_MAINTENANCE = b"<!DOCTYPE html><html><body><h1>Service temporarily unavailable</h1></body></html>"
#: a fixed modification time for every file held (an HTTP date)
_LAST_MODIFIED = formatdate(1_700_000_000, usegmt=True)


@dataclass(frozen=True)
class Logged:
    """One request as the server saw it."""

    at: float
    path: str
    status: int
    user_agent: str | None
    gzip: bool


@dataclass(frozen=True)
class _Filing:
    cik: int
    company: str
    form: str
    filed: dt.date
    accession: str


class EdgarServer:
    """The stand-in; ``start()`` it, point ``FINDATA_SEC_*_URL`` at ``www_url``/``data_url``."""

    def __init__(self, *, limit_per_second: int = 10) -> None:
        self.limit_per_second = limit_per_second
        self.files: dict[str, bytes] = {}
        self.faults: dict[str, deque[str]] = defaultdict(deque)
        self.log: list[Logged] = []
        self._filings: list[_Filing] = []
        self._arrivals: deque[float] = deque()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    # -- what it holds ---------------------------------------------------------------------

    def add_submissions(self, path: Path) -> None:
        """A company's submissions JSON (or a continuation page) as data.sec.gov served it; its
        filings go into the form indexes."""
        body = path.read_bytes()
        self.files[f"/data/submissions/{path.name}"] = body
        document = json.loads(body)
        recent = document["filings"]["recent"] if "filings" in document else document
        if "filings" not in document:
            return  # a page: its company's main file names the company
        for i, accession in enumerate(recent["accessionNumber"]):
            self._filings.append(
                _Filing(
                    cik=int(document["cik"]),
                    company=document["name"],
                    form=recent["form"][i],
                    filed=dt.date.fromisoformat(recent["filingDate"][i]),
                    accession=accession,
                )
            )

    def add_companyfacts(self, path: Path) -> None:
        """A company's companyfacts JSON."""
        self.files[f"/data/api/xbrl/companyfacts/{path.name}"] = path.read_bytes()

    def add_document(self, cik: int, accession: str, path: Path, name: str) -> None:
        """One document of a filing folder (a Form 4's XML)."""
        folder = f"/www/Archives/edgar/data/{cik}/{accession.replace('-', '')}"
        self.files[f"{folder}/{name}"] = path.read_bytes()

    def add_submission_text(self, path: Path) -> None:
        """A full-submission text file: its documents become the filing folder, its header an
        index line."""
        text = read_submission_text(path)
        cik = int(text.header["CENTRAL INDEX KEY"])
        folder = f"/www/Archives/edgar/data/{cik}/{text.accession.replace('-', '')}"
        self.files[f"{folder}/{text.accession}.txt"] = path.read_bytes()
        for document in text.documents:
            if document.filename:
                self.files[f"{folder}/{document.filename}"] = document.content
        assert text.submission_type and text.filed
        self._filings.append(
            _Filing(
                cik,
                text.header["COMPANY CONFORMED NAME"],
                text.submission_type,
                text.filed,
                text.accession,
            )
        )

    def add_file(self, url_path: str, body: bytes) -> None:
        """Any other file at ``url_path`` (``/www/files/company_tickers_exchange.json``)."""
        self.files[url_path] = body

    def fail(self, url_path: str, *faults: str) -> None:
        """Answer the next requests for ``url_path`` with ``faults``, one each."""
        self.faults[url_path].extend(faults)

    # -- what it generates ------------------------------------------------------------------

    def _form_index(self, day: dt.date) -> bytes | None:
        filings = sorted(
            (f for f in self._filings if f.filed == day), key=lambda f: (f.form, f.company)
        )
        if not filings:
            return None
        lines = [
            "Description:           Daily Index of EDGAR Dissemination Feed by Form Type",
            f"Last Data Received:    {day:%b %d, %Y}",
            "Comments:              webmaster@sec.gov",
            "Anonymous FTP:         ftp://ftp.sec.gov/edgar/",
            " ",
            " ",
            " ",
            " ",
            "Form Type   Company Name                                                  CIK"
            "         Date Filed  File Name",
            "-" * 141,
        ]
        for f in filings:
            lines.append(
                f"{f.form:<12}{f.company:<62}{f.cik:<12}{day:%Y%m%d}    "
                f"{'edgar/data/' + str(f.cik) + '/' + f.accession + '.txt':<52}"
            )
        return ("\n".join(lines) + "\n").encode("latin-1")

    def _listing(self, folder: str) -> bytes | None:
        names = sorted(p[len(folder) + 1 :] for p in self.files if p.startswith(folder + "/"))
        if not names:
            return None
        items = [
            {"last-modified": "2023-11-14 09:38:54", "name": n, "type": "file", "size": ""}
            for n in names
        ]
        return json.dumps(
            {"directory": {"item": items, "name": folder[4:], "parent-dir": ""}}
        ).encode()

    def _bulk(self, prefix: str) -> bytes:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for path, body in sorted(self.files.items()):
                if path.startswith(prefix):
                    archive.writestr(path.rsplit("/", 1)[1], body)
        return buffer.getvalue()

    def body(self, path: str) -> bytes | None:
        """What ``path`` answers (None: 404)."""
        if path in self.files:
            return self.files[path]
        day = re.fullmatch(r"/www/Archives/edgar/daily-index/\d{4}/QTR\d/form\.(\d{8})\.idx", path)
        if day:
            text = day.group(1)
            return self._form_index(dt.date(int(text[:4]), int(text[4:6]), int(text[6:])))
        if path.endswith("/index.json") and path.startswith("/www/Archives/edgar/data/"):
            return self._listing(path[: -len("/index.json")])
        if path == "/www/Archives/edgar/daily-index/bulkdata/submissions.zip":
            return self._bulk("/data/submissions/")
        if path == "/www/Archives/edgar/daily-index/bulkdata/companyfacts.zip":
            return self._bulk("/data/api/xbrl/companyfacts/")
        return None

    # -- serving ----------------------------------------------------------------------------

    def start(self) -> EdgarServer:
        """Serve on a free loopback port, in a thread."""
        self._server = _QuietServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        """Stop serving."""
        if self._server:
            self._server.shutdown()
            self._server.server_close()

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def www_url(self) -> str:
        """Where https://www.sec.gov stands."""
        return f"{self.base_url}/www"

    @property
    def data_url(self) -> str:
        """Where https://data.sec.gov stands."""
        return f"{self.base_url}/data"

    def requests_for(self, path: str) -> list[Logged]:
        """The logged requests of ``path``."""
        return [entry for entry in self.log if entry.path == path]

    def _over_limit(self, now: float) -> bool:
        with self._lock:
            while self._arrivals and self._arrivals[0] <= now - 1.0:
                self._arrivals.popleft()
            self._arrivals.append(now)
            return len(self._arrivals) > self.limit_per_second

    def _next_fault(self, path: str) -> str | None:
        with self._lock:
            queue = self.faults.get(path)
            return queue.popleft() if queue else None


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        """A client closing its kept-alive connection is not an error worth printing."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)  # type: ignore[arg-type]


def _handler(server: EdgarServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            """Quiet: the server keeps its own log."""

        def do_GET(self) -> None:
            now = time.monotonic()
            agent = self.headers.get("User-Agent")
            wants_gzip = "gzip" in (self.headers.get("Accept-Encoding") or "")
            path = self.path.split("?", 1)[0]
            status, body, headers = self._answer(path, agent, now)
            gzipped = wants_gzip and status == 200 and len(body) > 0
            if gzipped:
                body = gzip.compress(body, mtime=0)
                headers["Content-Encoding"] = "gzip"
            with server._lock:
                server.log.append(Logged(time.monotonic(), path, status, agent, gzipped))
            self.send_response(status)
            headers.setdefault("Content-Length", str(len(body)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def _answer(
            self, path: str, agent: str | None, now: float
        ) -> tuple[int, bytes, dict[str, str]]:
            html = {"Content-Type": "text/html"}
            if not agent or not _IDENTITY.match(agent):
                return 403, _UNDECLARED, html
            if server._over_limit(now):
                return 403, _RATE_PAGE, html
            fault = server._next_fault(path)
            if fault == "429":
                return 429, _RATE_PAGE, {**html, "Retry-After": "1"}
            if fault == "500":
                return 500, _MAINTENANCE, html
            if fault == "404":
                return 404, b"<html><body>Not Found</body></html>", html
            if fault == "html200":
                return 200, _MAINTENANCE, html
            body = server.body(path)
            if body is None:
                return 404, b"<html><body>Not Found</body></html>", html
            etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
            validators = {"ETag": etag, "Last-Modified": _LAST_MODIFIED}
            if self.headers.get("If-None-Match") == etag:
                return 304, b"", validators
            if fault == "truncated":
                return 200, body[: len(body) // 2], validators
            return 200, body, {**validators, "Content-Type": "application/octet-stream"}

    return Handler


FIXTURES = Path(__file__).parents[2] / "fixtures"
REAL = FIXTURES / "xbrl-json"
EDGAR = FIXTURES / "sec-edgar"
IDENTITY = "findata tests tests@example.com"
TESLA, MARVELL, LTS = 1318605, 1835632, 1894188
#: Tesla's Form 4 of 2021-12-16 (Elon Musk's sales), held with its document
TESLA_FORM4 = "0000899243-21-048676"
LTS_13F = FIXTURES / "13f" / "lts-one-management_2023q3" / "0001894188-23-000007.txt"


def serve_recorded(limit_per_second: int = 1000) -> EdgarServer:
    """The stand-in, started, holding the recorded files the tests fetch: Tesla's and
    Marvell's submissions, Marvell's companyfacts, Tesla's Form 4 of 2021-12-16, LTS One's 13F
    of 2023-11-14, the company list."""
    server = EdgarServer(limit_per_second=limit_per_second)
    for name in ("CIK0001318605.json", "CIK0001318605-submissions-001.json", "CIK0001835632.json"):
        server.add_submissions(REAL / "submissions" / name)
    server.add_companyfacts(REAL / "companyfacts" / "CIK0001835632.json")
    server.add_document(
        TESLA, TESLA_FORM4, FIXTURES / "form4" / f"{TESLA_FORM4}_doc4.xml", "doc4.xml"
    )
    server.add_submission_text(LTS_13F)
    ticker_list = EDGAR / "www" / "files" / "company_tickers_exchange.json"
    server.add_file("/www/files/company_tickers_exchange.json", ticker_list.read_bytes())
    return server.start()


def stand_in_environment(server: EdgarServer, home: Path, rate: float = 10) -> dict[str, str]:
    """The settings, as environment variables, that point ``home``'s fetch at ``server``."""
    return {
        "FINDATA_HOME": str(home),
        "FINDATA_SEC_USER_AGENT": IDENTITY,
        "FINDATA_SEC_WWW_URL": server.www_url,
        "FINDATA_SEC_DATA_URL": server.data_url,
        "FINDATA_SEC_REQUESTS_PER_SECOND": str(rate),
    }
