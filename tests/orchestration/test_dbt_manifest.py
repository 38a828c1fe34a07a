"""The dbt manifest parsed ahead of the definitions (``orchestration/dbt_manifest.py``): a parse
started early is waited for and stamped, a current manifest starts none, and a parse that
failed leaves the definitions to parse again (showing dbt's error)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from findata.orchestration import dbt_manifest
from findata.orchestration.dbt_manifest import (
    finish_started_parse,
    manifest_dir,
    manifest_is_current,
    parse_under_way,
    project_digest,
    start_parse,
)
from findata.settings import Settings
from tests.databases import upgraded

DBT_VARIABLES = (
    "FINDATA_WAREHOUSE",
    "FINDATA_BUILD_MEMORY_LIMIT",
    "DBT_TARGET_PATH",
    "DBT_LOG_PATH",
)


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """A new home; the dbt variables a parse sets are restored after the test."""
    for name in DBT_VARIABLES:
        original = os.environ.get(name)
        monkeypatch.setenv(name, "recorded")  # monkeypatch now restores the original
        if original is None:
            monkeypatch.delenv(name)
        else:
            monkeypatch.setenv(name, original)
    return Settings(home=tmp_path / "home")


def test_a_started_parse_is_waited_for_and_stamped(settings: Settings) -> None:
    target = manifest_dir(settings)
    start_parse(settings)
    start_parse(settings)  # one parse per target at a time
    assert parse_under_way(settings)  # a parse takes seconds
    assert finish_started_parse(target)
    assert not parse_under_way(settings)
    assert manifest_is_current(target, project_digest())
    manifest = json.loads((target / "manifest.json").read_text())
    assert any(n["resource_type"] == "model" for n in manifest["nodes"].values())
    # the build reuses this parse's partial-parse state (the definitions' own parse leaves one)
    assert (target / "partial_parse.msgpack").exists()
    assert os.environ["FINDATA_WAREHOUSE"] == str(settings.warehouse_path)
    # a current manifest: nothing to start, nothing to wait for
    start_parse(settings)
    assert not finish_started_parse(target)


def test_a_failed_parse_is_not_stamped(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dbt_manifest, "DBT_EXECUTABLE", Path("/bin/false"))
    target = manifest_dir(settings)
    start_parse(settings)
    assert not finish_started_parse(target)
    assert not manifest_is_current(target, project_digest())


def _refresh_on_a_new_home(tmp_path: Path, spy: str) -> str:
    """What a forced ``run_refresh`` on a new home (its control plane migrated) prints, in a
    process of its own, after ``spy`` (code that replaces a function of ``dbt_manifest`` with
    one that prints, then calls ``stop()``: the parse killed, the process ended)."""
    upgraded(Settings(home=tmp_path).control_plane_url)
    code = (
        "import sys\n"
        "from findata.orchestration import dbt_manifest\n"
        "from findata.orchestration.refresh import run_refresh\n"
        "from findata.settings import get_settings\n"
        "def stop():\n"
        "    for parse in dbt_manifest._started.values():\n"
        "        parse.process.kill()\n"
        "        parse.process.wait()\n"
        "    raise SystemExit(0)\n"
        f"{spy}"
        "run_refresh(get_settings(), force=True)\n"
    )
    env = {**os.environ, "FINDATA_HOME": str(tmp_path), "DAGSTER_HOME": str(tmp_path / "dagster")}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return out.stdout


def test_a_refresh_starts_the_parse_before_importing_dagster(tmp_path: Path) -> None:
    """``run_refresh`` on a new home: the parse is under way before Dagster is imported."""
    spy = (
        "started = dbt_manifest.start_parse\n"
        "def spy(settings):\n"
        "    started(settings)\n"
        "    print('dagster imported when the parse started:', 'dagster' in sys.modules)\n"
        "    stop()\n"
        "dbt_manifest.start_parse = spy\n"
    )
    out = _refresh_on_a_new_home(tmp_path, spy)
    assert "dagster imported when the parse started: False" in out, out


def test_a_refresh_starts_the_checks_workers_while_the_parse_runs(tmp_path: Path) -> None:
    """On a new home the definitions wait for the parse: the contract checks' workers (their
    helper imports Great Expectations, for seconds) are started by then, not later beside the
    whole build's dbt; the refresh's own process does not import Great Expectations."""
    spy = (
        "from findata.orchestration.checks import workers\n"
        "def spy(target):\n"
        "    print('workers started when the parse is waited for:', workers._helper is not None)\n"
        "    print('imported here:', 'great_expectations' in sys.modules)\n"
        "    stop()\n"
        "dbt_manifest.finish_started_parse = spy\n"
    )
    out = _refresh_on_a_new_home(tmp_path, spy)
    assert "workers started when the parse is waited for: True" in out, out
    assert "imported here: False" in out, out
