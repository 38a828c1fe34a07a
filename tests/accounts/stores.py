"""Account fixtures (a pytest plugin, loaded by tests/conftest.py): the control plane of one test
(SQLite and PostgreSQL, by ``control_plane_url``), its ``AccountStore`` and ``Billing``. Each test
module sets its own ``clock`` fixture (its own start time), which these read."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from findata.accounts.billing import Billing, RecordingProvider
from findata.accounts.store import AccountStore
from findata.clock import ManualClock
from findata.control_plane.database import engine_for
from tests.databases import upgraded


@pytest.fixture
def engine(control_plane_url: str) -> sa.Engine:
    """This test's control plane, empty and migrated."""
    return engine_for(upgraded(control_plane_url))


@pytest.fixture
def store(engine: sa.Engine, clock: ManualClock) -> AccountStore:
    """Accounts and keys on this test's control plane, on the module's clock."""
    return AccountStore(engine, clock)


@pytest.fixture
def billing(engine: sa.Engine, clock: ManualClock, store: AccountStore) -> Billing:
    """Billing with the recording payment provider."""
    return Billing(engine, clock, store, RecordingProvider())
