"""The Dagster definitions load and hold what the pipeline promises: every landing source and
dbt model an asset, a blocking contract check per dataset, the publish assets, schedule, sensor."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import dagster as dg
import httpx
import pytest

from findata.contracts.datasets import dataset_names
from findata.orchestration.definitions import defs
from findata.orchestration.sensors import build_landing_sensor
from findata.settings import Settings
from findata.sources.landing import LANDING_SOURCES
from tests.api.server import free_port
from tests.databases import upgraded
from tests.findata.stopping import command_env, command_group, wait_answering

TRANSFORMS = Path(__file__).parents[2] / "transforms" / "models"


def _asset_keys() -> set[str]:
    return {key.to_user_string() for key in defs.resolve_asset_graph().get_all_asset_keys()}


def test_every_raw_table_dbt_model_and_publish_step_is_an_asset() -> None:
    keys = _asset_keys()
    raw = {f"raw/{t}" for s in LANDING_SOURCES.values() for t in s.tables}
    # a model's asset key is [its schema (the layer folder under models/), its name]
    models = {f"{p.relative_to(TRANSFORMS).parts[0]}/{p.stem}" for p in TRANSFORMS.rglob("*.sql")}
    assert raw <= keys
    assert models <= keys, models - keys
    assert {"published_version", "change_records", "data_changed_event"} <= keys


def test_each_dataset_has_a_blocking_contract_check() -> None:
    graph = defs.resolve_asset_graph()
    specs = [graph.get_check_spec(key) for key in graph.asset_check_keys]
    checks = {s.key.asset_key.to_user_string(): s for s in specs if s.name == "data_contract"}
    assert set(checks) == {f"marts/{name}" for name in dataset_names()}
    assert all(spec.blocking for spec in checks.values())


def test_schedule_and_sensor_start_the_refresh_job() -> None:
    assert defs.resolve_schedule_def("daily_refresh").job_name == "refresh"
    assert defs.resolve_sensor_def("new_landing_files").job_name == "refresh"


def test_findata_ui_runs_the_schedule_and_the_sensor_by_default(tmp_path: Path) -> None:
    """The publish's freshness policy expects a daily refresh: ``findata ui``'s daemon runs the
    schedule and the sensor unless a setting turns them off (issue 42)."""
    port = free_port()
    query = (
        "{ repositoriesOrError { ... on RepositoryConnection { nodes { "
        "schedules { name scheduleState { status } } sensors { name sensorState { status } } "
        "} } } }"
    )
    env = command_env(tmp_path / "home", 25.0)
    upgraded(Settings(home=tmp_path / "home").control_plane_url)
    with (
        (tmp_path / "ui.log").open("wb") as output,
        command_group(["ui", "--port", str(port)], env, output) as ui,
    ):
        wait_answering(f"http://127.0.0.1:{port}/server_info", ui, 240)
        answer = httpx.post(
            f"http://127.0.0.1:{port}/graphql", json={"query": query}, timeout=60
        ).json()
        # dagster dev runs in a process group of its own: stopped by findata ui, not left behind
        ui.send_signal(signal.SIGTERM)
        assert ui.wait(timeout=60) == 0
    (repository,) = answer["data"]["repositoriesOrError"]["nodes"]
    statuses = {s["name"]: s["scheduleState"]["status"] for s in repository["schedules"]}
    statuses |= {s["name"]: s["sensorState"]["status"] for s in repository["sensors"]}
    # the SEC fetch needs a declared identity (FINDATA_SEC_USER_AGENT): stopped without one
    assert statuses == {
        "daily_refresh": "RUNNING",
        "new_landing_files": "RUNNING",
        "sec_fetch_daily": "STOPPED",
        "refresh_after_sec_fetch": "STOPPED",
    }


def _default_statuses(home: Path, settings: dict[str, str | None]) -> dict[str, str]:
    """The default status of every schedule and sensor, as a process with ``settings`` (None:
    unset) in its environment loads the definitions."""
    env = {**os.environ, "FINDATA_HOME": str(home), "DAGSTER_HOME": str(home)}
    for name, value in settings.items():
        env.pop(name, None)
        if value is not None:
            env[name] = value
    code = (
        "import json\n"
        "from findata.orchestration.definitions import defs\n"
        "print(json.dumps({d.name: d.default_status.value for d in [*defs.schedules, "
        "*defs.sensors]}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(("setting", "status"), [(None, "RUNNING"), ("false", "STOPPED")])
def test_a_setting_turns_the_schedule_and_the_sensor_off(
    tmp_path: Path, setting: str | None, status: str
) -> None:
    statuses = _default_statuses(tmp_path, {"FINDATA_SCHEDULED_REFRESH": setting})
    assert (statuses["daily_refresh"], statuses["new_landing_files"]) == (status, status)


@pytest.mark.parametrize(
    ("agent", "scheduled", "status"),
    [
        ("Example Co admin@example.com", None, "RUNNING"),
        ("Example Co admin@example.com", "false", "STOPPED"),
        (None, None, "STOPPED"),
    ],
)
def test_the_sec_fetch_runs_by_default_once_the_home_says_who_it_is(
    tmp_path: Path, agent: str | None, scheduled: str | None, status: str
) -> None:
    statuses = _default_statuses(
        tmp_path, {"FINDATA_SEC_USER_AGENT": agent, "FINDATA_SCHEDULED_REFRESH": scheduled}
    )
    assert (statuses["sec_fetch_daily"], statuses["refresh_after_sec_fetch"]) == (status, status)


def test_the_sensor_skips_an_empty_landing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Running by default, the sensor must not start a refresh on a new home with nothing in
    landing (it would fail)."""
    monkeypatch.setenv("FINDATA_HOME", str(tmp_path))
    sensor = build_landing_sensor("refresh")
    assert not sensor(dg.build_sensor_context()).run_requests
    (tmp_path / "landing" / "prices").mkdir(parents=True)
    assert not sensor(dg.build_sensor_context()).run_requests
    (tmp_path / "landing" / "prices" / "a.csv").write_text("x\n")
    assert len(sensor(dg.build_sensor_context()).run_requests) == 1


