"""Settings come from FINDATA_* variables; the clock is injectable and only moves when told."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from findata.clock import ManualClock, SystemClock, get_clock, set_clock, utc_today
from findata.settings import get_settings


def test_home_defaults_to_dot_findata(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("FINDATA_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    settings = get_settings()
    assert settings.home_dir == tmp_path / ".findata"
    assert settings.landing_dir == tmp_path / ".findata" / "landing"
    assert settings.control_plane_url == f"sqlite:///{tmp_path / '.findata' / 'control.sqlite'}"
    assert settings.webhooks_allow_private is False


def test_environment_overrides(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("FINDATA_HOME", str(tmp_path / "h"))
    monkeypatch.setenv("FINDATA_DATABASE_URL", "postgresql+psycopg://127.0.0.1/findata")
    monkeypatch.setenv("FINDATA_WEBHOOKS_ALLOW_PRIVATE", "1")
    settings = get_settings()
    assert settings.published_dir == tmp_path / "h" / "published"
    assert settings.dagster_home == tmp_path / "h" / "dagster"
    assert settings.control_plane_url == "postgresql+psycopg://127.0.0.1/findata"
    assert settings.webhooks_allow_private is True


def test_manual_clock_moves_only_when_told() -> None:
    clock = ManualClock(dt.datetime(2026, 3, 31, 23, 59, tzinfo=dt.UTC))
    assert clock.now() == clock.now()
    clock.advance(dt.timedelta(minutes=2))
    assert utc_today(clock) == dt.date(2026, 4, 1)
    clock.set(dt.datetime(2030, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=5))))
    assert clock.now() == dt.datetime(2029, 12, 31, 19, tzinfo=dt.UTC)
    with pytest.raises(ValueError):
        ManualClock(dt.datetime(2026, 1, 1))


def test_process_clock_is_injectable() -> None:
    manual = ManualClock(dt.datetime(2001, 2, 3, tzinfo=dt.UTC))
    previous = set_clock(manual)
    try:
        assert get_clock() is manual
    finally:
        set_clock(previous)
    assert isinstance(get_clock(), SystemClock)
    assert get_clock().now().tzinfo is dt.UTC
