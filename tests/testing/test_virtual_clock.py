"""The groupcoord fixture with a virtual clock: session timeouts fire on advance(), not on the wall clock."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.errors import CommitFailedError
from aiokafka.structs import OffsetAndMetadata, TopicPartition

from tests.integration.helpers import wait_for

pytestmark = pytest.mark.integration

SESSION_MS = 10_000


async def joined(bootstrap: str, group: str, topic: str = "t", **kw: object) -> AIOKafkaConsumer:
    kw.setdefault("session_timeout_ms", SESSION_MS)
    c = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, **kw)
    await c.start()
    return c


async def test_session_timeout_fires_exactly_when_the_clock_reaches_it(groupcoord) -> None:  # type: ignore[no-untyped-def]
    c = await joined(groupcoord.bootstrap, "g1")
    try:
        await c.getmany(timeout_ms=50)
        view = await groupcoord.wait_group("g1", state="Stable", members=1)
        member = view.members[0].member_id
        events = groupcoord.events("g1")
        await groupcoord.advance(SESSION_MS - 1)  # no heartbeat reaches a frozen clock's future
        assert groupcoord.describe("g1").members[0].member_id == member
        await groupcoord.advance(1)
        after = groupcoord.describe("g1")
        assert member not in {m.member_id for m in after.members}
        kinds = []
        async for event in events:
            kinds.append((event["event"], event.get("reason")))
            if event.get("reason") == "session_timeout":
                break
        assert any(reason == "session_timeout" for _, reason in kinds)
        # the real client notices on its next heartbeat and rejoins at a later generation
        again = await groupcoord.wait_group("g1", state="Stable", members=1, generation=view.generation + 1)
        assert again.members[0].member_id != member
    finally:
        await c.stop()


async def test_expire_member_removes_it_with_reason_session_timeout(groupcoord) -> None:  # type: ignore[no-untyped-def]
    a = await joined(groupcoord.bootstrap, "g3")
    b = await joined(groupcoord.bootstrap, "g3")
    try:
        view = await groupcoord.wait_group("g3", members=2)
        victim = view.members[0].member_id
        events = groupcoord.events("g3")
        await groupcoord.expire_member("g3", victim)
        async for event in events:
            if event.get("member_id") == victim and event.get("reason") == "session_timeout":
                break
        assert victim not in {m.member_id for m in groupcoord.describe("g3").members}
        final = await groupcoord.wait_group("g3", members=2, generation=view.generation + 1)
        assert victim not in {m.member_id for m in final.members}
    finally:
        await a.stop()
        await b.stop()


async def test_commit_fails_with_the_injected_error_then_succeeds(groupcoord) -> None:  # type: ignore[no-untyped-def]
    c = await joined(groupcoord.bootstrap, "g4", enable_auto_commit=False)
    try:
        await c.getmany(timeout_ms=50)
        await groupcoord.wait_group("g4", members=1)
        groupcoord.record()
        fault = groupcoord.fault("OffsetCommit", error="REBALANCE_IN_PROGRESS", group="g4")
        tp = TopicPartition("t", 0)
        with pytest.raises(CommitFailedError):
            await c.commit({tp: OffsetAndMetadata(5, "")})
        assert fault.fired == 1
        commits = groupcoord.recorded("OffsetCommit", group="g4")
        assert commits[0].injected
        assert commits[0].response.topics[0].partitions[0].error_code == 27
        await groupcoord.wait_group("g4", members=1)
        await c.commit({tp: OffsetAndMetadata(6, "")})
        assert await c.committed(tp) == 6
        assert fault.fired == 1
    finally:
        await c.stop()


@pytest.mark.groupcoord(group_initial_rebalance_delay_ms=3000)
async def test_initial_rebalance_delay_waits_for_advance(groupcoord) -> None:  # type: ignore[no-untyped-def]
    c = AIOKafkaConsumer("t", bootstrap_servers=groupcoord.bootstrap, group_id="g5")
    starting = asyncio.create_task(c.start())  # start() returns once the first JoinGroup is answered
    try:
        await groupcoord.wait_group("g5", state="PreparingRebalance", members=1)
        await groupcoord.advance(2999)
        assert groupcoord.describe("g5").state == "PreparingRebalance"
        await groupcoord.advance(1)
        await starting
        await groupcoord.wait_group("g5", state="Stable", members=1)
    finally:
        await starting
        await c.stop()


@pytest.mark.groupcoord(offsets_retention_minutes=1, offsets_retention_check_interval_ms=1000)
async def test_offsets_of_an_empty_group_expire_when_the_clock_passes_retention(groupcoord) -> None:  # type: ignore[no-untyped-def]
    c = AIOKafkaConsumer(bootstrap_servers=groupcoord.bootstrap, group_id="g6", enable_auto_commit=False)
    await c.start()
    try:
        tp = TopicPartition("t", 0)
        c.assign([tp])
        await c.commit({tp: OffsetAndMetadata(5, "")})  # a manual-assignment commit: the group stays Empty
        await groupcoord.advance(58_000)
        assert await c.committed(tp) == 5
        await groupcoord.advance(3_000)  # past the 60 s retention and the next 1 s expiry check
        assert await c.committed(tp) is None
    finally:
        await c.stop()


async def test_wait_group_times_out_with_what_the_group_is(groupcoord) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(TimeoutError, match=r"'nobody' did not reach state=Stable.*it is Dead with 0 members"):
        await groupcoord.wait_group("nobody", timeout=0.1)


async def test_advance_on_the_wall_clock_is_refused(groupcoord_factory) -> None:  # type: ignore[no-untyped-def]
    coord = await groupcoord_factory(virtual_clock=False)
    with pytest.raises(RuntimeError, match="virtual clock"):
        await coord.advance(1)


async def test_held_sync_group_keeps_the_group_completing_until_released(groupcoord) -> None:  # type: ignore[no-untyped-def]
    hold = groupcoord.fault("SyncGroup", hold=True, group="g7")
    c = AIOKafkaConsumer("t", bootstrap_servers=groupcoord.bootstrap, group_id="g7")
    starting = asyncio.create_task(c.start())
    try:
        await groupcoord.wait_group("g7", state="CompletingRebalance", members=1)
        await wait_for(lambda: hold.holding == 1, 60, "the member's SyncGroup to be held")
        assert groupcoord.describe("g7").state == "CompletingRebalance"
        assert hold.release() == 1
        await starting
        await groupcoord.wait_group("g7", state="Stable", members=1)
    finally:
        hold.remove()
        await starting
        await c.stop()
