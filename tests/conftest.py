"""Session-wide fixtures: one small demo generated and read back, shared by every test (and by
every pytest-xdist worker: ``tests/shared_builds.py``)."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from findata.clock import SystemClock, utc_today
from findata.demo.generate import DEFAULT_SEED, generate_demo
from findata.orchestration.refresh import RefreshOutcome, run_refresh
from findata.settings import get_settings
from findata.sources.landing import LandingTables, read_all_landing
from findata.sources.raw import write_raw_tables
from tests.databases import disposing_cached_engine, fresh_postgres_database, upgraded
from tests.shared_builds import BUILD_MARKS, built_once

# the API over real HTTP: session servers and their helpers; the accounts' stores
pytest_plugins = (
    "tests.api.server",
    "tests.api.dashboard.server",
    "tests.webhooks.receiver",
    "tests.accounts.stores",
)

_TEST_MODULES = pytest.StashKey[dict[str, Path]]()

FIXTURES = Path(__file__).parent / "fixtures"


@dataclass(frozen=True)
class Demo:
    """A generated small demo: where it is, its manifest, and its landing read back."""

    home: Path
    today: dt.date
    scenarios: dict[str, Any]
    tables: LandingTables

    @property
    def landing(self) -> Path:
        return self.home / "landing"


@pytest.fixture(scope="session")
def demo_today(tmp_path_factory: pytest.TempPathFactory) -> dt.date:
    """The day the shared demo is generated for (read once for the whole run, every worker's,
    so a run across midnight agrees)."""
    return built_once(tmp_path_factory, "demo-today", lambda _: utc_today(SystemClock()))[1]


@pytest.fixture(scope="session")
def small_demo(tmp_path_factory: pytest.TempPathFactory, demo_today: dt.date) -> Demo:
    """The default demo (small, default seed), generated once per test run (read-only)."""

    def generate(home: Path) -> dict[str, Any]:
        result = generate_demo(
            home / "landing", home / "demo", size="small", seed=DEFAULT_SEED, today=demo_today
        )
        return json.loads(result.scenarios_path.read_text())

    home, scenarios = built_once(tmp_path_factory, "small-demo", generate)
    return Demo(
        home=home, today=demo_today, scenarios=scenarios, tables=read_all_landing(home / "landing")
    )


@dataclass(frozen=True)
class PublishedDemo:
    """A home whose demo was refreshed once; copy it (``copy_to``) before changing it."""

    home: Path
    scenarios: dict[str, Any]
    first: RefreshOutcome

    def copy_to(self, target: Path) -> Path:
        """A copy of the home (without the Dagster instance, which the next run recreates)."""
        shutil.copytree(self.home, target, ignore=shutil.ignore_patterns("dagster", *BUILD_MARKS))
        return target


@pytest.fixture(scope="session")
def two_week_old_demo(
    demo_today: dt.date, tmp_path_factory: pytest.TempPathFactory
) -> PublishedDemo:
    """The small demo ending two weeks ago, refreshed once: tests add trading days to copies of
    it (the prices contract refuses dates after today). Built once for the pipeline and the
    end-to-end webhook tests, once per test run."""

    def build(home: Path) -> tuple[dict[str, Any], RefreshOutcome]:
        generated = generate_demo(
            home / "landing",
            home / "demo",
            size="small",
            seed=DEFAULT_SEED,
            today=demo_today - dt.timedelta(days=14),
        )
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("FINDATA_HOME", str(home))
            patch.setenv("DAGSTER_HOME", str(home / "dagster"))
            upgraded(get_settings().control_plane_url)
            first = run_refresh(get_settings())
        assert first.success and first.version, first
        return json.loads(generated.scenarios_path.read_text()), first

    home, (scenarios, first) = built_once(tmp_path_factory, "two-week-old-demo", build)
    return PublishedDemo(home, scenarios, first)


TRANSFORMS = Path(__file__).parents[1] / "transforms"


def run_dbt(warehouse: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the venv's dbt on the project with ``warehouse`` as the build database."""
    dbt = Path(sys.executable).parent / "dbt"
    env = {**os.environ, "FINDATA_WAREHOUSE": str(warehouse), "DBT_SEND_ANONYMOUS_USAGE_STATS": "0"}
    return subprocess.run(
        [
            str(dbt),
            *args,
            "--project-dir",
            str(TRANSFORMS),
            "--profiles-dir",
            str(TRANSFORMS),
            "--target-path",
            str(warehouse.parent / "dbt-target"),
            "--log-path",
            str(warehouse.parent / "dbt-logs"),
        ],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )


@pytest.fixture(scope="session")
def small_warehouse(small_demo: Demo, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small demo's build warehouse: raw tables loaded and ``dbt build`` run, once per test
    run (open it read-only, or copy it)."""

    def build(folder: Path) -> None:
        write_raw_tables(folder / "warehouse.duckdb", small_demo.tables.tables)
        result = run_dbt(folder / "warehouse.duckdb", "build")
        assert result.returncode == 0, result.stdout[-4000:]

    folder, _ = built_once(tmp_path_factory, "small-warehouse", build)
    return folder / "warehouse.duckdb"


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """The URL of a fresh PostgreSQL database of this test's own."""
    with fresh_postgres_database() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def control_plane_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty control-plane database of this test's own, on SQLite and on PostgreSQL (never
    migrated: ``upgraded(url)`` migrates it)."""
    if request.param == "sqlite":
        with disposing_cached_engine(f"sqlite:///{tmp_path}/control.sqlite") as url:
            yield url
    else:
        with fresh_postgres_database() as url:
            yield url


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> None:
    """Test modules share one namespace (no __init__.py files): refuse a second module of the
    same basename at collection, with the reason, rather than pytest's import mismatch later."""
    if file_path.name.startswith("test_") and file_path.suffix == ".py":
        seen: dict[str, Path] = parent.config.stash.setdefault(_TEST_MODULES, {})
        first = seen.setdefault(file_path.name, file_path)
        if first != file_path:
            raise pytest.UsageError(
                f"two test modules named {file_path.name}: {first}, {file_path}"
            )
