"""Old version files removed once replaced longer ago than the retention; the current one, and
the rows of the control plane, always kept."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
import sqlalchemy as sa

from findata.control_plane import schema
from findata.control_plane.database import engine_for
from findata.orchestration.retention import remove_superseded_versions
from findata.settings import Settings

T0 = dt.datetime(2026, 3, 2, 22, 30, tzinfo=dt.UTC)
#: when each version was published: the second and third replaced the one before within a day
PUBLISHED = [
    T0,
    T0 + dt.timedelta(days=1),
    T0 + dt.timedelta(days=1, hours=1),
    T0 + dt.timedelta(days=3),
]


def _home(tmp_path: Path, retention_hours: float) -> Settings:
    settings = Settings(home=tmp_path / "home", version_retention_hours=retention_hours)
    settings.published_dir.mkdir(parents=True)
    with engine_for(settings.control_plane_url).begin() as connection:
        for n, published_at in enumerate(PUBLISHED, start=1):
            (settings.published_dir / f"v{n}.duckdb").write_bytes(b"x" * 100 * n)
            connection.execute(
                sa.insert(schema.versions).values(
                    label=f"v{n}",
                    file_name=f"v{n}.duckdb",
                    run_id=f"run{n}",
                    published_at=published_at,
                    content_hash=str(n),
                    data_through={},
                    row_counts={},
                )
            )
    (settings.published_dir / "v3.duckdb.wal").write_bytes(b"w" * 7)
    return settings


def _on_disk(settings: Settings) -> list[str]:
    return sorted(p.name for p in settings.published_dir.iterdir())


def test_versions_replaced_longer_ago_than_the_retention_are_removed(tmp_path: Path) -> None:
    settings = _home(tmp_path, retention_hours=24)
    now = PUBLISHED[3] + dt.timedelta(hours=2)
    retention = remove_superseded_versions(settings, now)
    # v1 and v2 were replaced more than a day ago; v3 only two hours ago; v4 is current
    assert retention.removed == ["v1", "v2"]
    assert _on_disk(settings) == ["v3.duckdb", "v3.duckdb.wal", "v4.duckdb"]
    assert (retention.kept, retention.disk_bytes) == (2, 300 + 7 + 400)
    assert remove_superseded_versions(settings, now).removed == []  # nothing left to remove
    later = remove_superseded_versions(settings, PUBLISHED[3] + dt.timedelta(days=1))
    assert later.removed == ["v3"] and _on_disk(settings) == ["v4.duckdb"]
    with engine_for(settings.control_plane_url).connect() as connection:
        assert (
            connection.execute(sa.select(sa.func.count()).select_from(schema.versions)).scalar()
            == 4
        )


@pytest.mark.parametrize("hours", [0, 0.5])
def test_the_current_version_is_never_removed(tmp_path: Path, hours: float) -> None:
    settings = _home(tmp_path, retention_hours=hours)
    retention = remove_superseded_versions(settings, PUBLISHED[3] + dt.timedelta(days=30))
    assert retention.removed == ["v1", "v2", "v3"]
    assert _on_disk(settings) == ["v4.duckdb"] and retention.kept == 1
