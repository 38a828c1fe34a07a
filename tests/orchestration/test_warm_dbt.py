"""The warm dbt server (``orchestration/warm_dbt.py``): a process that started it runs its dbt
commands in the server's already-imported children, with the same output and exit status as
``dbt``; any other process's ``findata-dbt`` is plain dbt; an interrupt reaches the command;
the server ends with the process that started it.

Real dbt, real DuckDB, real processes: the owner is a Python process of its own, as a refresh
is. Which process ran a command is read from dbt's own JSON log lines (``info.pid``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest

from findata.orchestration.warm_dbt import DBT, SERVER_ENV, VALIDATED

# the owner: runs its commands before and after starting the server, and one through a
# grandchild (a process it started, which runs findata-dbt itself); prints what each did
OWNER = """
import json, subprocess, sys
from findata.orchestration import warm_dbt

client, ls = str(warm_dbt.CLIENT), sys.argv[1:]

def run(args, via_grandchild=False):
    if via_grandchild:
        # a process this one started runs findata-dbt itself, and says its pid last on stderr
        args = [sys.executable, "-c", "import subprocess, sys; "
                "p = subprocess.Popen(sys.argv[1:]); print(p.pid, file=sys.stderr); "
                "sys.exit(p.wait())", client, *args]
    else:
        args = [client, *args]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = process.communicate()
    return {"pid": process.pid, "code": process.returncode, "out": out.decode(),
            "err": err.decode()}

done = {"before": run(ls)}
warm_dbt.start_warm_dbt()
done.update(warm=run(ls), again=run(ls), bad=run(["--no-such-option"]),
            grandchild=run(ls, via_grandchild=True), server=warm_dbt._server.pid,
            env=__import__("os").environ[warm_dbt.SERVER_ENV])
print(json.dumps(done), flush=True)
__import__("os")._exit(0)  # as a killed refresh ends: no exit handler stops the server
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A dbt project of two models on a DuckDB file of its own: ``one`` quick, ``slow`` a query
    of seconds (dbt cancels a query it interrupts; one it has not started yet runs out)."""
    return _write_project(
        tmp_path_factory.mktemp("warm-dbt"),
        "warm",
        {
            "one.sql": "select 1 as x\n",
            "slow.sql": "{{ config(materialized='table') }}\n"
            "select sum(i % 7) as s from range(2000000000) as t(i)\n",
        },
    )


def _write_project(folder: Path, name: str, models: dict[str, str]) -> Path:
    """A dbt project ``name`` in ``folder`` of ``models`` (file name: text), on a DuckDB file
    of its own."""
    (folder / "models").mkdir(parents=True)
    (folder / "dbt_project.yml").write_text(
        f"name: {name}\nversion: '1.0'\nprofile: {name}\nmodel-paths: [models]\n"
    )
    (folder / "profiles.yml").write_text(
        f"{name}:\n  target: dev\n  outputs:\n    dev:\n      type: duckdb\n"
        f"      path: {folder / (name + '.duckdb')}\n"
    )
    for file_name, text in models.items():
        (folder / "models" / file_name).write_text(text)
    return folder


def _environment(project: Path) -> dict[str, str]:
    return {
        **os.environ,
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
        "DBT_PROFILES_DIR": str(project),
        "DBT_TARGET_PATH": str(project / "target"),
        "DBT_LOG_PATH": str(project / "logs"),
    }


def _last_printed(project: Path, env: dict[str, str], script: str, *args: str) -> Any:
    """What the Python ``script`` run with ``args`` in ``project`` printed last, as JSON."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return json.loads(done.stdout.splitlines()[-1])


