"""`force_rebalance(group, reason)`: the test-control entry into Kafka's `prepareRebalance(group, reason)`."""

from __future__ import annotations

import pytest
from coordinator_harness import Harness

from groupcoord.protocol.errors import ErrorCode as E

G = "group"


@pytest.fixture
def h() -> Harness:
    return Harness()


def _force(h: Harness, reason: str = "test says so", gid: str = G) -> str:
    before, fx = h.m.force_rebalance(gid, reason, h.now)
    h.apply(fx)
    return before


def test_forced_rebalance_moves_a_stable_group_to_preparing_with_the_reason(h: Harness) -> None:
    results = h.stable_group(G, 2)
    assert _force(h, "operator asked") == "Stable"
    g = h.group(G)
    assert (g.state, g.generation_id) == ("PreparingRebalance", 1)
    change = h.events_of("state_change", state_to="PreparingRebalance")[-1]
    assert (change["state_from"], change["reason"]) == ("Stable", "operator asked")
    # the members hear of it on their next heartbeat, and the rebalance waits for them to rejoin
    for r in results:
        assert h.heartbeat(G, r.member_id, 1) == E.REBALANCE_IN_PROGRESS
    assert h.timers[("join", G)] == h.now + 500


def test_after_a_forced_rebalance_both_members_rejoin_at_the_next_generation(h: Harness) -> None:
    results = h.stable_group(G, 2)
    _force(h)
    toks = [h.join(G, member_id=r.member_id, version=3) for r in results]
    joined = [h.join_result(t) for t in toks]
    assert {j.error for j in joined} == {E.NONE}
    assert {j.generation_id for j in joined} == {2}
    assert h.group(G).state == "CompletingRebalance"


def test_members_that_do_not_rejoin_a_forced_rebalance_are_removed_at_its_timeout(h: Harness) -> None:
    results = h.stable_group(G, 2, session=5000)  # sessions outlive the 500 ms rebalance timeout
    _force(h)
    tok = h.join(G, member_id=results[0].member_id, version=3, session=5000)
    h.advance(500)
    assert h.join_result(tok).generation_id == 2
    assert set(h.group(G).members) == {results[0].member_id}
    assert h.events_of("member_removed", member_id=results[1].member_id, reason="rebalance_timeout")


def test_forced_rebalance_in_completing_rebalance_answers_parked_syncs_rebalance_in_progress(
    h: Harness,
) -> None:
    toks = [h.join(G, version=3, session=1000) for _ in range(2)]
    h.advance(3000)
    joined = [h.join_result(t) for t in toks]
    follower = next(j for j in joined if j.leader != j.member_id)
    parked = h.sync(G, follower.member_id, 1)
    assert h.reply(parked) is None
    assert _force(h) == "CompletingRebalance"
    assert h.reply(parked).error == E.REBALANCE_IN_PROGRESS
    assert h.group(G).state == "PreparingRebalance"
    assert ("sync", G, 1) not in h.timers


@pytest.mark.parametrize("setup", ["missing", "empty", "preparing"])
def test_forced_rebalance_leaves_groups_that_cannot_rebalance_alone(h: Harness, setup: str) -> None:
    if setup == "empty":
        r = h.stable_group(G, 1)[0]
        h.leave(G, (r.member_id, None))
    elif setup == "preparing":
        r = h.stable_group(G, 2)[0]
        h.join(G, member_id=r.member_id, version=3)
    state = h.group(G).state if setup != "missing" else None
    n_events = len(h.events)
    before = _force(h)
    assert before == {"missing": "Dead", "empty": "Empty", "preparing": "PreparingRebalance"}[setup]
    assert len(h.events) == n_events
    if state is not None:
        assert h.group(G).state == state
