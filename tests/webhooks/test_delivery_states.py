"""Delivery and endpoint states on the injectable clock (spec: "States and transitions",
"Delivery and retries", "Endpoint management rules"): the retry schedule to No retries left,
410 disabling at once, three days of failures disabling with a notice, pause and resume,
resend, plans without webhooks, endpoint allowances and the delivery log.

``data.changed`` events are written here as the pipeline's publish step writes them (a row in
``events``); tests/webhooks/test_refresh_to_receiver.py runs the real refresh end to end.
"""

from __future__ import annotations

import datetime as dt
import threading

import pytest
import sqlalchemy as sa

from findata.clock import utc_seconds_text
from findata.control_plane import schema
from findata.webhooks.deliveries import fan_out_endpoint
from findata.webhooks.endpoints import WebhookRefused
from findata.webhooks.events import DATA_CHANGED, new_event_id
from findata.webhooks.schedule import MAX_ATTEMPTS, RETRY_WAITS
from findata.webhooks.sender import post_signed
from findata.webhooks.tables import webhook_attempts, webhook_deliveries, webhook_endpoints
from findata.webhooks.url_safety import CheckedUrl
from tests.webhooks.receiver import Receiver, WebhookRig


def announce(rig: WebhookRig) -> str:
    """A ``data.changed`` event created now, as publish records one."""
    event_id = new_event_id()
    now = rig.clock.now()
    with rig.engine.begin() as connection:
        connection.execute(
            sa.insert(schema.events).values(
                event_id=event_id,
                type=DATA_CHANGED,
                version_id=None,
                payload={
                    "id": event_id,
                    "type": DATA_CHANGED,
                    "created": utc_seconds_text(now),
                    "run_id": "run-test",
                    "datasets": [
                        {"dataset": "prices", "added": 1, "changed": 0, "removed": 0, "rebuild": 0}
                    ],
                    "cursor_from": "chg_000000000000",
                    "cursor_to": "chg_000000000001",
                    "changes_url": "http://127.0.0.1:8000/v1/changes",
                },
                created_at=now,
            )
        )
    return event_id


def path_of(receiver: Receiver, url: str) -> str:
    return url.removeprefix(f"https://localhost:{receiver.port}")


def ids_received(receiver: Receiver, url: str) -> list[str]:
    return [r.headers["webhook-id"] for r in receiver.received(path_of(receiver, url))]


def notices(rig: WebhookRig, account_id: str) -> list[sa.Row]:
    with rig.engine.connect() as connection:
        return connection.execute(
            sa.select(schema.account_notices).where(
                schema.account_notices.c.account_id == account_id
            )
        ).all()


def test_a_failing_delivery_follows_the_whole_schedule_to_no_retries_left(
    rig: WebhookRig, receiver: Receiver
) -> None:
    account = rig.account("max")
    url = receiver.url()
    endpoint = rig.endpoints.add(account.id, url).endpoint
    receiver.answer(path_of(receiver, url), *[500] * MAX_ATTEMPTS)
    event_id = announce(rig)
    worker = rig.worker()
    start = rig.clock.now()

    assert worker.run_once().outcomes == {"failed": 1}
    attempt_times = [start]
    for number, wait in enumerate(RETRY_WAITS, start=2):
        rig.clock.set(attempt_times[-1] + wait - dt.timedelta(seconds=1))
        assert worker.run_once().attempts == 0, f"attempt {number} went early"
        rig.clock.advance(dt.timedelta(seconds=1))
        expected = "no_retries_left" if number == MAX_ATTEMPTS else "failed"
        assert worker.run_once().outcomes == {expected: 1}
        attempt_times.append(rig.clock.now())
        entry = rig.endpoints.log(endpoint.endpoint_id)[0]
        assert entry.attempt == number and entry.http_status == 500

    assert [t - start for t in attempt_times][1:4] == [
        dt.timedelta(minutes=1),
        dt.timedelta(minutes=6),
        dt.timedelta(minutes=36),
    ]
    (entry,) = rig.endpoints.log(endpoint.endpoint_id)
    assert (entry.status, entry.attempt, entry.next_attempt_at) == ("No retries left", 10, None)
    received = receiver.received(path_of(receiver, url))
    assert [r.headers["webhook-id"] for r in received] == [event_id] * MAX_ATTEMPTS
    assert len({r.headers["webhook-timestamp"] for r in received}) == MAX_ATTEMPTS
    # the tenth attempt came 75.6 hours after the first failure: three days of failures
    assert rig.endpoints.get(endpoint.endpoint_id).state == "disabled"
    rig.clock.advance(dt.timedelta(days=2))
    assert worker.run_once().attempts == 0


