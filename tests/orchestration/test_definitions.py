"""The Dagster definitions load and hold what the pipeline promises: every landing source and
dbt model an asset, a blocking contract check per dataset, the publish assets, schedule, sensor."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from findata.contracts.datasets import dataset_names
from findata.orchestration.definitions import defs
from findata.orchestration.landing import LANDING_SOURCES
from findata.orchestration.sensors import build_landing_sensor

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


def test_loading_the_definitions_leaves_dbt_core_to_dbts_process(tmp_path: Path) -> None:
    """dagster-dbt runs without dbt-core in the Dagster process (``dagster_dbt_lean``): dbt's
    modules (~1 s to import) are imported by the process that runs dbt alone."""
    env = {**os.environ, "FINDATA_HOME": str(tmp_path), "DAGSTER_HOME": str(tmp_path)}
    code = (
        "import sys, findata.orchestration.definitions\n"
        "from dagster_dbt.compat import DBT_PYTHON_VERSION\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'dbt'), DBT_PYTHON_VERSION)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip().splitlines()[-1] == "[] None"


def test_hiding_dbt_core_leaves_other_threads_importing_it() -> None:
    """The import guard is the importing thread's alone: a thread importing dbt meanwhile (the
    checks' library importing beside Dagster, say) is not refused."""
    code = (
        "import threading, importlib\n"
        "from findata.orchestration import dagster_dbt_lean as lean\n"
        "seen = []\n"
        "with lean._dbt_core_hidden():\n"
        "    imp = lambda: seen.append(importlib.import_module('dbt.version'))\n"
        "    t = threading.Thread(target=imp)\n"
        "    t.start(); t.join()\n"
        "    try:\n"
        "        importlib.import_module('dbt.node_types'); seen.append('imported here')\n"
        "    except ModuleNotFoundError:\n"
        "        seen.append('refused here')\n"
        "print(seen[0].__name__, seen[1])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "dbt.version refused here"
