"""``findata webhooks worker`` stops cleanly (issue 22): started in a process group of its own,
with a delivery in flight to a slow receiver (held until released), SIGTERM to it or SIGINT to
its group: no delivery queued after the signal is claimed, the one in flight completes and its
attempt row is written, every process of the group is gone within the grace period, exit 0. A
second signal ends it at once (the attempt stays ``in_flight``, for the next worker to count)."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from findata.shutdown import FORCED_EXIT_STATUS
from tests.findata.stopping import command_group, send, wait_group_gone
from tests.webhooks.receiver import LoopbackCertificates, Receiver
from tests.webhooks.test_worker_durability import attempts, held_delivery, worker_env

GRACE = 10.0


@pytest.mark.parametrize(
    ("signum", "to_group"), [(signal.SIGTERM, False), (signal.SIGINT, True)], ids=["term", "int"]
)
def test_a_stopped_worker_finishes_the_delivery_in_flight_and_takes_no_new_one(
    tmp_path: Path,
    test_certificates: LoopbackCertificates,
    receiver: Receiver,
    signum: int,
    to_group: bool,
) -> None:
    with held_delivery(tmp_path / "home", test_certificates, receiver) as held:
        rig, path = held.rig, held.path
        env = {**worker_env(rig, 0.2), "FINDATA_SHUTDOWN_GRACE_SECONDS": str(GRACE)}
        log = tmp_path / "worker.log"
        with (
            log.open("wb") as output,
            command_group(["webhooks", "worker"], env, output) as process,
        ):
            receiver.wait_for(path, 1)
            send(process, signum, to_group)
            queued_after = rig.endpoints.send_test(held.endpoint_id)
            time.sleep(1.0)  # five polls: a running worker would have claimed it
            assert process.poll() is None  # the delivery in flight holds it
            receiver.release(path)
            assert wait_group_gone(process, GRACE) < GRACE
            assert process.returncode == 0, log.read_text()
        rows = attempts(rig)
        assert [(r.delivery_id, r.number, r.outcome, r.http_status) for r in rows] == [
            (held.delivery_id, 1, "delivered", 200)
        ]
        assert rig.endpoints.delivery(queued_after.delivery_id).status == "Pending"
        assert len(receiver.received(path)) == 1
        assert f"delivery {held.delivery_id} attempt 1: delivered" in log.read_text()


def test_a_second_signal_ends_the_worker_at_once(
    tmp_path: Path, test_certificates: LoopbackCertificates, receiver: Receiver
) -> None:
    with held_delivery(tmp_path / "home", test_certificates, receiver) as held:
        env = {**worker_env(held.rig, 0.2), "FINDATA_SHUTDOWN_GRACE_SECONDS": "60"}
        with (
            (tmp_path / "worker.log").open("wb") as output,
            command_group(["webhooks", "worker"], env, output) as process,
        ):
            receiver.wait_for(held.path, 1)
            process.send_signal(signal.SIGTERM)
            time.sleep(0.2)
            process.send_signal(signal.SIGTERM)
            assert wait_group_gone(process, 2.0) < 2.0
            assert process.returncode == FORCED_EXIT_STATUS
        receiver.release(held.path)
        assert [r.outcome for r in attempts(held.rig)] == ["in_flight"]