def test_an_endpoint_answering_410_is_disabled_at_once_and_gets_nothing_more(
    rig: WebhookRig, receiver: Receiver
) -> None:
    account = rig.account("max")
    url = receiver.url()
    endpoint_id = rig.endpoints.add(account.id, url).endpoint.endpoint_id
    receiver.answer(path_of(receiver, url), 410)
    first = announce(rig)
    worker = rig.worker()
    assert worker.run_once().outcomes == {"failed": 1}
    endpoint = rig.endpoints.get(endpoint_id)
    assert endpoint.state == "disabled" and "410" in (endpoint.state_reason or "")
    assert notices(rig, account.id) == []  # 410 is the receiver's own request: no notice

    announce(rig)  # created while Disabled: never sent, not even after Resume
    rig.clock.advance(dt.timedelta(hours=1))
    assert worker.run_once().attempts == 0
    rig.endpoints.resume(endpoint_id)
    third = announce(rig)
    worker.run_once()
    # the 410'd delivery retries once Active again (it was announced while Active)
    assert sorted(ids_received(receiver, url)) == sorted([first, first, third])


def test_three_days_of_failures_disable_with_a_notice_and_a_success_restarts_the_count(
    rig: WebhookRig, receiver: Receiver
) -> None:
    account = rig.account("redistribution")
    url = receiver.url()
    path = path_of(receiver, url)
    endpoint_id = rig.endpoints.add(account.id, url).endpoint.endpoint_id
    worker = rig.worker()

    def day_of_failures(days: float) -> None:
        """An event every 6 hours, each failing at once; retries of earlier ones fail too."""
        end = rig.clock.now() + dt.timedelta(days=days)
        while rig.clock.now() < end:
            announce(rig)
            receiver.answer(path, *[503] * 20)
            worker.run_once()
            rig.clock.advance(dt.timedelta(hours=6))

    day_of_failures(2)
    assert rig.endpoints.get(endpoint_id).state == "active"
    # the receiver recovers: one success clears the count
    receiver_queue_empty(receiver, path)
    announce(rig)
    assert worker.run_once().outcomes.get("delivered")
    day_of_failures(2.5)
    assert rig.endpoints.get(endpoint_id).state == "active"
    assert notices(rig, account.id) == []
    day_of_failures(0.75)
    endpoint = rig.endpoints.get(endpoint_id)
    assert endpoint.state == "disabled"
    (notice,) = notices(rig, account.id)
    assert notice.email == account.email and notice.kind == "webhook_endpoint_disabled"
    assert url in notice.body and endpoint_id in notice.body

    # Resume restarts the three-day count: the next failure does not disable again
    rig.endpoints.resume(endpoint_id)
    day_of_failures(0.5)
    assert rig.endpoints.get(endpoint_id).state == "active"


def receiver_queue_empty(receiver: Receiver, path: str) -> None:
    """Drop answers still queued for ``path`` so the next request gets 200."""
    answers = receiver._answers.get(path)
    while answers is not None and not answers.empty():
        answers.get()


def test_pause_stops_sending_and_events_created_while_paused_are_never_sent(
    rig: WebhookRig, receiver: Receiver
) -> None:
    account = rig.account("max")
    url = receiver.url()
    endpoint_id = rig.endpoints.add(account.id, url).endpoint.endpoint_id
    worker = rig.worker()
    before_pause = announce(rig)
    assert rig.endpoints.pause(endpoint_id).state == "paused"
    during_pause = announce(rig)
    rig.clock.advance(dt.timedelta(minutes=5))
    assert worker.run_once().attempts == 0 and ids_received(receiver, url) == []
    with pytest.raises(WebhookRefused) as refused:
        rig.endpoints.send_test(endpoint_id)
    assert refused.value.status == 409

    assert rig.endpoints.resume(endpoint_id).state == "active"
    after_resume = announce(rig)
    worker.run_once()
    received = ids_received(receiver, url)
    assert sorted(received) == sorted([before_pause, after_resume])
    assert during_pause not in received
    rig.clock.advance(dt.timedelta(days=1))
    worker.run_once()
    assert len(ids_received(receiver, url)) == 2


