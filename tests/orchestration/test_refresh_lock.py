"""One refresh run at a time per home (``orchestration/refresh_lock.py``): the lock is held
through a refresh's build; a refresh started while it is held waits, saying who holds it, then
builds and publishes; a killed holder leaves no lock.

Real ``findata`` processes on a copy of the shared two-week-old demo home, and real processes
holding the lock."""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
from conftest import PublishedDemo

from findata.orchestration.refresh_lock import hold_refresh_lock, refresh_lock_path
from findata.published.versions import current_version_at
from findata.settings import Settings, get_settings
from tests.api.server import free_port
from tests.findata.stopping import command_env, command_group, send, wait_answering, wait_group_gone
from tests.orchestration.dagster_runs import refresh_when_dbt_logs
from tests.sources.landing_edits import add_price_day, next_session

FINDATA = Path(sys.executable).parent / "findata"

HOLDER = """
import sys
from pathlib import Path
from findata.orchestration.refresh_lock import hold_refresh_lock

with hold_refresh_lock(Path(sys.argv[1]), "run held-by-a-test", print):
    print("held", flush=True)
    sys.stdin.readline()
"""


@dataclass
class Overlap:
    """A refresh of one home probed while its dbt ran; then another started while a process
    held the lock, probed while it waited."""

    first_seen_in_dbt: bool
    lock_held_in_dbt: bool
    first_returncode: int
    first: str
    waited: bool
    running_while_held: bool
    current_while_held: str
    second: subprocess.CompletedProcess[str]
    current: str
    home: Path


