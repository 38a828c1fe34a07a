"""Durability of ``findata webhooks worker`` run as operators run it (a subprocess): a worker
killed mid-delivery loses nothing and sends no attempt twice, two workers on PostgreSQL share the
queue without a double send, and SIGTERM stops a worker cleanly after the attempt it started."""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from findata.webhooks.endpoints import LogEntry
from findata.webhooks.schedule import LEASE
from findata.webhooks.tables import webhook_attempts as A
from findata.webhooks.tables import webhook_deliveries as D
from tests.databases import disposing_cached_engine
from tests.webhooks.receiver import LoopbackCertificates, Receiver, WebhookRig, make_rig

FINDATA = Path(sys.executable).parent / "findata"


def path_of(receiver: Receiver, url: str) -> str:
    """The request path of one of ``receiver``'s URLs."""
    return url.removeprefix(f"https://localhost:{receiver.port}")


@dataclass(frozen=True)
class HeldDelivery:
    """A Max account's endpoint whose receiver holds every delivery until released, and the
    test delivery queued to it."""

    rig: WebhookRig
    endpoint_id: str
    path: str
    delivery_id: str


@contextmanager
def held_delivery(
    home: Path, certificates: LoopbackCertificates, receiver: Receiver
) -> Iterator[HeldDelivery]:
    with disposing_cached_engine(f"sqlite:///{home.resolve() / 'control.sqlite'}") as url:
        rig = make_rig(url, home, certificates)
        endpoint_url = receiver.url()
        path = path_of(receiver, endpoint_url)
        endpoint_id = rig.endpoints.add(rig.account("max").id, endpoint_url).endpoint.endpoint_id
        receiver.answer(path, "hold")
        queued = rig.endpoints.send_test(endpoint_id)
        yield HeldDelivery(rig, endpoint_id, path, queued.delivery_id)


def worker_env(rig: WebhookRig, poll_seconds: float) -> dict[str, str]:
    """The environment of a worker on ``rig``'s control plane, home (its secrets key) and UNSAFE
    loopback settings; no other ``FINDATA_*`` variable of this process leaks in."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FINDATA_")}
    assert rig.settings.webhooks_ca_bundle is not None
    env.update(
        FINDATA_HOME=str(rig.settings.home_dir),
        FINDATA_DATABASE_URL=rig.settings.control_plane_url,
        FINDATA_WEBHOOKS_ALLOW_PRIVATE="1",
        FINDATA_WEBHOOKS_CA_BUNDLE=str(rig.settings.webhooks_ca_bundle),
        FINDATA_WEBHOOKS_POLL_SECONDS=str(poll_seconds),
    )
    return env


@contextmanager
def workers(
    rig: WebhookRig, logs: Path, count: int = 1, poll_seconds: float = 0.2
) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``count`` long-running ``findata webhooks worker`` processes, killed if still running
    when the block ends (their output goes to ``logs``/worker-N.log)."""
    processes: list[subprocess.Popen[bytes]] = []
    with ExitStack() as stack:
        try:
            for number in range(count):
                output = stack.enter_context((logs / f"worker-{number}.log").open("wb"))
                processes.append(
                    subprocess.Popen(
                        [str(FINDATA), "webhooks", "worker"],
                        env=worker_env(rig, poll_seconds),
                        stdout=output,
                        stderr=subprocess.STDOUT,
                    )
                )
            yield processes
        finally:
            for process in processes:
                if process.poll() is None:
                    process.kill()
                process.wait(timeout=30)


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 30) -> None:
    """Poll ``condition`` (another process's effect) until it holds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        time.sleep(0.05)


def statuses(rig: WebhookRig, queued: list[LogEntry]) -> list[str]:
    """The log statuses of ``queued`` deliveries now."""
    return [rig.endpoints.delivery(entry.delivery_id).status for entry in queued]


def stored_statuses(rig: WebhookRig) -> dict[str, str]:
    """Every delivery's stored status, by delivery id."""
    with rig.engine.connect() as connection:
        return {row.id: row.status for row in connection.execute(sa.select(D.c.id, D.c.status))}


def attempts(rig: WebhookRig) -> list[sa.Row]:
    """Every attempt row, by delivery and number."""
    with rig.engine.connect() as connection:
        return connection.execute(sa.select(A).order_by(A.c.delivery_id, A.c.number)).all()