def test_a_fan_out_that_read_the_endpoint_before_a_pause_creates_nothing_after_it(
    rig: WebhookRig, receiver: Receiver
) -> None:
    account = rig.account("max")
    endpoint_id = rig.endpoints.add(account.id, receiver.url()).endpoint.endpoint_id
    with rig.engine.connect() as connection:
        read_before_pause = connection.scalar(
            sa.select(webhook_endpoints.c.events_through).where(
                webhook_endpoints.c.id == endpoint_id
            )
        )
    rig.endpoints.pause(endpoint_id)
    announce(rig)  # created while Paused
    with rig.engine.begin() as connection:
        created = fan_out_endpoint(
            connection, endpoint_id, read_before_pause, rig.clock.now(), send=True
        )
    assert created == 0 and rig.endpoints.log(endpoint_id) == []


def test_resend_reuses_the_event_id_with_a_new_timestamp_and_signature(
    rig: WebhookRig, receiver: Receiver
) -> None:
    account = rig.account("max")
    url = receiver.url()
    endpoint_id = rig.endpoints.add(account.id, url).endpoint.endpoint_id
    receiver.answer(path_of(receiver, url), 500)
    event_id = announce(rig)
    worker = rig.worker()
    worker.run_once()
    (failed,) = rig.endpoints.log(endpoint_id)
    assert (failed.status, failed.http_status) == ("Failed", 500)

    rig.clock.advance(dt.timedelta(seconds=30))  # before the scheduled retry
    resent = rig.endpoints.resend(failed.delivery_id)
    assert (resent.event_id, resent.resend_of, resent.status) == (
        event_id,
        failed.delivery_id,
        "Pending",
    )
    assert worker.run_once().outcomes == {"delivered": 1}
    first, second = receiver.received(path_of(receiver, url))
    assert first.headers["webhook-id"] == second.headers["webhook-id"] == event_id
    assert first.body == second.body
    assert int(second.headers["webhook-timestamp"]) == int(first.headers["webhook-timestamp"]) + 30
    assert first.headers["webhook-signature"] != second.headers["webhook-signature"]
    log = rig.endpoints.log(endpoint_id)
    assert [e.delivery_id for e in log] == [resent.delivery_id, failed.delivery_id]
    assert log[0].status == "Delivered"

    with pytest.raises(WebhookRefused) as refused:
        rig.endpoints.resend(resent.delivery_id)  # Delivered: nothing to resend
    assert refused.value.status == 409
    with pytest.raises(WebhookRefused) as missing:
        rig.endpoints.resend("dlv_00000000000000000000")
    assert missing.value.status == 404


def test_on_a_plan_without_webhooks_endpoints_stay_listed_and_receive_nothing(
    rig: WebhookRig, receiver: Receiver
) -> None:
    account = rig.account("max")
    url = receiver.url()
    endpoint_id = rig.endpoints.add(account.id, url).endpoint.endpoint_id
    delivered = announce(rig)
    worker = rig.worker()
    worker.run_once()
    rig.accounts.set_plan(account.id, "pro")

    (listed,) = rig.endpoints.list(account.id)
    assert listed.endpoint_id == endpoint_id and listed.receives_events is False
    announce(rig)
    rig.clock.advance(dt.timedelta(hours=1))
    assert worker.run_once().attempts == 0
    for operation in (
        lambda: rig.endpoints.add(account.id, receiver.url()),
        lambda: rig.endpoints.pause(endpoint_id),
        lambda: rig.endpoints.resume(endpoint_id),
        lambda: rig.endpoints.send_test(endpoint_id),
        lambda: rig.endpoints.rotate_secret(endpoint_id),
    ):
        with pytest.raises(WebhookRefused) as refused:
            operation()
        assert (refused.value.status, refused.value.code) == (402, "upgrade_required")
    assert rig.endpoints.log(endpoint_id)[0].status == "Delivered"  # the log stays readable

    # back on Max: what was announced meanwhile is not sent; what comes next is
    rig.accounts.set_plan(account.id, "max")
    later = announce(rig)
    worker.run_once()
    assert ids_received(receiver, url) == [delivered, later]


