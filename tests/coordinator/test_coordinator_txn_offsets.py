"""Pending transactional offsets on the group side (TxnOffsetCommit, the marker, replay, deletion)."""

from __future__ import annotations

import pytest
from coordinator_harness import Harness

from groupcoord.protocol.errors import ErrorCode as E
from groupcoord.server.coordinator.records import OffsetRecord, PendingOffsetRecord
from groupcoord.server.coordinator.shard import GroupCoordinatorShard
from groupcoord.server.coordinator.types import CommitPartition, OffsetFetchRequest, TxnOffsetCommitRequest

G = "eos"
PID = 42


@pytest.fixture
def h() -> Harness:
    return Harness()


def txn_commit(h: Harness, offset: int, generation: int = -1, member: str = "", pid: int = PID) -> dict:
    req = TxnOffsetCommitRequest(
        3, G, pid, generation, member, None, (("foo", (CommitPartition(0, offset),)),)
    )
    tok = h.token()
    h.apply(h.m.txn_commit_offsets(req, tok, h.now))
    return {p: e for _, ps in h.reply(tok).topics for p, e in ps}


def marker(h: Harness, commit: bool, pid: int = PID) -> bool:
    tok = h.token()
    h.apply(h.m.complete_transaction(G, pid, commit, tok, h.now))
    return h.reply(tok)


def stable(h: Harness) -> tuple[int, int]:
    p = h.fetch(G, {"foo": [0]}, require_stable=True).topics[0][1][0]
    return p.offset, p.error


def test_pending_offset_is_unstable_until_the_commit_marker(h: Harness) -> None:
    h.commit(G, {("foo", 0): 5})
    assert txn_commit(h, 9) == {0: E.NONE}
    assert stable(h) == (-1, E.UNSTABLE_OFFSET_COMMIT)
    assert h.fetch(G, {"foo": [0]}).topics[0][1][0].offset == 5  # without RequireStable: the committed one
    assert marker(h, commit=True) is True
    assert stable(h) == (9, E.NONE)
    assert OffsetRecord(G, "foo", 0, h.m.committed_offsets(G)[("foo", 0)]) in h.records


def test_abort_marker_drops_the_pending_offset_and_markers_are_idempotent(h: Harness) -> None:
    h.commit(G, {("foo", 0): 5})
    txn_commit(h, 9)
    assert marker(h, commit=False) is True
    assert stable(h) == (5, E.NONE)
    assert marker(h, commit=True) is True  # a marker re-sent after a restart finds nothing pending
    assert stable(h) == (5, E.NONE)


def test_member_commit_needs_the_current_generation_but_not_a_settled_rebalance(h: Harness) -> None:
    results = h.stable_group(G, n=1)
    member, gen = results[0].member_id, results[0].generation_id
    assert txn_commit(h, 3, generation=gen + 1, member=member) == {0: E.ILLEGAL_GENERATION}
    assert txn_commit(h, 3, generation=gen, member="nobody") == {0: E.UNKNOWN_MEMBER_ID}
    assert txn_commit(h, 3, generation=gen, member=member) == {0: E.NONE}
    assert txn_commit(h, 4) == {0: E.NONE}  # no member (v0-v2 form): accepted in a live group


def test_pending_offsets_survive_replay_and_group_deletion_tombstones_them(h: Harness) -> None:
    txn_commit(h, 7)
    fresh = GroupCoordinatorShard(h.config)
    for rec in h.records:
        fresh.replay(rec)
    fresh.finish_load(h.now)
    p = fresh.fetch_offsets(OffsetFetchRequest(8, G, (("foo", (0,)),), True), h.now).topics[0][1][0]
    assert p.error == E.UNSTABLE_OFFSET_COMMIT
    results, fx = h.m.delete_groups([G], h.now)
    assert results == [(G, E.NONE)]
    assert PendingOffsetRecord(G, PID, "foo", 0, None) in fx.records