def _locked(path: Path) -> bool:
    """Whether another process holds the lock ``path`` (probed without waiting)."""
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def _hold(path: Path) -> subprocess.Popen[str]:
    """A process holding the lock ``path`` until a line reaches its stdin."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return holder


def _release(holder: subprocess.Popen[str]) -> None:
    assert holder.stdin is not None
    holder.stdin.write("done\n")
    holder.stdin.flush()


def _until_logged(log: Path, text: str, process: subprocess.Popen[bytes]) -> bool:
    """Whether ``text`` appears in ``log`` before ``process`` ends (or 600 s pass)."""
    deadline = time.monotonic() + 600
    while process.poll() is None and time.monotonic() < deadline:
        if text in log.read_text():
            return True
        time.sleep(0.05)
    return text in log.read_text()


def _current(settings: Settings) -> str:
    version = current_version_at(settings.control_plane_url)
    return version.label if version else ""


@pytest.fixture(scope="module")
def overlap(two_week_old_demo: PublishedDemo, tmp_path_factory: pytest.TempPathFactory) -> Overlap:
    folder = tmp_path_factory.mktemp("refresh-lock")
    home = two_week_old_demo.copy_to(folder / "home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FINDATA_HOME", str(home))
        patch.setenv("DAGSTER_HOME", str(home / "dagster"))
        settings = get_settings()
        lock = refresh_lock_path(settings)
        day = next_session(dt.date.fromisoformat(two_week_old_demo.scenarios["as_of"]))
        entity = two_week_old_demo.scenarios["plain"]["entity_id"]
        add_price_day(settings.landing_dir, day, [entity])
        first, seen = refresh_when_dbt_logs(
            settings, b"using prices_rebuild_scope", stdout=subprocess.PIPE
        )
        held = seen and _locked(lock)
        first.communicate(timeout=600)
        published = _current(settings)

        # another day lands while a process holds the lock: the refresh waits for it
        add_price_day(settings.landing_dir, next_session(day), [entity])
        holder = _hold(lock)
        log = folder / "second.err"
        with log.open("wb") as err:
            second = subprocess.Popen([str(FINDATA), "refresh"], stdout=subprocess.PIPE, stderr=err)
            waited = _until_logged(log, "waiting for it", second)
            running = second.poll() is None
            current_while_held = _current(settings)
            _release(holder)
            out, _ = second.communicate(timeout=600)
        holder.wait(timeout=60)
        return Overlap(
            first_seen_in_dbt=seen,
            lock_held_in_dbt=held,
            first_returncode=first.returncode,
            first=published,
            waited=waited,
            running_while_held=running,
            current_while_held=current_while_held,
            second=subprocess.CompletedProcess(
                second.args, second.returncode, out.decode(), log.read_text()
            ),
            current=_current(settings),
            home=home,
        )


def test_the_lock_is_held_while_a_refresh_builds(overlap: Overlap) -> None:
    assert overlap.first_seen_in_dbt
    assert overlap.lock_held_in_dbt
    assert overlap.first_returncode == 0


def test_a_refresh_waits_for_the_lock_saying_who_holds_it_then_publishes(
    overlap: Overlap,
) -> None:
    assert overlap.waited and overlap.running_while_held
    assert "(run held-by-a-test holds" in overlap.second.stderr
    assert overlap.current_while_held == overlap.first  # nothing published meanwhile
    assert overlap.second.returncode == 0, overlap.second.stderr[-3000:]
    published = overlap.second.stdout.strip().splitlines()[-1]
    assert overlap.current == published != overlap.first


def test_contracts_check_waits_for_a_held_lock_then_checks(
    overlap: Overlap, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FINDATA_HOME", str(overlap.home))
    monkeypatch.setenv("DAGSTER_HOME", str(overlap.home / "dagster"))
    holder = _hold(refresh_lock_path(get_settings()))
    log = tmp_path / "check.err"
    with log.open("wb") as err:
        check = subprocess.Popen(
            [str(FINDATA), "contracts", "check"], stdout=subprocess.PIPE, stderr=err
        )
        waited = _until_logged(log, "(run held-by-a-test holds", check)
        running = check.poll() is None
        _release(holder)
        out, _ = check.communicate(timeout=600)
    holder.wait(timeout=60)
    assert waited and running  # not DuckDB's lock error: it waited
    assert check.returncode == 0, log.read_text()[-3000:]
    datasets = json.loads(out)["datasets"]
    assert datasets and all(result["success"] for result in datasets.values())


def test_ctrl_c_ends_a_refresh_waiting_for_the_lock_at_once(
    overlap: Overlap,
    two_week_old_demo: PublishedDemo,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FINDATA_HOME", str(overlap.home))
    monkeypatch.setenv("DAGSTER_HOME", str(overlap.home / "dagster"))
    settings = get_settings()
    day = dt.date.fromisoformat(two_week_old_demo.scenarios["as_of"])
    for _ in range(3):  # a day after the two the overlap's refreshes published
        day = next_session(day)
    add_price_day(settings.landing_dir, day, [two_week_old_demo.scenarios["plain"]["entity_id"]])
    holder = _hold(refresh_lock_path(settings))
    log = tmp_path / "refresh.err"
    with log.open("wb") as err:
        refresh = subprocess.Popen([str(FINDATA), "refresh"], stdout=subprocess.PIPE, stderr=err)
        waited = _until_logged(log, "waiting for it", refresh)
        refresh.send_signal(signal.SIGINT)
        refresh.communicate(timeout=120)  # not as long as the holder holds the lock
    still_held = holder.poll() is None
    _release(holder)
    holder.wait(timeout=60)
    assert waited and still_held
    assert refresh.returncode == 1
    assert "nothing was published and the current version stays current" in log.read_text()
    assert _current(settings) == overlap.current


def _graphql(port: int, query: str, **variables: object) -> dict[str, Any]:
    answer = httpx.post(
        f"http://127.0.0.1:{port}/graphql",
        json={"query": query, "variables": variables},
        timeout=60,
    )
    return answer.json()["data"]  # type: ignore[no-any-return]


def _run_status(port: int, run_id: str) -> str:
    query = "query R($id: ID!) { runOrError(runId: $id) { ... on Run { status } } }"
    return str(_graphql(port, query, id=run_id)["runOrError"]["status"])


def _run_messages(port: int, run_id: str) -> list[str]:
    query = (
        "query L($id: ID!) { logsForRun(runId: $id) { ... on EventConnection { events { "
        "... on MessageEvent { message } } } } }"
    )
    events = _graphql(port, query, id=run_id)["logsForRun"]["events"]
    return [event.get("message", "") for event in events]


def _lock_openers(path: Path) -> list[int]:
    """The processes that have the lock file ``path`` open."""
    found = []
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if any(Path(opened.path) == path for opened in process.open_files()):
                found.append(process.pid)
    return found


def test_a_run_waiting_for_the_lock_terminated_from_the_ui_is_canceled_and_ends(
    overlap: Overlap, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FINDATA_HOME", str(overlap.home))
    lock = refresh_lock_path(get_settings())
    holder = _hold(lock)
    port = free_port()
    # no sensor run beside the run launched here (it would wait for the lock too)
    env = command_env(overlap.home, 25.0, scheduled_refresh="false")
    with (
        (tmp_path / "ui.log").open("wb") as output,
        command_group(["ui", "--port", str(port)], env, output) as ui,
    ):
        wait_answering(f"http://127.0.0.1:{port}/server_info", ui, 240)
        launched = _graphql(
            port,
            "mutation L($p: ExecutionParams!) { launchRun(executionParams: $p) { "
            "... on LaunchRunSuccess { run { runId } } } }",
            p={
                "selector": {
                    "repositoryLocationName": "findata.orchestration.definitions",
                    "repositoryName": "__repository__",
                    "jobName": "refresh",
                },
                "runConfigData": {},
            },
        )
        run_id = launched["launchRun"]["run"]["runId"]
        deadline = time.monotonic() + 240
        while not any("waiting for it" in m for m in _run_messages(port, run_id)):
            assert time.monotonic() < deadline, _run_messages(port, run_id)
            time.sleep(0.2)
        _graphql(
            port,
            "mutation T($id: String!) { terminateRun(runId: $id) { __typename } }",
            id=run_id,
        )
        deadline = time.monotonic() + 60
        while (status := _run_status(port, run_id)) not in ("CANCELED", "FAILURE", "SUCCESS"):
            assert time.monotonic() < deadline, status
            time.sleep(0.2)
        openers = _lock_openers(lock)
        still_held = holder.poll() is None
        send(ui, signal.SIGTERM, to_group=False)
        wait_group_gone(ui, 25.0)
    _release(holder)
    holder.wait(timeout=60)
    assert status == "CANCELED"
    assert still_held and openers == [holder.pid]  # the run's process ended while it waited


def test_a_held_lock_names_its_holder_and_is_waited_for(tmp_path: Path) -> None:
    path = tmp_path / "refresh.lock"
    holder = _hold(path)
    said: list[str] = []

    def release_the_holder(message: str) -> None:
        said.append(message)
        _release(holder)

    with hold_refresh_lock(path, "run waiting", release_the_holder):
        assert holder.wait(timeout=60) == 0  # it let go: this holds the lock now
        assert path.read_text() == "run waiting"
    assert said == [
        f"the build warehouse is in use (run held-by-a-test holds {path}): waiting for it"
    ]


def test_a_killed_holder_leaves_no_lock(tmp_path: Path) -> None:
    path = tmp_path / "refresh.lock"
    holder = _hold(path)
    assert _locked(path)
    holder.kill()
    holder.wait(timeout=60)
    said: list[str] = []
    with hold_refresh_lock(path, "run after a kill", said.append):
        pass
    assert said == []  # taken at once: nothing to wait for
