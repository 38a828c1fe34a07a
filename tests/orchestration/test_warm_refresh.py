"""The warm refresh server (``orchestration/warm_refresh.py``), end to end: with
``FINDATA_WARM_REFRESH_IDLE_SECONDS`` set, ``findata refresh`` runs in a child of one server per
home, which the first refresh with something to build starts and the next ones reuse; the
command prints and exits as in its own process; a refresh killed mid-build (its client's
process group) takes its child with it, leaves the current version current, and the next
refresh publishes; SIGTERM ends the server.

Real ``findata`` processes on a copy of the shared two-week-old demo home, real Dagster, dbt
and DuckDB."""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dagster as dg
import psutil
import pytest
from conftest import PublishedDemo

from findata.orchestration.warm_refresh import server_address
from findata.published.versions import current_version_at
from findata.settings import get_settings
from tests.orchestration.dagster_runs import kill_refresh_when_dbt_logs
from tests.sources.landing_edits import add_price_day, next_session

FINDATA = Path(sys.executable).parent / "findata"


@dataclass
class Refreshes:
    """What each step saw: its command's exit status, output and run's process; the server."""

    done: dict[str, subprocess.CompletedProcess[str]] = field(default_factory=dict)
    run_pids: dict[str, int] = field(default_factory=dict)
    client_pids: dict[str, int] = field(default_factory=dict)
    servers: dict[str, list[int]] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)


def _servers(home: Path) -> list[int]:
    """The refresh servers of ``home`` (their pids)."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        cmdline = process.info["cmdline"] or []
        if "warm-refresh-server" in cmdline:
            try:
                if process.environ().get("FINDATA_HOME") == str(home):
                    found.append(process.pid)
            except psutil.Error:
                continue
    return found


def _last_run_pid() -> int:
    """The process the last Dagster run of this home ran its steps in."""
    with dg.DagsterInstance.get() as instance:
        run = instance.get_runs(limit=1)[0]
        start = instance.all_logs(run.run_id, of_type=dg.DagsterEventType.RUN_START)[0]
        return int(start.dagster_event.pid)


@pytest.fixture(scope="module")
def refreshes(two_week_old_demo: PublishedDemo, tmp_path_factory: pytest.TempPathFactory) -> Any:
    home = two_week_old_demo.copy_to(tmp_path_factory.mktemp("warm-refresh") / "home")
    result = Refreshes()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FINDATA_HOME", str(home))
        patch.setenv("DAGSTER_HOME", str(home / "dagster"))
        patch.setenv("FINDATA_WARM_REFRESH_IDLE_SECONDS", "300")
        settings = get_settings()
        result.facts["address"] = server_address(settings)

        def refresh(name: str) -> None:
            client = subprocess.Popen(
                [str(FINDATA), "refresh"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            out, err = client.communicate(timeout=600)
            result.done[name] = subprocess.CompletedProcess(
                client.args, client.returncode, out, err
            )
            result.client_pids[name] = client.pid
            result.servers[name] = _servers(home)
            if (
                result.done[name].returncode == 0
                and "nothing changed" not in result.done[name].stdout
            ):
                result.run_pids[name] = _last_run_pid()

        refresh("unchanged")
        day = next_session(dt.date.fromisoformat(two_week_old_demo.scenarios["as_of"]))
        entity = two_week_old_demo.scenarios["plain"]["entity_id"]
        add_price_day(settings.landing_dir, day, [entity])
        refresh("first_day")
        day = next_session(day)
        add_price_day(settings.landing_dir, day, [entity])
        refresh("second_day")

        # killed while dbt rebuilds prices: the refresh's child (and its process group) with it
        add_price_day(settings.landing_dir, next_session(day), [entity])
        children: list[int] = []
        (server,) = result.servers["second_day"]

        def note_children() -> None:
            children.extend(
                p.pid
                for p in psutil.Process(server).children()
                if "warm-refresh-server" in p.cmdline()  # not its dbt server
            )

        result.facts["killed"] = kill_refresh_when_dbt_logs(
            settings, b"using prices_rebuild_scope", note_children
        )
        result.facts["children_at_kill"] = children
        # the server kills the child's group once it sees its client gone, and reaps the child
        _, alive = psutil.wait_procs([psutil.Process(pid) for pid in children], timeout=60)
        result.facts["children_after_kill"] = [p.pid for p in alive]
        result.facts["current_after_kill"] = current_version_at(settings.control_plane_url)
        refresh("after_kill")

        os.kill(server, signal.SIGTERM)
        psutil.Process(server).wait(timeout=120)  # not this process's child: no exit status
        result.facts["server_after_stop"] = psutil.pid_exists(server)
        result.facts["address_after_stop"] = result.facts["address"].exists()
        yield result
        for pid in _servers(home):  # a failed test's server
            os.kill(pid, signal.SIGTERM)


def test_an_unchanged_refresh_says_so_without_starting_a_server(refreshes: Refreshes) -> None:
    done = refreshes.done["unchanged"]
    assert done.returncode == 0, done.stderr
    assert "nothing changed" in done.stdout
    assert refreshes.servers["unchanged"] == []


def test_refreshes_run_in_one_servers_children_and_print_their_version(
    refreshes: Refreshes,
) -> None:
    for name in ("first_day", "second_day"):
        done = refreshes.done[name]
        assert done.returncode == 0, done.stderr
        version = done.stdout.strip().splitlines()[-1]
        assert f"published {version}" in done.stderr
    # one server, started by the first refresh, ran both in children of its own
    (server,) = refreshes.servers["first_day"]
    assert refreshes.servers["second_day"] == [server]
    for name in ("first_day", "second_day"):
        assert refreshes.run_pids[name] not in (refreshes.client_pids[name], server)
    assert len(set(refreshes.run_pids.values())) == len(refreshes.run_pids)


def test_a_killed_refresh_takes_its_child_leaves_the_version_and_the_next_publishes(
    refreshes: Refreshes,
) -> None:
    assert refreshes.facts["killed"]
    assert refreshes.facts["children_at_kill"]  # the refresh's child ran in the server
    assert refreshes.facts["children_after_kill"] == []
    second = refreshes.done["second_day"].stdout.strip().splitlines()[-1]
    assert refreshes.facts["current_after_kill"].label == second
    after = refreshes.done["after_kill"]
    assert after.returncode == 0, after.stderr
    assert after.stdout.strip().splitlines()[-1] not in ("", second)


def test_sigterm_ends_the_server_and_removes_its_socket(refreshes: Refreshes) -> None:
    assert not refreshes.facts["server_after_stop"]
    assert not refreshes.facts["address_after_stop"]
