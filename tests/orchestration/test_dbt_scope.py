"""Which dbt models a build runs (``orchestration/dbt_scope.py``), on the project's own manifest;
and the dbt resource without its two start-up costs. The builds themselves (a one-day refresh
rebuilding only what reads prices, equal to a full rebuild) are in ``test_pipeline.py``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from findata.orchestration.assets import dbt as dbt_assets_module
from findata.orchestration.dbt_scope import (
    forget_dbt_build,
    plan_dbt_build,
    record_dbt_build,
)
from findata.settings import Settings
from findata.sources.landing import LANDING_SOURCES
from findata.sources.raw import landing_fingerprints, write_raw_tables

SEC_MARTS = {"fundamentals", "insider_transactions", "institutional_holdings", "managers"}
PRICE_MARTS = {"prices", "metrics", "entities"}


@pytest.fixture(scope="module")
def manifest() -> dict[str, Any]:
    return json.loads(dbt_assets_module.dbt_project.manifest_path.read_text())


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """A home whose warehouse kept a fingerprint for every landing source."""
    settings = Settings(home=tmp_path / "home")
    for name in LANDING_SOURCES:
        _land(settings, name, f"{name}-1")
    return settings


def _land(settings: Settings, source: str, fingerprint: str) -> None:
    frame = pd.DataFrame()  # only the fingerprint matters: the contract's empty tables
    tables = {table: frame for table in LANDING_SOURCES[source].tables}
    write_raw_tables(settings.warehouse_path, tables, source, fingerprint)


def test_no_record_builds_every_model_whole(settings: Settings, manifest: dict) -> None:
    scope = plan_dbt_build(settings, manifest)
    assert scope.full_refresh and scope.unchanged_models == ()
    assert scope.dbt_args() == ["build", "--full-refresh"]
    assert scope.sources == landing_fingerprints(settings.warehouse_path)
    assert set(scope.sources) == set(LANDING_SOURCES)


def test_a_changed_price_source_rebuilds_what_reads_prices_only(
    settings: Settings, manifest: dict
) -> None:
    record_dbt_build(settings, plan_dbt_build(settings, manifest))
    _land(settings, "prices", "prices-2")
    scope = plan_dbt_build(settings, manifest)
    assert not scope.full_refresh and scope.changed_sources == ("prices",)
    left = set(scope.unchanged_models)
    assert left >= SEC_MARTS and not PRICE_MARTS & left
    assert "stg_market__prices" not in left and "stg_sec__facts" in left
    assert scope.dbt_args() == [
        "build",
        "--exclude",
        " ".join(scope.unchanged_models),
        "--indirect-selection",
        "cautious",
    ]
    # once that build succeeded, the next one has nothing to run
    record_dbt_build(settings, scope)
    assert plan_dbt_build(settings, manifest).runs_nothing


def test_other_code_or_a_forced_build_rebuilds_everything(
    settings: Settings, manifest: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    record_dbt_build(settings, plan_dbt_build(settings, manifest))
    _land(settings, "prices", "prices-2")
    monkeypatch.setattr(
        "findata.orchestration.dbt_scope.code_fingerprint", lambda: ("other code", 1)
    )
    assert plan_dbt_build(settings, manifest).full_refresh
    monkeypatch.undo()
    forget_dbt_build(settings)
    assert plan_dbt_build(settings, manifest).full_refresh


def test_a_selection_runs_what_it_selects_and_records_nothing(
    settings: Settings, manifest: dict
) -> None:
    """The UI's "materialize selected": every selected model runs even if its sources did not
    change, and the record keeps saying what the last whole build read."""
    record_dbt_build(settings, plan_dbt_build(settings, manifest))
    recorded = (settings.build_dir / "dbt_built_from.json").read_bytes()
    _land(settings, "prices", "prices-2")
    scope = plan_dbt_build(settings, manifest, selection=True)
    assert not scope.runs_nothing and scope.dbt_args() == ["build"]
    record_dbt_build(settings, scope)
    assert (settings.build_dir / "dbt_built_from.json").read_bytes() == recorded
    assert plan_dbt_build(settings, manifest).changed_sources == ("prices",)


def test_marts_left_as_built_are_yielded_after_the_models_they_read(manifest: dict) -> None:
    # Dagster refuses a multi-asset's output before one it depends on (metrics before
    # fundamentals, both left as built when only Form 4s landed); the manifest's order is no
    # dependency order (a partial parse appends what it parsed again): here, reversed
    models = {
        uid: node for uid, node in manifest["nodes"].items() if node["resource_type"] == "model"
    }
    shuffled = {**manifest, "nodes": dict(reversed(list(models.items())))}
    order = [
        node["unique_id"] for node in dbt_assets_module._in_dependency_order(shuffled, set(models))
    ]
    assert sorted(order) == sorted(models)
    seen: set[str] = set()
    for uid in order:
        assert set(models[uid]["depends_on"]["nodes"]) & set(models) <= seen, uid
        seen.add(uid)
    assert order.index("model.findata.fundamentals") < order.index("model.findata.metrics")
