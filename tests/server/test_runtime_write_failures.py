"""State writes that fail (a full disk) reach the waiting requests as COORDINATOR_NOT_AVAILABLE, are logged
once per run of failures, and leave the group's mailbox working (issue 11).

The real state machine and runtime; the store is the one seam replaced: its writes raise ENOSPC, as SQLite's
do when the disk is full, until `full` is cleared.
"""

from __future__ import annotations

import asyncio
import errno
from collections.abc import Sequence

import structlog

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.coordinator.machine import GroupStateMachine
from groupcoord.server.coordinator.records import Record
from groupcoord.server.coordinator.types import CommitPartition, CoordinatorConfig, OffsetCommitRequest
from groupcoord.server.journal.writer import Journal
from groupcoord.server.runtime import GroupRuntime


class FullDisk:
    """An asynchronous store whose writes fail with ENOSPC while `full`; keeps what it was given otherwise."""

    synchronous = False

    def __init__(self) -> None:
        self.full = True
        self.rows: list[Record] = []

    async def write(self, records: Sequence[Record]) -> None:
        await asyncio.sleep(0)
        if self.full:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.rows.extend(records)


def commit(offset: int) -> OffsetCommitRequest:
    return OffsetCommitRequest(
        version=8,
        group_id="g",
        generation_id=-1,
        member_id="",
        group_instance_id=None,
        retention_time_ms=-1,
        topics=(("t", (CommitPartition(partition=0, offset=offset),)),),
    )


async def send(runtime: GroupRuntime, machine: GroupStateMachine, offset: int) -> int:
    token = asyncio.get_running_loop().create_future()
    req = commit(offset)
    runtime.call("g", lambda now: (None, machine.commit_offsets(req, token, now)))
    result = await asyncio.wait_for(token, 60)
    ((_, ((_, error),)),) = result.topics
    return error


async def test_failed_state_writes_answer_coordinator_not_available_logged_once_then_recover() -> None:
    machine = GroupStateMachine(CoordinatorConfig())
    store = FullDisk()
    runtime = GroupRuntime(machine, store, Journal(None), asyncio.get_running_loop())
    with structlog.testing.capture_logs() as logs:
        # several in flight at once: they queue in the group's mailbox and all get an answer
        errors = await asyncio.gather(*(send(runtime, machine, i) for i in range(5)))
        assert errors == [ErrorCode.COORDINATOR_NOT_AVAILABLE] * 5
        store.full = False
        assert await send(runtime, machine, 42) == ErrorCode.NONE
    failures = [e for e in logs if e["event"].startswith("state write failed")]
    assert len(failures) == 1, logs
    assert failures[0]["group"] == "g" and "No space left on device" in failures[0]["error"]
    assert any(e["event"] == "state writes succeed again" and e["failed_writes"] == 5 for e in logs), logs
    assert len(store.rows) == 1  # only the commit that succeeded was kept
    await runtime.quiesce()
    runtime.close()
