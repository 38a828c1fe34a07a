"""The dbt manifest the definitions are made from (``orchestration/dbt_manifest.py``,
``assets/dbt.py``'s ``prepare_manifest``): a home without a current manifest parses the project
once and stamps it with the project files' hash; a current one is not parsed again; another
stamp makes it stale."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from dagster_dbt import DbtProject

from findata.orchestration.assets.dbt import prepare_manifest
from findata.orchestration.dbt_manifest import (
    TRANSFORMS,
    dbt_environment,
    manifest_dir,
    manifest_is_current,
    project_digest,
    record_parse,
)
from findata.settings import Settings

DBT_VARIABLES = (
    "FINDATA_WAREHOUSE",
    "FINDATA_BUILD_MEMORY_LIMIT",
    "FINDATA_BUILD_WORKERS",
    "DBT_TARGET_PATH",
    "DBT_LOG_PATH",
)


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """A new home; the dbt variables ``dbt_environment`` sets are restored after the test."""
    for name in DBT_VARIABLES:
        original = os.environ.get(name)
        monkeypatch.setenv(name, "recorded")  # monkeypatch now restores the original
        if original is None:
            monkeypatch.delenv(name)
        else:
            monkeypatch.setenv(name, original)
    return Settings(home=tmp_path / "home")


def test_a_new_home_parses_once_and_stamps_the_manifest(settings: Settings) -> None:
    dbt_environment(settings)
    target = manifest_dir(settings)
    project = DbtProject(project_dir=TRANSFORMS, profiles_dir=TRANSFORMS, target_path=target)
    assert not manifest_is_current(target, project_digest())
    prepare_manifest(project)
    assert manifest_is_current(target, project_digest())
    manifest = json.loads((target / "manifest.json").read_text())
    assert any(n["resource_type"] == "model" for n in manifest["nodes"].values())
    # the first build starts from this parse's partial-parse state (assets/dbt.py)
    assert (target / "partial_parse.msgpack").exists()
    assert os.environ["FINDATA_WAREHOUSE"] == str(settings.warehouse_path)
    parsed_at = (target / "manifest.json").stat().st_mtime_ns
    prepare_manifest(project)  # current: not parsed again
    assert (target / "manifest.json").stat().st_mtime_ns == parsed_at
    # a manifest made from other project files is stale
    record_parse(target, "another project")
    assert not manifest_is_current(target, project_digest())