def test_a_worker_killed_mid_delivery_loses_nothing_and_sends_no_attempt_twice(
    control_plane_url: str,
    tmp_path: Path,
    test_certificates: LoopbackCertificates,
    receiver: Receiver,
) -> None:
    rig = make_rig(control_plane_url, tmp_path / "home", test_certificates)
    account = rig.account("max")
    urls = [receiver.url() for _ in range(3)]
    paths = [path_of(receiver, url) for url in urls]
    endpoint_ids = [rig.endpoints.add(account.id, url).endpoint.endpoint_id for url in urls]
    receiver.answer(paths[0], "hold")  # the first endpoint never answers attempt 1
    queued = [rig.endpoints.send_test(endpoint_id) for endpoint_id in endpoint_ids]

    with workers(rig, tmp_path) as (process,):
        receiver.wait_for(paths[0], 1)
        wait_until(
            lambda: statuses(rig, queued[1:]) == ["Delivered", "Delivered"],
            "the other two deliveries are recorded",
        )
        process.kill()  # SIGKILL: no chance to record anything
        assert process.wait(timeout=30) == -signal.SIGKILL

    # the held attempt is on record as started, under the dead worker's lease
    with rig.engine.connect() as connection:
        held = connection.execute(sa.select(D).where(D.c.id == queued[0].delivery_id)).one()
    (in_flight,) = [row for row in attempts(rig) if row.delivery_id == held.id]
    assert (held.status, held.attempts) == ("delivering", 1)
    assert held.lease_owner == in_flight.worker and f":{process.pid}:" in in_flight.worker
    assert (in_flight.number, in_flight.outcome) == (1, "in_flight")
    receiver.release(paths[0])

    # past the lease, which is also past attempt 2's due time (1 minute after attempt 1 started)
    rig.clock.advance(LEASE + dt.timedelta(minutes=1))
    report = rig.worker(name="successor").run_once()
    assert report.recovered == 1
    assert report.outcomes == {"delivered": 1}

    rows = attempts(rig)
    assert len({(row.delivery_id, row.number) for row in rows}) == len(rows) == 4
    assert not [row for row in rows if row.outcome == "in_flight"]
    assert [
        (row.number, row.outcome, row.worker) for row in rows if row.delivery_id == held.id
    ] == [(1, "interrupted", in_flight.worker), (2, "delivered", "successor")]
    assert statuses(rig, queued) == ["Delivered"] * 3
    assert rig.endpoints.delivery(held.id).attempt == 2

    # the subscriber saw attempt 1 and attempt 2 of the held event, every other event once
    first, second = receiver.received(paths[0])
    assert first.headers["webhook-id"] == second.headers["webhook-id"] == queued[0].event_id
    assert first.headers["webhook-timestamp"] != second.headers["webhook-timestamp"]
    assert first.body == second.body
    for path, entry in zip(paths[1:], queued[1:], strict=True):
        assert [r.headers["webhook-id"] for r in receiver.received(path)] == [entry.event_id]


def test_two_workers_on_postgresql_share_the_queue_without_double_sends(
    postgres_url: str,
    tmp_path: Path,
    test_certificates: LoopbackCertificates,
    receiver: Receiver,
) -> None:
    rig = make_rig(postgres_url, tmp_path / "home", test_certificates)
    account = rig.account("max")
    urls = [receiver.url() for _ in range(4)]
    paths = [path_of(receiver, url) for url in urls]
    endpoint_ids = [rig.endpoints.add(account.id, url).endpoint.endpoint_id for url in urls]
    # the first request to endpoint 0 is held: whichever worker sends it is stuck in that round
    # until it is released, so the other worker must send everything queued meanwhile
    receiver.answer(paths[0], "hold")
    before = [rig.endpoints.send_test(endpoint_ids[n % 4]) for n in range(10)]

    with workers(rig, tmp_path, count=2, poll_seconds=0.1) as processes:
        wait_until(
            lambda: sorted(stored_statuses(rig).values()) == ["delivered"] * 9 + ["delivering"],
            "all of the first ten but the held one are delivered",
        )
        (held,) = [e for e in before if stored_statuses(rig)[e.delivery_id] == "delivering"]
        meanwhile = [rig.endpoints.send_test(endpoint_ids[n % 4]) for n in range(10, 30)]
        wait_until(
            lambda: Counter(stored_statuses(rig).values()) == {"delivered": 29, "delivering": 1},
            "every delivery but the held one is delivered",
            timeout=8,  # well within the sender's 10 seconds for the held answer
        )
        receiver.release(paths[0])
        wait_until(lambda: statuses(rig, [held]) == ["Delivered"], "the held one is delivered")
        for process in processes:
            process.send_signal(signal.SIGTERM)
        assert [process.wait(timeout=30) for process in processes] == [0, 0]

    queued = before + meanwhile
    rows = attempts(rig)
    by_delivery = {row.delivery_id: row for row in rows}
    assert len(rows) == len(by_delivery) == 30  # one attempt per delivery: nothing sent twice
    assert {(row.number, row.outcome) for row in rows} == {(1, "delivered")}
    assert set(by_delivery) == {entry.delivery_id for entry in queued}

    worker_of_pid = {
        process.pid: {row.worker for row in rows if f":{process.pid}:" in row.worker}
        for process in processes
    }
    assert all(len(found) == 1 for found in worker_of_pid.values()), worker_of_pid
    assert {row.worker for row in rows} == set().union(*worker_of_pid.values())
    holder = by_delivery[held.delivery_id].worker
    # while one worker was stuck on the held request, the other one sent all that was queued
    assert {by_delivery[entry.delivery_id].worker for entry in meanwhile} == {
        row.worker for row in rows
    } - {holder}

    webhook_ids = Counter(
        request.headers["webhook-id"] for path in paths for request in receiver.received(path)
    )
    assert webhook_ids == Counter({entry.event_id: 1 for entry in queued})


def test_sigterm_lets_a_worker_finish_the_attempt_it_started_then_exit_0(
    tmp_path: Path, test_certificates: LoopbackCertificates, receiver: Receiver
) -> None:
    # the default control plane: SQLite under FINDATA_HOME
    with held_delivery(tmp_path / "home", test_certificates, receiver) as held:
        rig, path = held.rig, held.path
        with workers(rig, tmp_path) as (process,):
            receiver.wait_for(path, 1)
            process.send_signal(signal.SIGTERM)
            assert process.poll() is None  # it cannot finish before its answer arrives
            receiver.release(path)
            assert process.wait(timeout=30) == 0
        rows = attempts(rig)
        assert [(row.number, row.outcome, row.http_status) for row in rows] == [
            (1, "delivered", 200)
        ]
        assert rig.endpoints.delivery(held.delivery_id).status == "Delivered"
        assert len(receiver.received(path)) == 1