def test_sensor_requests_a_run_once_per_new_landing_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FINDATA_HOME", str(tmp_path))
    (tmp_path / "landing" / "prices").mkdir(parents=True)
    (tmp_path / "landing" / "prices" / "a.csv").write_text("x\n")
    sensor = build_landing_sensor("refresh")
    first = sensor(dg.build_sensor_context())
    assert len(first.run_requests) == 1
    again = sensor(dg.build_sensor_context(cursor=first.cursor))
    assert not again.run_requests
    (tmp_path / "landing" / "prices" / "b.csv").write_text("y\n")
    third = sensor(dg.build_sensor_context(cursor=first.cursor))
    assert len(third.run_requests) == 1 and third.cursor != first.cursor


def test_dagster_validates_the_definitions(tmp_path: Path) -> None:
    env = {**os.environ, "FINDATA_HOME": str(tmp_path), "DAGSTER_HOME": str(tmp_path)}
    result = subprocess.run(
        [
            str(Path(sys.executable).parent / "dagster"),
            "definitions",
            "validate",
            "-m",
            "findata.orchestration.definitions",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Validation successful" in result.stderr + result.stdout


def test_loading_the_definitions_leaves_great_expectations_to_the_checks(tmp_path: Path) -> None:
    """Great Expectations (seconds to import) is imported where a check runs, not on load."""
    env = {**os.environ, "FINDATA_HOME": str(tmp_path), "DAGSTER_HOME": str(tmp_path)}
    code = (
        "import sys, findata.orchestration.definitions; print('great_expectations' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip().splitlines()[-1] == "False"
