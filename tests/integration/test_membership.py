"""groupcoord.membership against the real server: its examples as real processes, and the library in tasks.

The examples in docs/examples/ run as separate processes (leader election with failover when the leader
leaves; N shards over workers), so what the docs show is what the suite runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from groupcoord.membership import Assignment, GroupMember, ResourceAssignor
from tests.integration.helpers import wait_for

pytestmark = [pytest.mark.integration]
EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


class Proc:
    """One example process and the JSON lines it printed."""

    def __init__(self, proc: asyncio.subprocess.Process, name: str) -> None:
        self.proc, self.name = proc, name
        self.lines: list[dict[str, Any]] = []
        self.reader = asyncio.create_task(self._read())

    @classmethod
    async def start(cls, script: str, bootstrap: str, name: str, *args: str) -> Proc:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, str(EXAMPLES / script), "--bootstrap", bootstrap, "--name", name, *args,
            stdout=asyncio.subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
        return cls(proc, name)

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        async for raw in self.proc.stdout:
            with contextlib.suppress(ValueError):
                self.lines.append(json.loads(raw))

    def last(self, **match: Any) -> dict[str, Any] | None:
        for line in reversed(self.lines):
            if all(line.get(k) == v for k, v in match.items()):
                return line
        return None

    async def terminate(self) -> int:
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
        rc = await asyncio.wait_for(self.proc.wait(), 30)
        await self.reader
        return rc


async def stop_all(procs: list[Proc]) -> None:
    for p in procs:
        with contextlib.suppress(ProcessLookupError, TimeoutError):
            await p.terminate()


async def test_leader_election_example_elects_one_scheduler_and_fails_over_when_it_leaves(
    groupcoord_server,
) -> None:
    bootstrap = groupcoord_server.bootstrap
    procs = [await Proc.start("leader_election.py", bootstrap, f"s{i}") for i in range(3)]
    try:

        def one_leader(group: list[Proc], newer_than: int = -1) -> bool:
            last = [p.last(event="assigned") for p in group]
            if any(x is None for x in last):
                return False
            gens = {x["generation"] for x in last}  # type: ignore[index]
            return len(gens) == 1 and gens.pop() > newer_than and sum(x["active"] for x in last) == 1  # type: ignore[index]

        await wait_for(lambda: one_leader(procs), 60, "one active scheduler among 3")
        leader = next(p for p in procs if p.last(event="assigned")["active"])  # type: ignore[index]
        generation = leader.last(event="assigned")["generation"]  # type: ignore[index]

        assert await leader.terminate() == 0
        assert leader.last(event="revoked") is not None and leader.last(event="left") is not None
        rest = [p for p in procs if p is not leader]
        # the leader left gracefully, so the others rebalance now (not after its session timeout)
        await wait_for(lambda: one_leader(rest, generation), 30, "a new scheduler among the other 2")
    finally:
        await stop_all(procs)


async def test_shard_workers_example_covers_every_shard_exactly_once_as_workers_come_and_go(
    groupcoord_server,
) -> None:
    bootstrap = groupcoord_server.bootstrap
    shards = {f"shard-{i}" for i in range(8)}
    procs = [await Proc.start("shard_workers.py", bootstrap, f"w{i}", "--shards", "8") for i in range(3)]

    def covered(group: list[Proc]) -> bool:
        last = [p.last() for p in group]
        if any(x is None or "shards" not in x for x in last):
            return False
        owned = [s for x in last for s in x["shards"]]  # type: ignore[index]
        gens = {x["generation"] for x in last}  # type: ignore[index]
        return len(gens) == 1 and len(owned) == len(set(owned)) and set(owned) == shards

    try:
        await wait_for(lambda: covered(procs), 60, "3 workers to cover 8 shards")
        assert sorted(len(p.last()["shards"]) for p in procs) == [2, 3, 3]  # type: ignore[index]
        assert await procs[0].terminate() == 0
        await wait_for(lambda: covered(procs[1:]), 30, "2 workers to cover 8 shards")
        assert sorted(len(p.last()["shards"]) for p in procs[1:]) == [4, 4]  # type: ignore[index]
    finally:
        await stop_all(procs)


async def test_members_get_assignments_through_callbacks_and_the_async_iterator(groupcoord_server) -> None:
    bootstrap = groupcoord_server.bootstrap
    got: list[Assignment] = []
    a = GroupMember(bootstrap, "jobs", ResourceAssignor(["x", "y", "z"]), protocol_type="jobs",
                    heartbeat_interval_ms=200, on_assigned=got.append)  # fmt: skip
    await a.start()
    assert a.assignment is not None and a.assignment.is_leader and a.assignment.resources == ("x", "y", "z")
    assert a.member_id  # KIP-394: the coordinator gave us an id through MEMBER_ID_REQUIRED
    seen: list[Assignment] = []

    async def follow() -> None:
        async for assignment in a.assignments():
            seen.append(assignment)

    follower = asyncio.create_task(follow())
    b = GroupMember(
        bootstrap, "jobs", ResourceAssignor(["x", "y", "z"]), protocol_type="jobs", heartbeat_interval_ms=200
    )
    await b.start()
    await wait_for(
        lambda: a.assignment is not None and a.assignment.generation == b.generation, 60, "a to rejoin"
    )
    assert {*a.assignment.resources, *b.assignment.resources} == {"x", "y", "z"}  # type: ignore[union-attr]
    assert not set(a.assignment.resources) & set(b.assignment.resources)  # type: ignore[union-attr]
    await b.stop()
    await wait_for(lambda: a.assignment is not None and len(a.assignment.resources) == 3, 60, "a to take all")
    await a.stop()
    await asyncio.wait_for(follower, 60)
    assert [x.generation for x in seen] == [x.generation for x in got]  # the iterator missed none
    assert seen[-1].resources == ("x", "y", "z")


async def test_a_static_member_restarted_within_its_session_keeps_its_share_without_a_rebalance(
    groupcoord_server,
) -> None:
    bootstrap = groupcoord_server.bootstrap

    def member(instance: str) -> GroupMember:
        return GroupMember(bootstrap, "static-jobs", ResourceAssignor(["p", "q", "r", "s"]),
                           protocol_type="jobs", instance_id=instance, heartbeat_interval_ms=200,
                           session_timeout_ms=10000)  # fmt: skip

    a, b = member("inst-a"), member("inst-b")
    await a.start()
    await b.start()
    await wait_for(lambda: a.generation == b.generation and a.assignment is not None, 60, "a and b to share")
    generation, share = b.generation, b.assignment.resources  # type: ignore[union-attr]
    await b.stop()  # static: no LeaveGroup
    b2 = member("inst-b")
    await b2.start()
    assert b2.generation == generation and b2.assignment.resources == share  # type: ignore[union-attr]
    await asyncio.sleep(0.6)  # a few heartbeats: a must not be asked to rebalance
    assert a.generation == generation
    await b2.stop(leave=True)
    await a.stop()


async def test_a_different_protocol_type_is_refused_with_inconsistent_group_protocol(
    groupcoord_server,
) -> None:
    bootstrap = groupcoord_server.bootstrap
    a = GroupMember(bootstrap, "typed", ResourceAssignor(["x"]), protocol_type="jobs")
    await a.start()
    intruder = GroupMember(bootstrap, "typed", ResourceAssignor(["x"]), protocol_type="other")
    with pytest.raises(Exception, match="INCONSISTENT_GROUP_PROTOCOL"):
        await intruder.start(timeout=20)
    await intruder.stop(leave=False)
    await a.stop()