def test_removing_an_endpoint_frees_its_place_and_drops_a_send_in_flight(
    rig: WebhookRig, receiver: Receiver
) -> None:
    account = rig.account("max")
    urls = [receiver.url() for _ in range(5)]
    ids = [rig.endpoints.add(account.id, url).endpoint.endpoint_id for url in urls]
    with pytest.raises(WebhookRefused):
        rig.endpoints.add(account.id, receiver.url())
    announce(rig)

    def removing_first(checked: CheckedUrl, headers: dict, body: bytes, **options: object):
        if checked.target == path_of(receiver, urls[0]):
            rig.endpoints.remove(ids[0])  # removed while its delivery is being sent
        return post_signed(checked, headers, body, **options)

    assert rig.worker(sender=removing_first).run_once().outcomes == {"delivered": 4}
    with rig.engine.connect() as connection:
        for table in (webhook_endpoints, webhook_deliveries):
            column = table.c.id if table is webhook_endpoints else table.c.endpoint_id
            assert (
                connection.scalar(
                    sa.select(sa.func.count()).select_from(table).where(column == ids[0])
                )
                == 0
            )
        assert connection.scalar(sa.select(sa.func.count()).select_from(webhook_attempts)) == 4
    with pytest.raises(WebhookRefused) as gone:
        rig.endpoints.log(ids[0])
    assert gone.value.status == 404
    assert sorted(e.endpoint_id for e in rig.endpoints.list(account.id)) == sorted(ids[1:])
    rig.endpoints.add(account.id, receiver.url())  # the place is free again

    # an account that left Max may still clean up
    rig.accounts.set_plan(account.id, "pro")
    rig.endpoints.remove(ids[1])
    assert len(rig.endpoints.list(account.id)) == 4


def test_a_slow_endpoint_does_not_hold_up_the_others(rig: WebhookRig, receiver: Receiver) -> None:
    account = rig.account("max")
    slow, fast = receiver.url(), receiver.url()
    rig.endpoints.add(account.id, slow)
    rig.endpoints.add(account.id, fast)
    receiver.answer(path_of(receiver, slow), "hold")
    for _ in range(5):
        announce(rig)
    worker = rig.worker(concurrency=2)
    reports = []
    round_ = threading.Thread(target=lambda: reports.append(worker.run_once()))
    round_.start()
    try:
        # the nine other deliveries go out through the other send slot while one send waits
        receiver.wait_for(path_of(receiver, fast), 5, timeout=20)
        receiver.wait_for(path_of(receiver, slow), 5, timeout=20)  # the held one and 4 more
    finally:
        receiver.release(path_of(receiver, slow))
        round_.join(timeout=30)
    assert reports[0].outcomes == {"delivered": 10}


def test_free_and_pro_accounts_cannot_add_endpoints(rig: WebhookRig, receiver: Receiver) -> None:
    for plan in ("free", "pro"):
        account = rig.account(plan)
        with pytest.raises(WebhookRefused) as refused:
            rig.endpoints.add(account.id, receiver.url())
        assert refused.value.status == 402
        assert rig.endpoints.list(account.id) == []


@pytest.mark.parametrize(("plan", "allowed"), [("max", 5), ("redistribution", 10)])
def test_concurrent_adds_never_pass_the_plans_endpoint_allowance(
    rig: WebhookRig, receiver: Receiver, plan: str, allowed: int
) -> None:
    account = rig.account(plan)
    outcomes: list[object] = []

    def add() -> None:
        try:
            outcomes.append(rig.endpoints.add(account.id, receiver.url()))
        except WebhookRefused as refused:
            outcomes.append(refused)

    threads = [threading.Thread(target=add) for _ in range(allowed + 4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    refusals = [o for o in outcomes if isinstance(o, WebhookRefused)]
    assert len(rig.endpoints.list(account.id)) == allowed
    assert len(refusals) == 4 and {r.status for r in refusals} == {409}


def test_the_log_shows_the_50_newest_deliveries_of_30_days(
    rig: WebhookRig, receiver: Receiver
) -> None:
    account = rig.account("max")
    endpoint_id = rig.endpoints.add(account.id, receiver.url()).endpoint.endpoint_id
    queued = []
    for _ in range(55):
        queued.append(rig.endpoints.send_test(endpoint_id).delivery_id)
        rig.clock.advance(dt.timedelta(seconds=1))
    rig.worker().run_once()
    log = rig.endpoints.log(endpoint_id)
    assert [e.delivery_id for e in log] == queued[::-1][:50]
    assert all(e.status == "Delivered" and e.event_type == "webhook.test" for e in log)

    rig.clock.advance(dt.timedelta(days=29))
    assert len(rig.endpoints.log(endpoint_id)) == 50
    rig.clock.advance(dt.timedelta(days=1, minutes=1))
    assert rig.endpoints.log(endpoint_id) == []
    rig.worker().run_once()  # prunes what the log no longer shows
    with rig.engine.connect() as connection:
        left = connection.scalar(sa.text("SELECT count(*) FROM webhook_deliveries"))
        tests_kept = connection.scalar(
            sa.select(sa.func.count()).where(schema.events.c.type == "webhook.test")
        )
    assert left == 0 and tests_kept == 0
