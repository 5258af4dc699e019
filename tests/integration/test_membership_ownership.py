"""groupcoord.membership keeps its promise of one owner per resource, against the real server.

- a member cut off from the coordinator gives its assignment up (``on_lost``) before the coordinator's
  expiry lets another member own it;
- heartbeats go on while slow ``on_assigned`` / ``on_revoked`` callbacks run, so they do not get it expelled;
- a leader whose assignor raises, or produces an assignment that breaks one owner per resource, surfaces the
  error and leaves, so the others go on at once;
- bootstrap errors name their cause.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence

import pytest

from groupcoord.membership import (
    Assignment,
    AssignorError,
    BootstrapError,
    GroupMember,
    GroupMemberInfo,
    ResourceAssignor,
    encode_resources,
)
from tests.conftest import free_port
from tests.integration.helpers import wait_for

pytestmark = [pytest.mark.integration]
RESOURCES = ["x", "y", "z"]


def shared(members: Sequence[GroupMember]) -> bool:
    """All members in one generation, holding every resource exactly once between them."""
    held = [m.assignment for m in members]
    if any(a is None for a in held) or len({a.generation for a in held}) != 1:  # type: ignore[union-attr]
        return False
    owned = [r for a in held for r in a.resources]  # type: ignore[union-attr]
    return len(owned) == len(set(owned)) and set(owned) == set(RESOURCES)


async def test_a_member_cut_off_from_the_coordinator_gives_its_assignment_up_before_another_owns_it(
    groupcoord_factory,
) -> None:
    coord = await groupcoord_factory(subprocess=True, virtual_clock=False)
    events: list[tuple[str, tuple[str, ...]]] = []
    b_saw_a_holding: list[Assignment | None] = []

    def b_assigned(assignment: Assignment) -> None:
        events.append(("b assigned", assignment.resources))
        b_saw_a_holding.append(a.assignment)

    a = GroupMember(coord.bootstrap, "cut", ResourceAssignor(RESOURCES), protocol_type="jobs",
                    client_id="cut-off-a", session_timeout_ms=3000, heartbeat_interval_ms=200,
                    on_lost=lambda x: events.append(("a lost", x.resources)))  # fmt: skip
    b = GroupMember(coord.bootstrap, "cut", ResourceAssignor(RESOURCES), protocol_type="jobs",
                    client_id="b", session_timeout_ms=3000, heartbeat_interval_ms=200,
                    on_assigned=b_assigned)  # fmt: skip
    await a.start()
    assert a.assignment is not None and a.assignment.resources == tuple(RESOURCES)
    # every request of a from now on is parked by the server unanswered: a cannot reach the coordinator
    fault = await asyncio.to_thread(coord.fault, hold=True, count=None, client_id="cut-off-a")
    try:
        # b's JoinGroup waits for a to rejoin; a never does, so the coordinator expires it and b takes all
        await b.start(timeout=60)
        assert b.assignment is not None and b.assignment.resources == tuple(RESOURCES)
        assert b_saw_a_holding[-1] is None, "a still held its assignment when b was given it"
        assert events.index(("a lost", tuple(RESOURCES))) < events.index(("b assigned", tuple(RESOURCES)))
    finally:
        await asyncio.to_thread(coord.call, "DELETE", f"/v1/faults/{fault['id']}")
    # reconnected, a finds itself expired, rejoins with a new member id and gets a share again
    await wait_for(lambda: shared([a, b]), 60, "a to rejoin and share with b")
    await b.stop()
    await a.stop()


async def test_heartbeats_go_on_while_slow_callbacks_run_so_the_member_is_not_expelled(
    groupcoord_server,
) -> None:
    bootstrap = groupcoord_server.bootstrap
    slow = 6.0  # twice the session timeout, far below the rebalance timeout
    seen: list[tuple[str, int, str]] = []  # (callback, generation, member id) as member a saw them

    async def a_assigned(assignment: Assignment) -> None:
        seen.append(("assigned", assignment.generation, assignment.member_id))
        if len(seen) == 1:
            await asyncio.sleep(slow)

    async def a_revoked(assignment: Assignment) -> None:
        seen.append(("revoked", assignment.generation, assignment.member_id))
        if sum(1 for s in seen if s[0] == "revoked") == 1:
            await asyncio.sleep(slow)

    def member(**kw: object) -> GroupMember:
        return GroupMember(bootstrap, "slow", ResourceAssignor(RESOURCES), protocol_type="jobs",
                           session_timeout_ms=3000, rebalance_timeout_ms=60000, heartbeat_interval_ms=200,
                           **kw)  # type: ignore[arg-type]  # fmt: skip

    a = member(on_assigned=a_assigned, on_revoked=a_revoked)
    await a.start(timeout=60)  # returns after the slow on_assigned
    first_generation, a_id = a.generation, a.member_id
    b_generations: list[int] = []
    b = member(on_assigned=lambda x: b_generations.append(x.generation))
    await b.start(timeout=60)  # a's slow on_revoked runs while b waits for a to rejoin
    await wait_for(lambda: shared([a, b]), 60, "a and b to share one generation")
    # a kept its member id throughout: the coordinator never expelled it, though each callback outlasted
    # its session timeout; so b's first generation was already the one shared with a
    assert {s[2] for s in seen} == {a_id}, seen
    assert b_generations[0] == a.generation == first_generation + 1, (b_generations, seen)
    await b.stop()
    await a.stop()


class RaisingAssignor(ResourceAssignor):
    def assign(self, leader_id: str, members: Sequence[GroupMemberInfo]) -> dict[str, bytes]:
        if len(members) > 1:
            raise RuntimeError("boom: the capacity service is down")
        return super().assign(leader_id, members)


class GhostAssignor(ResourceAssignor):
    def assign(self, leader_id: str, members: Sequence[GroupMemberInfo]) -> dict[str, bytes]:
        plan = super().assign(leader_id, members)
        return {**plan, "ghost": encode_resources(["x"])} if len(members) > 1 else plan


def drop_last_when_shared(resources: Sequence[str], member_ids: Sequence[str]) -> Mapping[str, list[str]]:
    kept = resources[:-1] if len(member_ids) > 1 else resources
    return {m: list(kept[i :: len(member_ids)]) for i, m in enumerate(member_ids)}


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (RaisingAssignor(RESOURCES), "failed on the leader: RuntimeError('boom"),
        (GhostAssignor(RESOURCES), "unknown member ids ['ghost']"),
        (ResourceAssignor(RESOURCES, strategy=drop_last_when_shared), "left resources unowned: ['z']"),
    ],
    ids=["raises", "unknown-member", "unowned-resource"],
)
async def test_a_leader_whose_assignor_fails_surfaces_the_error_and_leaves_so_the_others_go_on(
    groupcoord_server, caplog: pytest.LogCaptureFixture, bad: ResourceAssignor, message: str
) -> None:
    caplog.set_level(logging.ERROR, logger="groupcoord.membership")
    bootstrap = groupcoord_server.bootstrap
    # a long session: were the failed leader not to leave, b would wait far longer than its start timeout
    a = GroupMember(bootstrap, "bad-leader", bad, protocol_type="jobs", session_timeout_ms=90000,
                    rebalance_timeout_ms=90000, heartbeat_interval_ms=200)  # fmt: skip
    await a.start()  # alone, a assigns fine and leads
    b = GroupMember(bootstrap, "bad-leader", ResourceAssignor(RESOURCES), protocol_type="jobs",
                    heartbeat_interval_ms=200)  # fmt: skip
    await b.start(timeout=30)  # a, still the leader, fails to assign for two members and leaves
    await wait_for(lambda: b.assignment is not None and b.assignment.resources == tuple(RESOURCES), 30,
                   "b to own every resource")  # fmt: skip
    assert isinstance(a.error, AssignorError) and message in str(a.error), a.error
    assert a.assignment is None
    with pytest.raises(AssignorError, match="assignor 'resources'"):
        async for _ in a.assignments():
            pass
    assert any(message in r.getMessage() for r in caplog.records), [r.getMessage() for r in caplog.records]
    await b.stop()
    await a.stop()


async def test_bootstrap_errors_name_their_cause() -> None:
    with pytest.raises(ValueError, match="has no port"):
        GroupMember("localhost", "g", ResourceAssignor(RESOURCES))
    with pytest.raises(ValueError, match="invalid port"):
        GroupMember("localhost:http", "g", ResourceAssignor(RESOURCES))
    unknown = GroupMember("no-such-host.invalid:9092", "g", ResourceAssignor(RESOURCES))
    with pytest.raises(BootstrapError, match=r"'no-such-host\.invalid' does not resolve"):
        await unknown.start(timeout=30)
    await unknown.stop()
    refused = GroupMember(f"127.0.0.1:{free_port()}", "g", ResourceAssignor(RESOURCES), retry_backoff_s=0.05)
    with pytest.raises(TimeoutError, match="refused the connection"):
        await refused.start(timeout=2)
    await refused.stop()


async def test_a_member_the_coordinator_expelled_reports_its_assignment_lost_not_revoked(
    groupcoord_factory,
) -> None:
    coord = await groupcoord_factory(subprocess=True, virtual_clock=False)
    calls: list[tuple[str, str]] = []
    a = GroupMember(coord.bootstrap, "expelled", ResourceAssignor(RESOURCES), protocol_type="jobs",
                    heartbeat_interval_ms=200,
                    on_revoked=lambda x: calls.append(("revoked", x.member_id)),
                    on_lost=lambda x: calls.append(("lost", x.member_id)))  # fmt: skip
    await a.start()
    first_id = a.member_id
    await coord.expire_member("expelled", first_id)  # its next heartbeat is answered UNKNOWN_MEMBER_ID
    await wait_for(lambda: a.assignment is not None and a.member_id != first_id, 30, "a to rejoin")
    assert calls == [("lost", first_id)]  # Java's onPartitionsLost: the member could not hand it over
    second_id = a.member_id
    await a.stop()
    assert calls == [("lost", first_id), ("revoked", second_id)]
