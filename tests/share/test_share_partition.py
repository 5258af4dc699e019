"""The pure share-partition state machine (server/share/partition.py) on a fake clock: acquisition locks,
ACCEPT/RELEASE/REJECT/RENEW, the delivery-count limit, SPSO advance, the in-flight limit, all-or-nothing
acknowledgement with undo, and the durable snapshot (SHARE_GROUPS_SPEC.md scenarios 12-23, 30, 36)."""

from __future__ import annotations

from groupcoord.protocol.errors import ErrorCode as E
from groupcoord.server.share.partition import (
    ACCEPT,
    ACKNOWLEDGED,
    ACQUIRED,
    ARCHIVED,
    AVAILABLE,
    GAP,
    REJECT,
    RELEASE,
    RENEW,
    AckBatch,
    AcquiredRange,
    SharePartition,
)


def ack(sp: SharePartition, member: str, first: int, last: int, *types: int, now: int = 0) -> int:
    batches = [AckBatch(first, last, types)]
    err, _ = sp.check(member, batches, renew_allowed=True)
    if err == 0:
        sp.acknowledge(member, batches, now)
    return err


def test_fetch_acquires_with_lock_and_exclusive() -> None:
    sp = SharePartition(0)
    assert sp.acquire("u1", 500, 10, 0) == [AcquiredRange(0, 9, 1)]
    assert (sp.start, sp.end) == (0, 10)
    assert sp.acquire("u2", 500, 10, 0) == []  # all held by u1
    assert sp.next_deadline() == 30000


def test_accept_advances_start_and_partial_accept() -> None:
    sp = SharePartition(0)
    sp.acquire("u1", 500, 10, 0)
    assert ack(sp, "u1", 0, 4, ACCEPT) == 0
    assert sp.start == 5
    assert ack(sp, "u1", 5, 9, ACCEPT, ACCEPT, RELEASE, ACCEPT, ACCEPT) == 0
    assert sp.start == 7 and sp.window[7].state == AVAILABLE


def test_release_redelivers_with_higher_count_to_another_member() -> None:
    sp = SharePartition(0)
    sp.acquire("u1", 500, 10, 0)
    assert ack(sp, "u1", 3, 3, RELEASE) == 0
    assert sp.acquire("u2", 500, 10, 0) == [AcquiredRange(3, 3, 2)]


def test_delivery_limit_archives() -> None:
    sp = SharePartition(0, delivery_count_limit=5)
    for n in range(1, 6):
        assert sp.acquire("u1", 1, 1, 0) == [AcquiredRange(0, 0, n)]
        assert ack(sp, "u1", 0, 0, RELEASE) == 0
    assert sp.start == 1 and sp.acquire("u1", 1, 1, 0) == []  # archived: never a 6th delivery


def test_reject_and_gap_archive() -> None:
    sp = SharePartition(0)
    sp.acquire("u1", 500, 3, 0)
    assert ack(sp, "u1", 0, 1, REJECT, GAP) == 0
    assert sp.start == 2


def test_lock_expiry_makes_available_and_late_ack_fails() -> None:
    sp = SharePartition(0, lock_duration_ms=15000)
    sp.acquire("u1", 500, 10, 0)
    assert not sp.expire_locks(14999)
    assert sp.expire_locks(15000)
    assert ack(sp, "u1", 0, 9, ACCEPT) == E.INVALID_RECORD_STATE
    assert sp.acquire("u2", 500, 10, 15000) == [AcquiredRange(0, 9, 2)]


def test_not_owner_and_atomic_per_partition() -> None:
    sp = SharePartition(0)
    sp.acquire("u1", 10, 20, 0)
    sp.acquire("u2", 10, 20, 0)
    assert ack(sp, "u2", 0, 9, ACCEPT) == E.INVALID_RECORD_STATE
    batches = [AckBatch(0, 9, (ACCEPT,)), AckBatch(10, 19, (ACCEPT,))]
    assert sp.check("u1", batches, False)[0] == E.INVALID_RECORD_STATE
    assert all(sp.window[o].state == ACQUIRED for o in range(20))


