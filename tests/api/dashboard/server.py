"""Dashboard fixtures (a pytest plugin, loaded by tests/conftest.py): one server per session on
the published demo (its own clock, base URL in e-mail links, and the tests' HTTPS webhook
receiver trusted), the e-mail it writes as ``.eml`` files, and a
real chromium driven by Playwright."""

from __future__ import annotations

import email
import re
import time
from collections.abc import Iterator
from email import policy
from pathlib import Path

import pytest

from findata.api.app import create_app
from findata.settings import Settings
from findata.webhooks.dev_tls import LoopbackCertificates
from findata.webhooks.worker import DeliveryWorker
from tests.api.server import RunningApi, free_port, serve, start_clock

CHROMIUM = Path("/usr/bin/chromium")
#: screenshots of every page (test artefacts, not committed)
SCREENSHOTS = Path(__file__).resolve().parents[3] / "test-artifacts" / "screenshots"


@pytest.fixture(scope="session")
def dashboard(
    published_home: Path, test_certificates: LoopbackCertificates
) -> Iterator[RunningApi]:
    """The app on the published demo, with links in e-mail pointing at it."""
    clock = start_clock()
    port = free_port()
    settings = Settings(
        home=published_home,
        base_url=f"http://127.0.0.1:{port}",
        webhooks_allow_private=True,  # UNSAFE outside tests: the receiver is on loopback
        webhooks_ca_bundle=test_certificates.ca,
    )
    with serve(create_app(settings, clock), clock, port) as running:
        yield running


def delivery_worker(running: RunningApi) -> DeliveryWorker:
    """The webhook delivery worker on the dashboard's control plane and clock."""
    state = running.app.state
    return DeliveryWorker.from_settings(state.settings, state.engine, running.clock, state.accounts)


def mail_to(running: RunningApi, address: str, kind_subject: str, timeout: float = 15) -> str:
    """The body of the newest e-mail to ``address`` whose subject contains ``kind_subject``, as
    the mailer wrote it under ``$FINDATA_HOME/mail`` (waits for the mailer, which sends right
    after the response)."""
    folder = running.app.state.settings.home_dir / "mail"
    deadline = time.monotonic() + timeout
    while True:
        for path in sorted(folder.glob("*.eml"), reverse=True) if folder.exists() else []:
            message = email.message_from_bytes(path.read_bytes(), policy=policy.default)
            if message["To"] == address and kind_subject in str(message["Subject"]):
                return message.get_body(("plain",)).get_content()  # type: ignore[union-attr]
        if time.monotonic() > deadline:
            raise AssertionError(f"no e-mail '{kind_subject}' to {address}")
        time.sleep(0.1)


def link_in(body: str) -> str:
    """The first http link of an e-mail body."""
    match = re.search(r"https?://\S+", body)
    assert match, body
    return match.group(0)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """Debian's chromium, headless, driven by Playwright (it cannot download browsers here).

    Module-scoped: Playwright's sync API keeps an asyncio loop running on the main thread while
    it is open, so a later test's ``anyio.run`` (the MCP client tests) would find a running
    loop; it must be closed when the browser tests are done."""
    from playwright.sync_api import sync_playwright

    assert CHROMIUM.exists(), "the browser tests need Debian's chromium (apt-get install chromium)"
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"],
        )  # fmt: skip
        yield launched
        launched.close()
