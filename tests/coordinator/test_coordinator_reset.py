"""`GroupCoordinatorShard.reset_group`: the pure reset of a group whose step raised (a bug).

The runtime calls it and applies its effects (tests/server/test_runtime_failed_step.py drives that path);
here the machine alone, on the fake clock: parked requests answered UNKNOWN_SERVER_ERROR, every timer of the
group cancelled, an Empty group at the next generation written and journalled, committed offsets kept.
"""

from __future__ import annotations

import pytest
from coordinator_harness import Harness

from groupcoord.protocol.errors import ErrorCode as E
from groupcoord.server.coordinator.records import GroupRecord
from groupcoord.server.coordinator.types import JoinGroupResult, SyncGroupResult


@pytest.fixture
def h() -> Harness:
    return Harness()


def group_timers(h: Harness, gid: str) -> list[tuple]:
    return [k for k in h.timers if k[1] == gid]


def test_reset_answers_parked_joins_cancels_timers_and_writes_an_empty_group(h: Harness) -> None:
    h.commit("group", {("foo", 0): 42})
    pending = h.new_pending_member()
    parked = h.join(member_id=pending)
    assert h.reply(parked) is None and str(h.group().state) == "PreparingRebalance"
    generation = h.group().generation_id
    assert group_timers(h, "group")  # the join timer and the member's session

    h.apply(h.m.reset_group("group", h.now))

    assert h.reply(parked) == JoinGroupResult(int(E.UNKNOWN_SERVER_ERROR), member_id=pending)
    assert group_timers(h, "group") == []
    g = h.group()
    assert g is not None and str(g.state) == "Empty" and not g.members and not g.pending_join_members
    assert g.generation_id == generation + 1
    last = h.records[-1]
    assert isinstance(last, GroupRecord) and last.group_id == "group" and last.value is not None
    assert (last.value.generation, last.value.members) == (generation + 1, ())
    (ev,) = h.events_of("state_change", reason="reset_after_internal_error")
    assert (ev["state_from"], ev["state_to"], ev["generation"], ev["members"]) == (
        "PreparingRebalance",
        "Empty",
        generation + 1,
        0,
    )
    assert h.fetch("group", {"foo": [0]}).topics[0][1][0].offset == 42  # committed offsets are kept


def test_reset_answers_a_parked_sync_unknown_server_error(h: Harness) -> None:
    joins = [h.join(version=3), h.join(version=3)]
    h.advance(h.config.initial_rebalance_delay_ms)
    results = [h.join_result(t) for t in joins]
    assert all(r.error == 0 for r in results)
    follower = next(r for r in results if r.leader != r.member_id)
    parked = h.sync("group", follower.member_id, follower.generation_id)
    assert h.reply(parked) is None and str(h.group().state) == "CompletingRebalance"

    h.apply(h.m.reset_group("group", h.now))

    assert h.reply(parked) == SyncGroupResult(int(E.UNKNOWN_SERVER_ERROR))
    assert group_timers(h, "group") == []
    assert str(h.group().state) == "Empty"


def test_reset_of_an_unknown_group_does_nothing(h: Harness) -> None:
    fx = h.m.reset_group("nobody", h.now)
    assert not fx
    assert h.m.group("nobody") is None