def _events(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


def _pids(output: str) -> set[int]:
    return {event["info"]["pid"] for event in _events(output)}


def _listed(output: str) -> list[str]:
    return [e["info"]["msg"] for e in _events(output) if e["info"]["name"] == "PrintEvent"]


@pytest.fixture(scope="module")
def owner_run(project: Path) -> dict[str, Any]:
    """What the owner's commands did, and whether its server outlived it."""
    env = {k: v for k, v in _environment(project).items() if k != SERVER_ENV}
    result = _last_printed(project, env, OWNER, "ls", "--log-format", "json")
    try:
        psutil.Process(result["server"]).wait(timeout=60)
        result["server_ended"] = True
    except psutil.NoSuchProcess:
        result["server_ended"] = True
    except psutil.TimeoutExpired:
        result["server_ended"] = False
    return result


def test_a_command_of_the_owner_runs_in_the_servers_child_with_dbts_output(
    owner_run: dict[str, Any],
) -> None:
    before, warm, again = owner_run["before"], owner_run["warm"], owner_run["again"]
    # before the server: findata-dbt became dbt itself (the same process)
    assert _pids(before["out"]) == {before["pid"]}
    # after: another process ran each command (the server's child), one per command
    for run in (warm, again):
        assert run["code"] == 0
        (pid,) = _pids(run["out"])
        assert pid != run["pid"]
    assert _pids(warm["out"]) != _pids(again["out"])
    assert _listed(warm["out"]) == _listed(before["out"]) == ["warm.one", "warm.slow"]


def test_a_failing_command_exits_as_dbt_does(owner_run: dict[str, Any], project: Path) -> None:
    plain = subprocess.run(
        [str(DBT), "--no-such-option"],
        cwd=project,
        env=_environment(project),
        capture_output=True,
        text=True,
        check=False,
    )
    bad = owner_run["bad"]
    assert bad["code"] == plain.returncode == 2
    assert bad["err"] == plain.stderr
    assert "No such option '--no-such-option'" in bad["err"]


def test_a_process_the_owner_did_not_start_runs_plain_dbt(owner_run: dict[str, Any]) -> None:
    grandchild = owner_run["grandchild"]
    assert grandchild["code"] == 0
    assert _listed(grandchild["out"]) == ["warm.one", "warm.slow"]
    # findata-dbt became dbt itself: the server serves only its owner's children
    client = int(grandchild["err"].split()[-1])
    assert _pids(grandchild["out"]) == {client}


def test_the_server_ends_with_its_killed_owner_and_leaves_no_socket(
    owner_run: dict[str, Any],
) -> None:
    assert owner_run["server_ended"]
    _, _, socket_path = owner_run["env"].partition(":")
    assert not Path(socket_path).parent.exists()


def test_an_interrupt_reaches_the_command_and_a_stopped_server_leaves_plain_dbt(
    project: Path,
) -> None:
    # SIGINT, as dagster-dbt interrupts dbt; the owner is a process of its own, as a refresh is
    script = """
import json, os, signal, subprocess, sys
import psutil
from findata.orchestration import warm_dbt
warm_dbt.start_warm_dbt()
client = subprocess.Popen(
    [str(warm_dbt.CLIENT), "run", "--select", "slow", "--log-format", "json"],
    stdout=subprocess.PIPE, text=True,
)
child = None
for line in client.stdout:
    event = json.loads(line) if line.startswith("{") else None
    if event and event["info"]["name"] == "LogStartLine":
        child = event["info"]["pid"]
        client.send_signal(signal.SIGINT)
        break
rest = [json.loads(line) for line in client.stdout if line.startswith("{")]
interrupted = any(
    e["info"]["name"] == "MainStackTrace" and "KeyboardInterrupt" in e["info"]["msg"]
    and e["info"]["pid"] == child for e in rest
)
code = client.wait()
server, folder = warm_dbt._server.pid, os.path.dirname(os.environ[warm_dbt.SERVER_ENV])
warm_dbt.stop_warm_dbt()
after = subprocess.Popen([str(warm_dbt.CLIENT), "ls", "--log-format", "json"],
                         stdout=subprocess.PIPE, text=True)
after_pids = {json.loads(line)["info"]["pid"] for line in after.stdout if line.startswith("{")}
print(json.dumps({"client": client.pid, "child": child, "code": code,
                  "interrupted": interrupted,
                  "child_alive": psutil.pid_exists(child),
                  "server_alive": psutil.pid_exists(server),
                  "folder_left": os.path.exists(folder),
                  "after_stop_plain": after_pids == {after.pid} and after.wait() == 0}))
"""
    result = _last_printed(project, _environment(project), script)
    assert result["child"] is not None and result["child"] != result["client"]
    # dbt in the server's child was interrupted (its KeyboardInterrupt, exit 2), and the client
    # returned its status after it ended (a client that died of the signal itself exits 1 or
    # -2 and leaves dbt running)
    assert result["interrupted"]
    assert result["code"] == 2
    assert not result["child_alive"]
    # stopped (as the demo does before it serves): gone with its folder; dbt runs plain after
    assert not result["server_alive"]
    assert not result["folder_left"]
    assert result["after_stop_plain"]


# in a new interpreter: a dbt build, after what the server does before it serves (argv[1]
# "warm") or straight away; prints the classes whose JSON schema the build had to build itself
SCHEMAS_A_BUILD_BUILDS = """
import json, sys
import dbt_common.dataclass_schema as dataclass_schema
from findata.orchestration import warm_dbt

if sys.argv[1] == "warm":
    warm_dbt.prepare_dbt()
built, build_json_schema = [], dataclass_schema.build_json_schema

def recorded(cls, *args, **kwargs):
    built.append(cls.__qualname__)
    return build_json_schema(cls, *args, **kwargs)

dataclass_schema.build_json_schema = recorded
from dbt.cli.main import dbtRunner

build = dbtRunner().invoke(["build"])
print(json.dumps({"build": build.success, "built": built}))
"""


def test_the_servers_children_find_the_schemas_a_build_validates_with_already_built(
    tmp_path: Path,
) -> None:
    project = _write_project(
        tmp_path,
        "small",
        {
            "numbers.sql": "select 1 as n\n",
            "schema.yml": "version: 2\nmodels:\n  - name: numbers\n    columns:\n"
            "      - name: n\n        data_tests: [not_null]\n",
        },
    )
    env = _environment(project)
    # the project parsed once already, as a refresh's build finds it (a partial parse)
    subprocess.run([str(DBT), "parse"], cwd=project, env=env, capture_output=True, check=True)
    built = {}
    for mode in ("cold", "warm"):
        result = _last_printed(project, env, SCHEMAS_A_BUILD_BUILDS, mode)
        assert result["build"]
        built[mode] = result["built"]
    # a build in a new process builds the schemas of exactly the classes the server builds
    assert sorted(built["cold"]) == sorted(name.split(":")[1] for name in VALIDATED)
    # and none in the server's child: each was built once, by the server, before any fork
    assert built["warm"] == []
