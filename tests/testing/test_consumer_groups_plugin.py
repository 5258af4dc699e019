"""The pytest plugin with KIP-848 consumer groups (confluent-kafka 2.16, `group.protocol=consumer`), as a
user's project meets it (pytester, in a subprocess): `wait_group` on a consumer group's states, `describe`
with member epochs and assignments, the consumer-group journal events, `expire_member`, and a fault on
ConsumerGroupHeartbeat that lets a member's session run out on the virtual clock. The same `describe` and
`wait_group` through the subprocess (HTTP) facade."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(400)]

USER_TESTS = '''
import asyncio
import threading

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

FAST = dict(
    group_consumer_heartbeat_interval_ms=300,
    group_consumer_min_heartbeat_interval_ms=300,
    group_consumer_assignment_interval_ms=0,
)


def create_topic(bootstrap, name, partitions):
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    for f in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        f.result(30)


class Member:
    """A KIP-848 consumer polling on its own thread (the in-process server runs on the test's loop)."""

    def __init__(self, bootstrap, group, topic, name):
        self.conf = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": "consumer",
            "client.id": name,
            "enable.auto.commit": False,
            "log_level": 0,
        }
        self.topic = topic
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        c = Consumer(self.conf)
        c.subscribe([self.topic])
        while not self.stopping.is_set():
            c.poll(0.1)
        c.close()

    async def close(self):
        self.stopping.set()
        await asyncio.to_thread(self.thread.join, 60)


async def until(predicate, what, timeout=60):
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, what
        await asyncio.sleep(0.05)


async def test_wait_describe_events_and_expire(groupcoord_factory):
    coord = await groupcoord_factory(**FAST)
    await asyncio.to_thread(create_topic, coord.bootstrap, "orders", 6)
    events = coord.events("cg")
    a = Member(coord.bootstrap, "cg", "orders", "a")
    b = Member(coord.bootstrap, "cg", "orders", "b")
    try:
        view = await coord.wait_group("cg", state="Stable", members=2, timeout=60)
        assert (view.group_type, view.protocol_type, view.protocol, view.leader) == (
            "consumer", "consumer", "uniform", None
        )
        assert view.assignment_epoch == view.generation >= 2
        assert {m.client_id for m in view.members} == {"a", "b"}
        for m in view.members:
            assert m.member_epoch == view.generation  # Stable: every member reconciled to the target
            assert m.assigned == m.target and m.subscribed_topics == ("orders",)
            assert m.assignment == b"" and len(m.assigned["orders"]) == 3
        assert sorted(p for m in view.members for p in m.assigned["orders"]) == list(range(6))
        kinds = [e["event"] for e in events.drain()]
        assert kinds.count("member_joined") == 2 and "target_assignment" in kinds, kinds
        assert any(e == "state_change" for e in kinds), kinds

        gone = next(m for m in view.members if m.client_id == "b")
        await coord.expire_member("cg", gone.member_id)
        after = coord.describe("cg")
        assert after.generation > view.generation
        removed = [e for e in events.drain() if e["event"] == "member_removed"]
        assert [(e["member_id"], e["reason"]) for e in removed] == [(gone.member_id, "session_timeout")]
        if gone.member_id in {m.member_id for m in after.members}:
            # b's next heartbeat was told it is fenced and it rejoined with the same member id (KIP-848),
            # which a loaded machine can fit in before this describe: its rejoin bumped the epoch again
            assert after.generation >= view.generation + 2
        # b heartbeats on, is told it is fenced, and rejoins with a new epoch
        back = await coord.wait_group("cg", state="Stable", members=2, generation=view.generation + 2, timeout=60)
        assert sorted(p for m in back.members for p in m.assigned["orders"]) == list(range(6))
    finally:
        events.close()
        await a.close()
        await b.close()
    empty = await coord.wait_group("cg", state="Empty", members=0, timeout=60)
    assert empty.members == ()


async def test_a_heartbeat_fault_lets_a_session_run_out_on_the_virtual_clock(groupcoord_factory):
    coord = await groupcoord_factory(**FAST)
    await asyncio.to_thread(create_topic, coord.bootstrap, "pay", 4)
    a = Member(coord.bootstrap, "pg", "pay", "a")
    b = Member(coord.bootstrap, "pg", "pay", "b")
    try:
        view = await coord.wait_group("pg", state="Stable", members=2, timeout=60)
        coord.record()
        # delayed heartbeats are still heartbeats: the group stays as it is
        slow = coord.fault("ConsumerGroupHeartbeat", client_id="a", delay_ms=500, count=3)
        await until(lambda: slow.fired == 3, "three of a's heartbeats delayed")
        assert coord.describe("pg") == view
        fault = coord.fault("ConsumerGroupHeartbeat", client_id="b", error="COORDINATOR_NOT_AVAILABLE", count=None)
        await until(lambda: fault.fired >= 1, "b's heartbeats hit the fault")

        def heard_from_a():
            return sum(1 for r in coord.recorded("ConsumerGroupHeartbeat", "pg") if r.client_id == "a")

        # 45 s (the default session timeout) in 5 s steps, each after a heartbeat from a: only b's runs out
        for _ in range(10):
            seen = heard_from_a()
            await until(lambda: heard_from_a() > seen, "a heartbeat from a")
            await coord.advance(5_000)
        left = coord.describe("pg")
        assert [m.client_id for m in left.members] == ["a"], left
        assert left.members[0].assigned == {"pay": (0, 1, 2, 3)} or left.state != "Stable"
        fault.remove()
        healed = await coord.wait_group("pg", state="Stable", members=2, generation=left.generation + 1, timeout=60)
        assert sorted(p for m in healed.members for p in m.assigned["pay"]) == [0, 1, 2, 3]
        assert healed.generation > view.generation
    finally:
        await a.close()
        await b.close()


async def test_the_http_facade_describes_a_consumer_group(groupcoord_factory):
    coord = await groupcoord_factory(subprocess=True, **FAST)
    await asyncio.to_thread(create_topic, coord.bootstrap, "logs", 2)
    a = Member(coord.bootstrap, "hg", "logs", "a")
    try:
        view = await coord.wait_group("hg", state="Stable", members=1, timeout=60)
        (m,) = view.members
        assert (view.group_type, m.client_id, m.member_epoch, m.assigned) == (
            "consumer", "a", view.generation, {"logs": (0, 1)}
        )
    finally:
        await a.close()
'''


def test_consumer_groups_through_the_plugin(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user=USER_TESTS)
    pytester.makeini("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--timeout=300", "-x", timeout=380)
    result.assert_outcomes(passed=3)