def test_malformed_acks() -> None:
    sp = SharePartition(0)
    sp.acquire("u1", 500, 10, 0)
    for b in (AckBatch(0, 4, (1, 1, 1)), AckBatch(5, 4, (1,)), AckBatch(0, 0, (7,)), AckBatch(0, 0, ())):
        assert sp.check("u1", [b], True)[0] == E.INVALID_REQUEST
    assert sp.check("u1", [AckBatch(0, 0, (RENEW,))], False)[0] == E.INVALID_REQUEST
    assert sp.check("u1", [AckBatch(0, 10, (ACCEPT,))], False)[0] == E.INVALID_REQUEST  # past the end


def test_partly_below_start_skips_the_part_below() -> None:
    sp = SharePartition(0)
    sp.acquire("u1", 500, 10, 0)
    assert ack(sp, "u1", 0, 4, ACCEPT) == 0 and sp.start == 5
    assert ack(sp, "u1", 3, 9, ACCEPT) == 0 and sp.start == 10


def test_wholly_below_start_is_invalid_record_state_as_kafka_once_the_batch_is_pruned() -> None:
    """A late acknowledgement of records the SPSO has passed (another member took and accepted them after the
    lock expired): Kafka 4.3's SharePartition finds no cached batch and answers INVALID_RECORD_STATE."""
    sp = SharePartition(0, lock_duration_ms=100)
    sp.acquire("u1", 500, 10, 0)
    sp.expire_locks(200)
    assert sp.acquire("u2", 500, 10, 200) == [AcquiredRange(0, 9, 2)]
    assert ack(sp, "u2", 0, 9, ACCEPT, now=200) == 0 and sp.start == 10
    err, message = sp.check("u1", [AckBatch(0, 9, (ACCEPT,))], renew_allowed=True)
    assert err == E.INVALID_RECORD_STATE and message is not None and "not found" in message
    assert sp.start == 10


def test_renew_restarts_lock() -> None:
    sp = SharePartition(0, lock_duration_ms=30000)
    sp.acquire("u1", 500, 10, 0)
    assert ack(sp, "u1", 0, 9, RENEW, now=20000) == 0
    assert not sp.expire_locks(40000)
    assert sp.next_deadline() == 50000


def test_session_close_releases_member() -> None:
    sp = SharePartition(0)
    sp.acquire("u1", 500, 10, 0)
    assert sp.release_member("u1")
    assert sp.acquire("u2", 500, 10, 0) == [AcquiredRange(0, 9, 2)]


def test_in_flight_limit_stalls_on_an_unacked_head() -> None:
    sp = SharePartition(0, max_in_flight=100, lock_duration_ms=1000)
    sp.acquire("u1", 100, 1000, 0)
    assert ack(sp, "u1", 1, 99, ACCEPT) == 0
    assert sp.start == 0 and sp.acquire("u1", 100, 1000, 0) == []
    sp.expire_locks(1000)
    got = sp.acquire("u2", 500, 1000, 1000)
    assert got[0] == AcquiredRange(0, 0, 2)


def test_undo_after_failed_write() -> None:
    sp = SharePartition(0)
    sp.acquire("u1", 500, 10, 0)
    batches = [AckBatch(0, 9, (ACCEPT,))]
    durable, undo = sp.acknowledge("u1", batches, 0)
    assert durable and sp.start == 10
    undo()
    assert sp.start == 0 and all(
        sp.window[o].state == ACQUIRED and sp.window[o].owner == "u1" for o in range(10)
    )


