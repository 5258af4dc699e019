"""A group step that raises (a state-machine bug) is answered UNKNOWN_SERVER_ERROR and leaves its group
consistent (issue 10, defect 6): the real GroupRuntime and GroupStateMachine, a step made to fail on purpose.
"""

from __future__ import annotations

import asyncio

import pytest

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.coordinator.machine import GroupStateMachine
from groupcoord.server.coordinator.types import CoordinatorConfig, JoinGroupRequest, JoinGroupResult
from groupcoord.server.journal.writer import Journal
from groupcoord.server.runtime import GroupRuntime
from groupcoord.server.storage.memory import MemoryStateStore
from tests.integration.helpers import wait_for

UNKNOWN_SERVER_ERROR = int(ErrorCode.UNKNOWN_SERVER_ERROR)


def join_request(member_id: str, group: str = "g") -> JoinGroupRequest:
    return JoinGroupRequest(
        version=5,
        group_id=group,
        session_timeout_ms=10000,
        rebalance_timeout_ms=10000,
        member_id=member_id,
        group_instance_id=None,
        protocol_type="consumer",
        protocols=(("range", b""),),
    )


def runtime_and_machine() -> tuple[GroupRuntime, GroupStateMachine]:
    loop = asyncio.get_running_loop()
    # a long initial delay keeps the first join parked in PreparingRebalance
    machine = GroupStateMachine(
        CoordinatorConfig(initial_rebalance_delay_ms=60_000, min_session_timeout_ms=1000)
    )
    return GroupRuntime(machine, MemoryStateStore(), Journal(None), loop), machine


def join(runtime: GroupRuntime, machine: GroupStateMachine, member_id: str) -> object:
    token = runtime.loop.create_future()
    req = join_request(member_id)
    result = runtime.call("g", lambda now: (token, machine.join_group(req, token, now)))
    return result


def boom(now: int) -> tuple[object, None]:
    raise RuntimeError("a bug in a group step")


async def test_a_failing_step_answers_its_request_with_unknown_server_error() -> None:
    runtime, _ = runtime_and_machine()
    answer = runtime.call("g", boom, lambda: JoinGroupResult(UNKNOWN_SERVER_ERROR, member_id="m"))
    assert answer == JoinGroupResult(UNKNOWN_SERVER_ERROR, member_id="m")
    assert runtime.failed_steps == 1
    runtime.close()


async def test_a_failing_step_without_an_answer_still_raises() -> None:
    runtime, _ = runtime_and_machine()
    with pytest.raises(RuntimeError):
        runtime.call("g", boom)
    assert runtime.failed_steps == 1
    runtime.close()


async def test_a_failing_step_answers_parked_joins_and_leaves_the_group_usable() -> None:
    runtime, machine = runtime_and_machine()
    first = join(runtime, machine, "")
    assert isinstance(first, asyncio.Future) and first.done()
    member_id = first.result().member_id  # MEMBER_ID_REQUIRED
    parked = join(runtime, machine, member_id)
    assert isinstance(parked, asyncio.Future) and not parked.done()
    assert str(machine.group("g").state) == "PreparingRebalance"  # type: ignore[union-attr]

    answer = runtime.call("g", boom, lambda: "failed")

    assert answer == "failed"
    assert parked.done() and parked.result() == JoinGroupResult(UNKNOWN_SERVER_ERROR, member_id=member_id)
    group = machine.group("g")
    assert group is not None and not group.members and not group.pending_join_members
    assert str(group.state) == "Empty"
    # the reset is durable: a restart loads it Empty
    (stored,) = [r.value for r in await runtime.store.load() if r.key == ("group", "g")]
    assert stored is not None and stored.members == ()
    # the group takes members again
    again = join(runtime, machine, "")
    assert again.result().error == ErrorCode.MEMBER_ID_REQUIRED  # type: ignore[union-attr]
    runtime.close()


async def test_a_failing_timer_step_is_contained() -> None:
    """A timer step has no request to answer: the runtime swallows the error after resetting the group."""
    runtime, machine = runtime_and_machine()
    member_id = join(runtime, machine, "").result().member_id  # type: ignore[union-attr]
    parked = join(runtime, machine, member_id)

    def broken_on_timer(key: tuple, now: int) -> None:
        raise RuntimeError("a bug in a timer step")

    machine.on_timer = broken_on_timer  # type: ignore[method-assign]
    runtime.timers.schedule(("initial", "g"), 0)  # the runtime's own timer path
    await wait_for(lambda: runtime.failed_steps == 1, 30, "the failing timer step")
    assert parked.done() and parked.result().error == UNKNOWN_SERVER_ERROR  # type: ignore[union-attr]
    runtime.close()
