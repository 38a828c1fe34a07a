"""The dbt manifest the definitions are made from (``orchestration/dbt_manifest.py``,
``assets/dbt.py``'s ``prepare_manifest``): a home without a current manifest parses the project
once and stamps it with the project files' hash; a current one is not parsed again; another
stamp makes it stale."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from dagster_dbt import DbtProject

from findata.orchestration.assets.dbt import PARSE_LOCK, prepare_manifest
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


def test_a_process_waits_for_the_parse_under_way_and_does_not_parse_again(
    settings: Settings,
) -> None:
    # two processes loading the definitions on a new home: the second waits for the first's
    # parse (here: this test, holding the lock and then stamping a manifest) and reads it,
    # instead of rewriting manifest.json under the first
    dbt_environment(settings)
    target = manifest_dir(settings)
    prepare_manifest(DbtProject(project_dir=TRANSFORMS, target_path=target))  # a real manifest
    digest = project_digest()
    record_parse(target, "a parse under way")
    parsed_at = (target / "manifest.json").stat().st_mtime_ns
    with open(target / PARSE_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        env = {**os.environ, "FINDATA_HOME": str(settings.home_dir)}
        loading = subprocess.Popen(
            [sys.executable, "-c", "import findata.orchestration.assets.dbt"], env=env
        )
        deadline = time.monotonic() + 120
        while not _holds_open(loading.pid, target / PARSE_LOCK):  # it is waiting for the lock
            assert loading.poll() is None, "the process did not wait for the parse under way"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        record_parse(target, digest)  # the parse it waited for is done
    assert loading.wait(timeout=120) == 0
    assert (target / "manifest.json").stat().st_mtime_ns == parsed_at  # not parsed again


def _holds_open(pid: int, path: Path) -> bool:
    """Whether process ``pid`` has ``path`` open (from /proc)."""
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            if Path(os.readlink(fd)) == path:
                return True
        except OSError:  # closed meanwhile
            continue
    return False