def test_snapshot_restores_without_acquired_increment() -> None:
    sp = SharePartition(0)
    sp.acquire("u1", 20, 20, 0)
    ack(sp, "u1", 10, 19, ACCEPT)
    ack(sp, "u1", 5, 5, RELEASE)
    again = SharePartition.restore(sp.snapshot())
    assert again.start == 0 and again.end == 20
    # 0-4 and 6-9 were acquired, not acked: back as never-delivered-yet (count 0) -> next delivery count 1
    got = again.acquire("u2", 500, 20, 0)
    assert got == [AcquiredRange(0, 4, 1), AcquiredRange(5, 5, 2), AcquiredRange(6, 9, 1)]
    assert all(again.window[o].state == ACKNOWLEDGED for o in range(10, 20))
    again2 = SharePartition.restore(again.snapshot())
    assert again2.acquire("u3", 500, 25, 0) == [
        AcquiredRange(0, 4, 1),
        AcquiredRange(5, 5, 2),
        AcquiredRange(6, 9, 1),
        AcquiredRange(20, 24, 1),
    ]


def test_skip_to_moves_start() -> None:
    sp = SharePartition(0)
    assert sp.skip_to(10)
    assert sp.acquire("u1", 500, 12, 0) == [AcquiredRange(10, 11, 1)]
    assert sp.snapshot().start_offset == 10


def test_archived_state_is_kept_in_snapshot() -> None:
    sp = SharePartition(0, delivery_count_limit=2)
    sp.acquire("u1", 2, 2, 0)
    ack(sp, "u1", 1, 1, REJECT)
    v = sp.snapshot()
    assert [(b.first_offset, b.last_offset, b.delivery_state) for b in v.batches] == [
        (0, 0, AVAILABLE),
        (1, 1, ARCHIVED),
    ]


def test_cut_after_keeps_whole_batches_up_to_the_last_acquired() -> None:
    import struct

    from groupcoord.server.share.service import cut_after, last_offset_of

    def batch(base: int, count: int) -> bytes:
        body = bytes(61 - 12 + 5)  # a header-sized body; only base, length and lastOffsetDelta matter here
        raw = struct.pack(">qi", base, len(body)) + body
        return raw[:23] + struct.pack(">i", count - 1) + raw[27:]

    data = batch(0, 5) + batch(5, 5) + batch(10, 5)
    assert last_offset_of(data) == 14
    assert cut_after(data, 3) == batch(0, 5)
    assert cut_after(data, 7) == batch(0, 5) + batch(5, 5)
    assert cut_after(data, 14) == data


def test_a_record_delivered_often_goes_alone() -> None:
    sp = SharePartition(0, delivery_count_limit=5)  # throttled once delivered ceil(5/2) = 3 times
    for n in (1, 2, 3):
        assert sp.acquire("u1", 10, 1, 0) == [AcquiredRange(0, 0, n)]
        assert ack(sp, "u1", 0, 0, RELEASE) == 0
    # records 1-19 arrive; offset 0's fourth delivery carries nothing else
    assert sp.acquire("u1", 10, 20, 0) == [AcquiredRange(0, 0, 4)]
    assert ack(sp, "u1", 0, 0, ACCEPT) == 0
    assert sp.acquire("u1", 10, 20, 0) == [AcquiredRange(1, 10, 1)]


def test_read_committed_archives_aborted_batches_and_renew_switch() -> None:
    """`archive_acquired` (read_committed): the aborted offsets of a fetch become ARCHIVED and leave the
    acquired ranges; SPSO moves past a leading aborted run. With `renew_enabled` off (the group config
    share.renew.acknowledge.enable=false) RENEW answers INVALID_RECORD_STATE and changes nothing."""
    sp = SharePartition(0)
    got = sp.acquire("u1", 500, 8, 0)
    assert got == [AcquiredRange(0, 7, 1)]
    kept = sp.archive_acquired(got, [(0, 1), (4, 5)])
    assert kept == [AcquiredRange(2, 3, 1), AcquiredRange(6, 7, 1)]
    assert sp.start == 2 and sp.window[4].state == ARCHIVED and sp.window[3].state == ACQUIRED
    assert sp.archive_acquired(kept, []) == kept
    sp.renew_enabled = False
    batches = [AckBatch(2, 3, (RENEW,))]
    assert sp.check("u1", batches, renew_allowed=True)[0] == E.INVALID_RECORD_STATE
    sp.renew_enabled = True
    assert sp.check("u1", batches, renew_allowed=True)[0] == 0
