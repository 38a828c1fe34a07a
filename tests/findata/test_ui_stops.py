"""``findata ui`` stops every Dagster process it started (issue 22): started in a process group of
its own, then SIGTERM to it (a container stop), SIGINT to its group (a terminal's Ctrl-C), or
SIGTERM to it when it was started with SIGINT ignored (a shell's background job, where
`dagster dev` used to ignore both signals and outlive the command): the webserver's port stops
answering, no process of the group or of its home remains, within the grace period, exit 0."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import httpx
import pytest

from findata.settings import Settings
from tests.api.server import free_port
from tests.databases import upgraded
from tests.findata.stopping import (
    command_env,
    command_group,
    port_is_free,
    processes_of_home,
    send,
    wait_answering,
    wait_group_gone,
)

GRACE = 25.0  # `dagster dev` takes about 5 s to stop its webserver, daemon and code server


@pytest.mark.parametrize(
    ("signum", "to_group", "ignore_sigint"),
    [
        (signal.SIGTERM, False, False),
        (signal.SIGINT, True, False),
        (signal.SIGTERM, False, True),
    ],
    ids=["sigterm", "sigint-group", "sigterm-started-with-sigint-ignored"],
)
def test_ui_stops_every_dagster_process(
    tmp_path: Path, signum: int, to_group: bool, ignore_sigint: bool
) -> None:
    home = (tmp_path / "home").resolve()
    port = free_port()
    url = f"http://127.0.0.1:{port}/server_info"
    env = command_env(home, GRACE)
    upgraded(Settings(home=home).control_plane_url)
    with (
        (tmp_path / "ui.log").open("wb") as output,
        command_group(
            ["ui", "--port", str(port)], env, output, ignore_sigint=ignore_sigint
        ) as process,
    ):
        wait_answering(url, process, 240)
        # findata, dagster dev, its webserver, its daemon, the code server and its gRPC server
        assert len(processes_of_home(home)) >= 6
        signalled = time.monotonic()
        send(process, signum, to_group)
        wait_group_gone(process, GRACE)
        while processes_of_home(home):  # `dagster dev`'s own group, waited for by findata
            assert time.monotonic() - signalled < GRACE, processes_of_home(home)
            time.sleep(0.1)
        assert process.returncode == 0, (tmp_path / "ui.log").read_text()[-3000:]
    with pytest.raises(httpx.TransportError):
        httpx.get(url, timeout=2)
    assert port_is_free(port)
