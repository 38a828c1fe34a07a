"""Old version files removed once replaced longer ago than the retention; the current one, and
the rows of the control plane, always kept; a part file goes with the last version reading it."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb
import pytest
import sqlalchemy as sa

from findata.contracts.datasets import Storage, load_dataset_contract
from findata.control_plane import schema
from findata.control_plane.database import engine_for
from findata.published.parts import (
    plan_parts,
    write_missing_parts,
    write_version_file,
)
from findata.published.retention import remove_superseded_versions
from findata.published.versions import version_part_files
from findata.settings import Settings
from tests.databases import upgraded

#: managers stored as history and recent parts (by their last report date)
MANAGERS = load_dataset_contract("managers").model_copy(
    update={"storage": Storage(recent_year_of="last_report_date")}
)

T0 = dt.datetime(2026, 3, 2, 22, 30, tzinfo=dt.UTC)
#: when each version was published: the second and third replaced the one before within a day
PUBLISHED = [
    T0,
    T0 + dt.timedelta(days=1),
    T0 + dt.timedelta(days=1, hours=1),
    T0 + dt.timedelta(days=3),
]


#: each version's managers (id, last report year): v2 adds a recent row to v1, v3 changes an old
#: one, v4 adds a recent one
MANAGER_ROWS = [
    [(1, 2019), (2, 2025)],
    [(1, 2019), (2, 2025), (3, 2025)],
    [(1, 2020), (2, 2025), (3, 2025)],
    [(1, 2020), (2, 2025), (3, 2025), (4, 2025)],
]


def _write_version(settings: Settings, path: Path, managers: list[tuple[int, int]]) -> set[str]:
    """A real version of one dataset (``MANAGERS``) written as publish writes it; its parts."""
    with duckdb.connect() as con:
        con.execute(
            "CREATE TABLE source AS SELECT id::BIGINT AS manager_id, 'M' || id AS manager_name, "
            "lpad(id::VARCHAR, 10, '0') AS cik, DATE '2001-03-31' AS first_report_date, "
            "make_date(year::INTEGER, 12, 31) AS last_report_date, 1::INTEGER AS filings, "
            "0::BIGINT AS latest_value_usd "
            "FROM (SELECT unnest($ids) AS id, unnest($years) AS year)",
            {"ids": [m for m, _ in managers], "years": [y for _, y in managers]},
        )
        parts = plan_parts(con, MANAGERS, "source")
        write_missing_parts(con, settings.published_dir, MANAGERS, "source", parts)
    write_version_file(path, settings.published_dir, [MANAGERS], parts)
    return {p.file for p in parts}


def _home(tmp_path: Path, retention_hours: float) -> Settings:
    settings = Settings(home=tmp_path / "home", version_retention_hours=retention_hours)
    settings.published_dir.mkdir(parents=True)
    with engine_for(upgraded(settings.control_plane_url)).begin() as connection:
        for n, published_at in enumerate(PUBLISHED, start=1):
            _write_version(settings, settings.published_dir / f"v{n}.duckdb", MANAGER_ROWS[n - 1])
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
    (settings.published_dir / "v3.duckdb.wal").write_bytes(b"")  # an empty WAL beside it
    return settings


def _on_disk(settings: Settings) -> list[str]:
    """The version files on disk (and their side files)."""
    return sorted(p.name for p in settings.published_dir.glob("v*"))


def _parts_on_disk(settings: Settings) -> set[str]:
    return {f"parts/{p.name}" for p in (settings.published_dir / "parts").iterdir()}


def _parts_read_by(settings: Settings, *labels: str) -> set[str]:
    with duckdb.connect() as con:
        for label in labels:
            con.execute(f"ATTACH '{settings.published_dir / label}.duckdb' AS {label} (READ_ONLY)")
        return {file for label in labels for file in version_part_files(con, label)}


def _bytes(settings: Settings, names: list[str]) -> int:
    return sum((settings.published_dir / name).stat().st_size for name in names)


def test_versions_replaced_longer_ago_than_the_retention_are_removed(tmp_path: Path) -> None:
    settings = _home(tmp_path, retention_hours=24)
    now = PUBLISHED[3] + dt.timedelta(hours=2)
    assert _parts_read_by(settings, "v1") & _parts_read_by(settings, "v2")  # history shared
    # 8 parts in 5 files: v2 shares v1's history and v3's recent rows, v4 v3's history
    assert len(_parts_on_disk(settings)) == 5
    retention = remove_superseded_versions(settings, now)
    # v1 and v2 were replaced more than a day ago; v3 only two hours ago; v4 is current
    assert retention.removed == ["v1", "v2"]
    assert _on_disk(settings) == ["v3.duckdb", "v3.duckdb.wal", "v4.duckdb"]
    kept = _parts_read_by(settings, "v3", "v4")
    assert _parts_on_disk(settings) == kept and len(kept) == 3
    files = ["v3.duckdb", "v3.duckdb.wal", "v4.duckdb", *kept]
    assert (retention.kept, retention.parts, retention.disk_bytes) == (
        2,
        3,
        _bytes(settings, files),
    )
    assert remove_superseded_versions(settings, now).removed == []  # nothing left to remove
    later = remove_superseded_versions(settings, PUBLISHED[3] + dt.timedelta(days=1))
    assert later.removed == ["v3"] and _on_disk(settings) == ["v4.duckdb"]
    assert _parts_on_disk(settings) == _parts_read_by(settings, "v4")
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


def test_parts_no_version_reads_are_removed(tmp_path: Path) -> None:
    """What a publish killed before its version row leaves (a version file no row names, its
    new parts, a half-written part) is gone after the next pass; what versions read stays."""
    settings = _home(tmp_path, retention_hours=24)
    orphan = _write_version(settings, tmp_path / "crashed.duckdb", [(9, 2030)])
    half = settings.published_dir / "parts" / ".staging-0a1b2c-managers__all__x.duckdb"
    half.write_bytes(b"x" * 10)
    assert orphan <= _parts_on_disk(settings) and half.exists()
    remove_superseded_versions(settings, PUBLISHED[3] + dt.timedelta(hours=2))
    assert _parts_on_disk(settings) == _parts_read_by(settings, "v3", "v4")
    assert not orphan & _parts_on_disk(settings)
