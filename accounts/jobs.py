"""The account jobs that run on the clock beside the API: the mail outbox sent (and retried),
invitation trials ending (reminders, billing or the return to Free) and paid periods renewed.

``findata serve`` runs them in a background thread; ``findata billing run`` and ``findata mail
send`` run one pass. Every job is idempotent and safe with several processes at once.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from dataclasses import asdict

import sqlalchemy as sa

from findata.accounts.billing import Billing, RecordingProvider
from findata.accounts.invitations import process_trial_ends
from findata.accounts.mailer import Mailer
from findata.accounts.store import AccountStore
from findata.clock import Clock
from findata.settings import Settings

log = logging.getLogger("findata.accounts.jobs")
#: trials and renewals are looked at this often (mail on every pass)
BILLING_EVERY = dt.timedelta(minutes=5)


class AccountJobs:
    """The jobs on one control plane and clock."""

    def __init__(
        self, engine: sa.Engine, clock: Clock, store: AccountStore, mailer: Mailer
    ) -> None:
        self.clock = clock
        self.store = store
        self.mailer = mailer
        self.billing = Billing(engine, clock, store, RecordingProvider())
        self._billed_at: dt.datetime | None = None

    @classmethod
    def from_settings(cls, settings: Settings, engine: sa.Engine, clock: Clock) -> AccountJobs:
        """The jobs configured by ``FINDATA_*`` settings (SMTP or .eml files)."""
        return cls(
            engine,
            clock,
            AccountStore(engine, clock),
            Mailer.from_settings(settings, engine, clock),
        )

    def run_billing(self) -> dict[str, int]:
        """Trials ending or ended, then renewals: how many of each."""
        trials = process_trial_ends(self.store.engine, self.clock, self.billing)
        return {**asdict(trials), "periods_renewed": self.billing.renew_due()}

    def run_once(self) -> dict[str, int]:
        """One pass: billing when it is due, then the outbox (so a trial's e-mail goes now)."""
        done: dict[str, int] = {}
        now = self.clock.now()
        if self._billed_at is None or now - self._billed_at >= BILLING_EVERY:
            done |= self.run_billing()
            self._billed_at = now
        done["mail_sent"] = self.mailer.send_due()
        return done

    def run(self, stop: threading.Event, poll_seconds: float) -> None:
        """Pass after pass until ``stop`` is set (a failed pass is logged and retried)."""
        while not stop.is_set():
            try:
                self.run_once()
            except Exception:
                log.exception("an account jobs pass failed; retrying")
            stop.wait(poll_seconds)
