"""One share partition (group, topic, partition): Kafka's `SharePartition` as a pure state machine.

Every offset in the in-flight window [SPSO, end) has a state: AVAILABLE (0), ACQUIRED (1, owned by a member
until its lock deadline), ACKNOWLEDGED (2) or ARCHIVED (4); the last two are terminal. `end` is one past the
last offset ever acquired (Kafka's SPEO + 1): the next new fetch starts there. The window is kept per offset
(it is at most `group.share.partition.max.record.locks` long), which makes partial acknowledgement of a log
batch no special case.

Transitions (SHARE_GROUPS_SPEC.md §3.3): acquire (delivery count + 1, lock started), ACCEPT -> ACKNOWLEDGED,
REJECT/GAP -> ARCHIVED, RELEASE / lock expiry / session close -> AVAILABLE, or ARCHIVED once the delivery count
has reached `group.share.delivery.count.limit`; RENEW restarts the lock. SPSO then moves past the leading run
of terminal offsets. An acknowledgement is all or nothing per partition: it is validated first and applied
only if every batch is valid, and `undo` puts the offsets back should the durable write fail.

Durable form (`snapshot`): SPSO and the window as runs of (state, delivery count); ACQUIRED is stored as the
AVAILABLE it was before the acquisition (its count not yet incremented), as Kafka does, so after a crash an
unacknowledged record is delivered again and an acknowledged one never is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.coordinator.records import SharePartitionValue, ShareStateBatch

AVAILABLE, ACQUIRED, ACKNOWLEDGED, ARCHIVED = 0, 1, 2, 4
TERMINAL = (ACKNOWLEDGED, ARCHIVED)
GAP, ACCEPT, RELEASE, REJECT, RENEW = 0, 1, 2, 3, 4


@dataclass(slots=True)
class InFlight:
    state: int
    delivery_count: int
    owner: str = ""
    deadline_ms: int = 0


@dataclass(frozen=True, slots=True)
class AcquiredRange:
    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(slots=True)
class Tally:
    """Running counts of record transitions (never stored): the share service journals their differences
    per call (`share_records` events). `released` counts every return from ACQUIRED without an
    acknowledgement or a rejection (RELEASE, lock expiry, session close), `archived` every move to ARCHIVED
    (REJECT, GAP, the delivery-count limit, an aborted transaction)."""

    acquired: int = 0
    acknowledged: int = 0
    released: int = 0
    archived: int = 0

    def counts(self) -> tuple[int, int, int, int]:
        return self.acquired, self.acknowledged, self.released, self.archived


@dataclass(frozen=True, slots=True)
class AckBatch:
    first_offset: int
    last_offset: int
    types: tuple[int, ...]


class SharePartition:
    def __init__(
        self,
        start_offset: int,
        *,
        lock_duration_ms: int = 30000,
        delivery_count_limit: int = 5,
        max_in_flight: int = 2000,
        state_epoch: int = 0,
        renew_enabled: bool = True,
    ) -> None:
        self.start = start_offset  # SPSO
        self.end = start_offset  # one past the last acquired offset (SPEO + 1)
        self.window: dict[int, InFlight] = {}
        self.lock_duration_ms = lock_duration_ms
        self.delivery_count_limit = delivery_count_limit
        self.max_in_flight = max_in_flight
        self.state_epoch = state_epoch
        #: the group config `share.renew.acknowledge.enable`
        self.renew_enabled = renew_enabled
        self.tally = Tally()

    # ------------------------------------------------------------------------------- load and save

    @classmethod
    def restore(cls, value: SharePartitionValue, **limits: int | bool) -> SharePartition:
        sp = cls(value.start_offset, state_epoch=value.state_epoch, **limits)
        for b in value.batches:
            for off in range(max(b.first_offset, sp.start), b.last_offset + 1):
                sp.window[off] = InFlight(b.delivery_state, b.delivery_count)
        if sp.window:
            sp.end = max(sp.window) + 1
            for off in range(sp.start, sp.end):  # gaps between stored runs: never delivered
                sp.window.setdefault(off, InFlight(AVAILABLE, 0))
        sp._advance()
        return sp

    def snapshot(self) -> SharePartitionValue:
        runs: list[ShareStateBatch] = []
        for off in range(self.start, self.end):
            rec = self.window[off]
            state, count = rec.state, rec.delivery_count
            if state == ACQUIRED:  # not stored: what it was before this acquisition
                state, count = AVAILABLE, count - 1
            last = runs[-1] if runs else None
            if (
                last
                and last.last_offset == off - 1
                and (last.delivery_state, last.delivery_count) == (state, count)
            ):
                runs[-1] = ShareStateBatch(last.first_offset, off, state, count)
            else:
                runs.append(ShareStateBatch(off, off, state, count))
        complete = sum(1 for r in self.window.values() if r.state in TERMINAL)
        return SharePartitionValue(self.state_epoch, self.start, complete, tuple(runs))

    # ------------------------------------------------------------------------------------ acquire

    def in_flight(self) -> int:
        return self.end - self.start

    def acquirable(self, log_end: int) -> bool:
        """Whether a fetch now could acquire anything (for the long poll)."""
        if any(r.state == AVAILABLE for r in self.window.values()):
            return True
        return self.end < log_end and self.in_flight() < self.max_in_flight

    def acquire(self, member: str, max_records: int, log_end: int, now_ms: int) -> list[AcquiredRange]:
        """Acquire up to `max_records` offsets for `member`: AVAILABLE ones in the window first (redeliveries),
        then new offsets from `end` below `log_end` while the in-flight window has room."""
        taken: list[tuple[int, int]] = []  # (offset, delivery count)
        deadline = now_ms + self.lock_duration_ms
        throttle = max(2, -(-self.delivery_count_limit // 2))  # Kafka's ceil(limit / 2), at least 2
        alone = False
        for off in range(self.start, self.end):
            if len(taken) >= max_records:
                break
            rec = self.window[off]
            if rec.state == AVAILABLE:
                if rec.delivery_count >= throttle:
                    # a likely poison record (delivered often already): it goes alone, so that a client that
                    # keeps failing on it does not take its neighbours down with it (Kafka throttles likewise)
                    if taken:
                        break
                    alone = True
                rec.state, rec.owner, rec.deadline_ms = ACQUIRED, member, deadline
                rec.delivery_count += 1
                taken.append((off, rec.delivery_count))
                if alone:
                    break
        while (
            not alone
            and len(taken) < max_records
            and self.end < log_end
            and self.in_flight() < self.max_in_flight
        ):
            off = self.end
            self.window[off] = InFlight(ACQUIRED, 1, member, deadline)
            self.end += 1
            taken.append((off, 1))
        self.tally.acquired += len(taken)
        out: list[AcquiredRange] = []
        for off, count in taken:
            if out and out[-1].last_offset == off - 1 and out[-1].delivery_count == count:
                out[-1] = AcquiredRange(out[-1].first_offset, off, count)
            else:
                out.append(AcquiredRange(off, off, count))
        return out

    def unacquire(self, acquired: Sequence[AcquiredRange], from_offset: int) -> list[AcquiredRange]:
        """Give back the offsets >= `from_offset` of this fetch's `acquired` ranges (the log read did not
        reach them): as they were before, the never-delivered tail dropped. Returns the ranges kept."""
        kept: list[AcquiredRange] = []
        for r in acquired:
            if r.last_offset < from_offset:
                kept.append(r)
                continue
            if r.first_offset < from_offset:
                kept.append(AcquiredRange(r.first_offset, from_offset - 1, r.delivery_count))
            for off in range(max(r.first_offset, from_offset), r.last_offset + 1):
                rec = self.window[off]
                rec.state, rec.owner, rec.deadline_ms = AVAILABLE, "", 0
                rec.delivery_count -= 1
                self.tally.acquired -= 1
        while self.end > self.start and self.window[self.end - 1].delivery_count == 0:
            if self.window[self.end - 1].state != AVAILABLE:
                break
            del self.window[self.end - 1]
            self.end -= 1
        return kept

    def archive_acquired(
        self, acquired: Sequence[AcquiredRange], batches: Sequence[tuple[int, int]]
    ) -> list[AcquiredRange]:
        """read_committed: the offsets of this fetch's `acquired` ranges inside `batches` (aborted
        transactions) become ARCHIVED instead of delivered (Kafka's filterAbortedTransactionalAcquiredRecords).
        Returns the ranges still delivered."""
        if not batches:
            return list(acquired)
        drop = {off for first, last in batches for off in range(first, last + 1)}
        kept: list[AcquiredRange] = []
        for r in acquired:
            run: list[int] = []
            for off in range(r.first_offset, r.last_offset + 1):
                if off in drop:
                    rec = self.window[off]
                    rec.state, rec.owner, rec.deadline_ms = ARCHIVED, "", 0
                    self.tally.acquired -= 1
                    self.tally.archived += 1
                    if run:
                        kept.append(AcquiredRange(run[0], run[-1], r.delivery_count))
                        run = []
                else:
                    run.append(off)
            if run:
                kept.append(AcquiredRange(run[0], run[-1], r.delivery_count))
        self._advance()
        return kept

    def skip_to(self, offset: int) -> bool:
        """The log start moved past SPSO (retention, DeleteRecords) or `share.auto.offset.reset` resolved:
        archive what is below `offset` and start there. True when something changed."""
        if offset <= self.start:
            return False
        for off in range(self.start, min(offset, self.end)):
            self.window.pop(off, None)
        self.start = offset
        self.end = max(self.end, offset)
        return True

    # -------------------------------------------------------------------------------- acknowledge

    def check(self, member: str, batches: Sequence[AckBatch], renew_allowed: bool) -> tuple[int, str | None]:
        """Validate the acknowledgements of one partition without changing anything (Kafka's all-or-nothing
        staging). (error code, message); 0 when all batches may be applied."""
        for b in batches:
            if b.first_offset > b.last_offset or not b.types:
                return int(ErrorCode.INVALID_REQUEST), "bad acknowledgement batch"
            if len(b.types) != 1 and len(b.types) != b.last_offset - b.first_offset + 1:
                return int(ErrorCode.INVALID_REQUEST), "acknowledge types do not match the range"
            if any(t not in (GAP, ACCEPT, RELEASE, REJECT, RENEW) for t in b.types):
                return int(ErrorCode.INVALID_REQUEST), "unknown acknowledge type"
            if RENEW in b.types and not renew_allowed:
                return int(ErrorCode.INVALID_REQUEST), "RENEW without IsRenewAck"
            if b.last_offset >= self.end:
                return int(ErrorCode.INVALID_REQUEST), "acknowledged offsets were never delivered"
            if b.last_offset < self.start:  # Kafka's SharePartition: no cached batch holds them any more
                return (
                    int(ErrorCode.INVALID_RECORD_STATE),
                    "Batch record not found. The request batch offsets are not found in the cache.",
                )
            for off in range(max(b.first_offset, self.start), b.last_offset + 1):
                rec = self.window[off]
                if rec.state != ACQUIRED or rec.owner != member:
                    return int(ErrorCode.INVALID_RECORD_STATE), f"offset {off} is not acquired by this member"
            if RENEW in b.types and not self.renew_enabled:
                return (
                    int(ErrorCode.INVALID_RECORD_STATE),
                    "Renewing acquisition locks is not enabled for the group.",
                )
        return 0, None

    def acknowledge(
        self, member: str, batches: Sequence[AckBatch], now_ms: int
    ) -> tuple[bool, Callable[[], None]]:
        """Apply validated (`check`) acknowledgements. (whether durable state changed, undo)."""
        saved: list[tuple[InFlight, InFlight]] = []  # (a copy before, the record itself)
        durable = False
        start_before, window_before = self.start, dict(self.window)
        for b in batches:
            for off in range(max(b.first_offset, self.start), b.last_offset + 1):
                t = b.types[0] if len(b.types) == 1 else b.types[off - b.first_offset]
                rec = self.window[off]
                before = InFlight(rec.state, rec.delivery_count, rec.owner, rec.deadline_ms)
                if t == RENEW:
                    rec.deadline_ms = now_ms + self.lock_duration_ms
                else:
                    durable = True
                    self._settle(rec, {ACCEPT: ACKNOWLEDGED, RELEASE: AVAILABLE}.get(t, ARCHIVED))
                saved.append((before, rec))
        after_states = [rec.state for _, rec in saved]
        self._advance()

        def undo() -> None:
            """The write failed: the acknowledged records go back to ACQUIRED by this member, unless something
            moved them meanwhile (a lock expiry), and SPSO back to where it was."""
            for (before, rec), state in zip(saved, after_states, strict=True):
                if rec.state == state:
                    rec.state, rec.delivery_count = before.state, before.delivery_count
                    rec.owner, rec.deadline_ms = before.owner, before.deadline_ms
            if self.start > start_before:
                for off in range(start_before, self.start):
                    self.window[off] = window_before[off]
                self.start = start_before
            self._advance()

        return durable, undo

    def _settle(self, rec: InFlight, to: int) -> None:
        """Leave ACQUIRED: to a terminal state, or back to AVAILABLE unless the delivery limit is reached."""
        if to == AVAILABLE:
            self.tally.released += 1
            if rec.delivery_count >= self.delivery_count_limit:
                to = ARCHIVED
        if to == ARCHIVED:
            self.tally.archived += 1
        elif to == ACKNOWLEDGED:
            self.tally.acknowledged += 1
        rec.state, rec.owner, rec.deadline_ms = to, "", 0

    def release_member(self, member: str) -> bool:
        """The member's share session closed or its connection dropped: its records become available."""
        changed = False
        for rec in self.window.values():
            if rec.state == ACQUIRED and rec.owner == member:
                self._settle(rec, AVAILABLE)
                changed = True
        if changed:
            self._advance()
        return changed

    def expire_locks(self, now_ms: int) -> bool:
        """Acquisition locks past their deadline: AVAILABLE again (ARCHIVED at the delivery limit)."""
        changed = False
        for rec in self.window.values():
            if rec.state == ACQUIRED and rec.deadline_ms <= now_ms:
                self._settle(rec, AVAILABLE)
                changed = True
        if changed:
            self._advance()
        return changed

    def next_deadline(self) -> int | None:
        deadlines = [r.deadline_ms for r in self.window.values() if r.state == ACQUIRED]
        return min(deadlines) if deadlines else None

    def _advance(self) -> None:
        """Move SPSO past the leading run of terminal offsets (Kafka's maybeUpdateCachedStateAndOffsets)."""
        while self.start < self.end and self.window[self.start].state in TERMINAL:
            del self.window[self.start]
            self.start += 1
