"""``ShareConsumer``: a KIP-932 share-group consumer for asyncio, modelled on Java 4.3's KafkaShareConsumer.

Membership runs in a task of its own (ShareGroupHeartbeat to the coordinator; the broker's simple assignor
says which partitions to fetch from). Records come from ShareFetch to each partition's leader, one share
session per broker (epoch 0 opens it, each answer moves it on, -1 closes it), and each delivered record
carries its delivery count. Acknowledgements wait in ``pending`` until the next fetch carries them (as Java
piggy-backs them), ``commit()`` sends them at once with ShareAcknowledge and returns once the broker answered
(the broker answers only once they are durable), and ``close()`` accepts or releases what is left, closes the
sessions and leaves the group with member epoch -1.

Modes (Kafka's ``share.acknowledgement.mode``): ``implicit`` accepts everything delivered by the previous
poll (for the iterator: the previous record) when the next poll starts; ``explicit`` leaves it to
``acknowledge()``. Back-pressure: at most ``max_in_flight`` records are delivered and unacknowledged at once;
poll and the iterator wait (rather than fetch more) until the application acknowledges. Java instead throws
IllegalStateException from poll in explicit mode while records are unacknowledged; waiting lets an asyncio
application hand records to tasks that acknowledge later.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import uuid
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable

from groupcoord.membership.connection import ConnectionClosedError
from groupcoord.membership.member import parse_bootstrap
from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages.share_acknowledge import (
    AcknowledgePartition,
    AcknowledgeTopic,
    ShareAcknowledgeRequest,
    ShareAcknowledgeResponse,
)
from groupcoord.protocol.messages.share_fetch import (
    ShareFetchPartition,
    ShareFetchRequest,
    ShareFetchResponse,
    ShareFetchTopic,
    ShareForgottenTopic,
)
from groupcoord.protocol.messages.share_group_heartbeat import (
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from groupcoord.share.acks import AcknowledgeType, ShareRecord, encode_batches
from groupcoord.share.cluster import COORDINATOR_ERRORS, Cluster
from groupcoord.share.errors import ShareConsumerError, ShareStateError
from groupcoord.share.records import decode_batches

log = logging.getLogger(__name__)

TP = tuple[uuid.UUID, int]
#: (topic, partition, offsets, error code): the outcome of acknowledgements the broker answered
AckCallback = Callable[[str, int, tuple[int, ...], int], None]

SESSION_ERRORS = {ErrorCode.SHARE_SESSION_NOT_FOUND, ErrorCode.INVALID_SHARE_SESSION_EPOCH}
REJOIN_ERRORS = {ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH}
METADATA_ERRORS = {
    ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.UNKNOWN_TOPIC_ID,
    ErrorCode.FENCED_LEADER_EPOCH,
}
FINAL_EPOCH = -1
MAX_EPOCH = 0x7FFFFFFF


def new_member_id() -> str:
    """A random id in Kafka's Uuid text form (22 characters of URL-safe base64), as the Java client makes."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


class ShareConsumer:
    """One member of share group ``group_id`` reading ``topics`` (see the module docstring)."""

    def __init__(
        self,
        bootstrap: str,
        group_id: str,
        topics: Iterable[str],
        *,
        acknowledgement_mode: str = "implicit",
        max_poll_records: int = 500,
        max_in_flight: int | None = None,
        fetch_max_wait_ms: int = 500,
        fetch_min_bytes: int = 1,
        fetch_max_bytes: int = 52428800,
        request_timeout_s: float = 30.0,
        retry_backoff_s: float = 0.1,
        client_id: str = "groupcoord-share",
        on_acknowledged: AckCallback | None = None,
    ) -> None:
        if acknowledgement_mode not in ("implicit", "explicit"):
            raise ValueError("acknowledgement_mode must be 'implicit' or 'explicit'")
        self.group_id, self.topics = group_id, tuple(topics)
        self.explicit = acknowledgement_mode == "explicit"
        self.max_poll_records = max_poll_records
        self.max_in_flight = max_in_flight or max_poll_records
        self.fetch_max_wait_ms, self.fetch_min_bytes = fetch_max_wait_ms, fetch_min_bytes
        self.fetch_max_bytes, self.timeout = fetch_max_bytes, request_timeout_s
        self.retry_backoff, self.on_acknowledged = retry_backoff_s, on_acknowledged
        self.cluster = Cluster(parse_bootstrap(bootstrap), client_id, request_timeout_s)
        self.member_id = new_member_id()
        self.member_epoch = 0
        self.assignment: frozenset[TP] = frozenset()
        self.assigned = asyncio.Event()
        self.heartbeat_interval = 1.0
        self.heartbeats: asyncio.Task[None] | None = None
        self.error: BaseException | None = None
        self.closed = False
        # per broker: share session epoch and the partitions in that session
        self.epochs: dict[int, int] = {}
        self.session_parts: dict[int, set[TP]] = {}
        self.buffer: deque[ShareRecord] = deque()  # fetched, not yet delivered
        self.in_flight: dict[tuple[uuid.UUID, int, int], ShareRecord] = {}  # delivered, not acknowledged
        self.pending: dict[TP, dict[int, int]] = {}  # acknowledged, not yet sent
        self.acked = asyncio.Event()
        self.stale_metadata = True

    # -- lifecycle ---------------------------------------------------------------------------------------
    async def start(self, wait: bool = True, timeout: float = 60.0) -> ShareConsumer:
        """Join the group (in the background); with ``wait``, return once the first heartbeat answered."""
        if self.heartbeats is None:
            self.heartbeats = asyncio.create_task(self._heartbeat_loop())
        if wait:
            waiter = asyncio.create_task(self.assigned.wait())
            done, _ = await asyncio.wait(
                {waiter, self.heartbeats}, timeout=timeout, return_when="FIRST_COMPLETED"
            )
            waiter.cancel()
            if self.heartbeats in done:
                self.heartbeats.result()
            if waiter not in done:
                raise TimeoutError(f"not a member of share group {self.group_id!r} after {timeout}s")
        return self

    async def __aenter__(self) -> ShareConsumer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self, timeout: float = 30.0) -> None:
        """Finish cleanly: in implicit mode accept what was delivered, release what was delivered but not
        acknowledged (explicit mode) and what was fetched but never delivered, send it all with the final
        ShareAcknowledge of each share session (epoch -1), then leave the group (member epoch -1)."""
        if self.closed:
            return
        self.closed = True
        self._settle_delivered(AcknowledgeType.ACCEPT if not self.explicit else AcknowledgeType.RELEASE)
        for rec in self.buffer:
            self.pending.setdefault((rec.topic_id, rec.partition), {})[rec.offset] = AcknowledgeType.RELEASE
        self.buffer.clear()
        self.acked.set()
        self.assigned.set()
        try:
            await asyncio.wait_for(self._send_acks(final=True), timeout)
        except (ConnectionClosedError, OSError, TimeoutError, ShareConsumerError) as exc:
            log.warning("share consumer %s: final acknowledgements not sent: %s", self.member_id, exc)
        if self.heartbeats is not None:
            self.heartbeats.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.heartbeats
        with contextlib.suppress(ConnectionClosedError, OSError, TimeoutError, ShareConsumerError):
            await asyncio.wait_for(self._heartbeat(leave=True), timeout)
        await self.cluster.close()

    # -- records -----------------------------------------------------------------------------------------
    async def poll(self, timeout: float = 1.0) -> list[ShareRecord]:
        """Up to ``max_poll_records`` records (fewer when ``max_in_flight`` leaves less room), waiting up to
        ``timeout`` seconds for some; [] when none came."""
        return await self._next(self.max_poll_records, timeout)

    def __aiter__(self) -> AsyncIterator[ShareRecord]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[ShareRecord]:
        while not self.closed:
            try:
                batch = await self._next(1, None)
            except ShareStateError:
                if self.closed:  # close() from another task ends the iteration
                    return
                raise
            if batch:
                yield batch[0]

    def acknowledge(self, record: ShareRecord, type: AcknowledgeType = AcknowledgeType.ACCEPT) -> None:
        """Explicit mode: mark ``record`` ACCEPT, RELEASE or REJECT; sent with the next fetch or ``commit()``."""
        if not self.explicit:
            raise ShareStateError(
                "acknowledge() needs acknowledgement_mode='explicit' (implicit mode is in use)"
            )
        if type not in (AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT):
            raise ValueError(f"cannot acknowledge with {type!r}")
        if self.in_flight.pop(record.ident, None) is None:
            raise ShareStateError(
                f"record {record.topic}-{record.partition}@{record.offset} is not in flight"
            )
        self.pending.setdefault((record.topic_id, record.partition), {})[record.offset] = int(type)
        self.acked.set()

    async def commit(self) -> dict[tuple[str, int], int]:
        """Send every pending acknowledgement now (ShareAcknowledge) and wait for the answers, which the broker
        gives once they are durable. Returns {(topic, partition): error code} (0: all applied)."""
        self._check()
        if not self.explicit:
            self._settle_delivered(AcknowledgeType.ACCEPT)
        return await self._send_acks(final=False)

    @property
    def delivered_unacknowledged(self) -> int:
        return len(self.in_flight)

    # -- the poll ----------------------------------------------------------------------------------------
    def _check(self) -> None:
        if self.error is not None:
            raise self.error
        if self.closed:
            raise ShareStateError("this share consumer is closed")

    def _settle_delivered(self, type: AcknowledgeType) -> None:
        for rec in self.in_flight.values():
            self.pending.setdefault((rec.topic_id, rec.partition), {})[rec.offset] = int(type)
        self.in_flight.clear()

    async def _next(self, limit: int, timeout: float | None) -> list[ShareRecord]:
        self._check()
        if self.heartbeats is None:
            await self.start(wait=False)
        if not self.explicit:
            self._settle_delivered(AcknowledgeType.ACCEPT)
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            self._check()
            room = min(limit, self.max_in_flight - len(self.in_flight))
            if room > 0 and self.buffer:
                out = [self.buffer.popleft() for _ in range(min(room, len(self.buffer)))]
                for rec in out:
                    self.in_flight[rec.ident] = rec
                return out
            left = None if deadline is None else deadline - loop.time()
            if left is not None and left <= 0:
                return []
            if room <= 0:  # back-pressure: wait for acknowledge()
                self.acked.clear()
                await _wait(self.acked, left)
                continue
            if not self.assignment:
                self.assigned.clear()
                await _wait(self.assigned, left if left is None else min(left, 1.0))
                continue
            wait_ms = (
                self.fetch_max_wait_ms
                if left is None
                else max(0, min(self.fetch_max_wait_ms, int(left * 1000)))
            )
            await self._fetch_all(wait_ms, room)

    async def _fetch_all(self, wait_ms: int, max_records: int) -> None:
        if self.stale_metadata or any(tp not in self.cluster.leaders for tp in self.assignment):
            try:
                await self.cluster.refresh()
                self.stale_metadata = False
            except (ConnectionClosedError, OSError, TimeoutError) as exc:
                log.info("share consumer %s: metadata refresh failed: %s", self.member_id, exc)
                await asyncio.sleep(self.retry_backoff)
                return
        by_node: dict[int, set[TP]] = {}
        for tp in self.assignment:
            leader = self.cluster.leaders.get(tp)
            if leader is not None:
                by_node.setdefault(leader, set()).add(tp)
        for node_id in self.session_parts:
            by_node.setdefault(node_id, set())  # sessions whose partitions all went: forget them there
        if not by_node:  # no leader known for what we were assigned (yet): ask again a little later
            self.stale_metadata = True
            await asyncio.sleep(self.retry_backoff)
            return
        results = await asyncio.gather(
            *(self._fetch_node(node_id, parts, wait_ms, max_records) for node_id, parts in by_node.items()),
            return_exceptions=True,
        )
        for r in results:
            if isinstance(r, ShareConsumerError):
                self.error = r
                raise r
            if isinstance(r, BaseException):
                log.info("share consumer %s: fetch failed: %r", self.member_id, r)
                # a leader that cannot be reached (killed, moved): ask Metadata again, as Java's client does on
                # a disconnect; else a stale leader would be asked forever
                self.stale_metadata = True
        if results and all(isinstance(r, BaseException) for r in results):
            await asyncio.sleep(self.retry_backoff)

    def _take_acks(self, parts: Iterable[TP]) -> dict[TP, dict[int, int]]:
        return {tp: self.pending.pop(tp) for tp in list(parts) if tp in self.pending}

    def _restore_acks(self, acks: dict[TP, dict[int, int]]) -> None:
        for tp, offsets in acks.items():
            for offset, t in offsets.items():
                self.pending.setdefault(tp, {}).setdefault(offset, t)

    async def _fetch_node(self, node_id: int, parts: set[TP], wait_ms: int, max_records: int) -> None:
        epoch = self.epochs.get(node_id, 0)
        in_session = self.session_parts.get(node_id, set())
        leaving = in_session - parts
        # acknowledgements for partitions this session no longer fetches go on their own
        if epoch > 0 and any(
            tp in self.pending and self.cluster.leaders.get(tp) == node_id for tp in leaving
        ):
            await self._acknowledge_node(node_id, leaving, final=False)
            epoch = self.epochs.get(node_id, 0)
        acks = self._take_acks(parts) if epoch > 0 else {}  # epoch 0 carries no acknowledgements
        if not parts and not acks and (epoch == 0 or not leaving):
            return
        topics: dict[uuid.UUID, list[ShareFetchPartition]] = {}
        for tid, p in sorted(parts | set(acks)):
            batches = encode_batches(acks.get((tid, p), {}))
            topics.setdefault(tid, []).append(
                ShareFetchPartition(partition_index=p, acknowledgement_batches=batches)
            )
        forgotten: dict[uuid.UUID, list[int]] = {}
        for tid, p in sorted(in_session - parts) if epoch > 0 else ():
            forgotten.setdefault(tid, []).append(p)
        req = ShareFetchRequest(
            group_id=self.group_id,
            member_id=self.member_id,
            share_session_epoch=epoch,
            max_wait_ms=wait_ms if parts else 0,  # acknowledgements or forgetting only: zeros, as Java sends
            min_bytes=self.fetch_min_bytes if parts else 0,
            max_bytes=self.fetch_max_bytes if parts else 0,
            max_records=max_records if parts else 0,
            batch_size=max_records if parts else 0,
            topics=tuple(ShareFetchTopic(topic_id=t, partitions=tuple(ps)) for t, ps in topics.items()),
            forgotten_topics_data=tuple(
                ShareForgottenTopic(topic_id=t, partitions=tuple(ps)) for t, ps in forgotten.items()
            ),
        )
        try:
            node = await self.cluster.node(node_id)
            resp = await node.request(ApiKey.SHARE_FETCH, req, self.timeout + wait_ms / 1000)
        except (ConnectionClosedError, OSError, TimeoutError):
            self._restore_acks(acks)
            self._reset_session(node_id)
            await self.cluster.drop(node_id)
            raise
        assert isinstance(resp, ShareFetchResponse)
        if resp.error_code:
            self._restore_acks(acks)
            self._top_level_error(node_id, resp.error_code, resp.error_message, "ShareFetch")
            await asyncio.sleep(self.retry_backoff)  # no tight loop of refused fetches
            return
        self.epochs[node_id] = _next_epoch(epoch)
        self.session_parts[node_id] = set(parts)
        for t in resp.responses:
            for pd in t.partitions:
                tp = (t.topic_id, pd.partition_index)
                if tp in acks:
                    self._report(tp, acks[tp], pd.acknowledge_error_code)
                if pd.error_code:
                    self._partition_error(tp, pd.error_code, pd.error_message)
                    continue
                self._deliverable(tp, pd.records, pd.acquired_records)

    def _deliverable(self, tp: TP, data: bytes | None, acquired: Iterable[object]) -> None:
        """Buffer the acquired records; acknowledge acquired offsets with no data record as GAP (control
        records of transactions, compacted offsets), as Kafka's ShareCompletedFetch does."""
        counts: dict[int, int] = {}
        for a in acquired:
            for offset in range(a.first_offset, a.last_offset + 1):  # type: ignore[attr-defined]
                counts[offset] = a.delivery_count  # type: ignore[attr-defined]
        if not counts:
            return
        topic = self.cluster.names.get(tp[0], str(tp[0]))
        for rec in decode_batches(data):
            count = counts.pop(rec.offset, None)
            if count is None or rec.is_control:
                if count is not None:
                    counts[rec.offset] = count  # a control record at an acquired offset: a gap below
                continue
            self.buffer.append(
                ShareRecord(
                    topic, tp[1], rec.offset, rec.timestamp, rec.key, rec.value, rec.headers, count, tp[0]
                )
            )
        for offset in counts:
            self.pending.setdefault(tp, {})[offset] = AcknowledgeType.GAP

    def _report(self, tp: TP, acks: dict[int, int], error: int) -> None:
        if error:
            log.info(
                "share consumer %s: acknowledgements on %s failed with error %d", self.member_id, tp, error
            )
        if self.on_acknowledged is not None:
            self.on_acknowledged(self.cluster.names.get(tp[0], str(tp[0])), tp[1], tuple(sorted(acks)), error)

    def _partition_error(self, tp: TP, code: int, message: str | None) -> None:
        if code in METADATA_ERRORS:
            self.stale_metadata = True
            return
        if code in (ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.GROUP_AUTHORIZATION_FAILED):
            raise ShareConsumerError(f"ShareFetch on {tp}: error {code} {message or ''}", code)
        log.info("share consumer %s: ShareFetch on %s: error %d %s", self.member_id, tp, code, message or "")

    def _top_level_error(self, node_id: int, code: int, message: str | None, what: str) -> None:
        if code in SESSION_ERRORS:
            self._reset_session(node_id)
            return
        if code in (
            ErrorCode.GROUP_AUTHORIZATION_FAILED,
            ErrorCode.UNSUPPORTED_VERSION,
            ErrorCode.INVALID_REQUEST,
        ):
            raise ShareConsumerError(f"{what} failed with error {code} {message or ''}", code)
        log.info("share consumer %s: %s error %d %s", self.member_id, what, code, message or "")

    def _reset_session(self, node_id: int) -> None:
        self.epochs[node_id] = 0
        self.session_parts.pop(node_id, None)

    # -- acknowledgements on their own --------------------------------------------------------------------
    async def _send_acks(self, final: bool) -> dict[tuple[str, int], int]:
        out: dict[tuple[str, int], int] = {}
        nodes = set(self.epochs) if final else set()
        for tp in self.pending:
            leader = self.cluster.leaders.get(tp)
            if leader is not None:
                nodes.add(leader)
        results = await asyncio.gather(
            *(self._acknowledge_node(n, None, final) for n in nodes), return_exceptions=True
        )
        for r in results:
            if isinstance(r, ShareConsumerError):
                raise r
            if isinstance(r, BaseException):
                raise ShareConsumerError(f"acknowledgements not sent: {r!r}") from r
            out.update(r)
        return out

    async def _acknowledge_node(
        self, node_id: int, only: set[TP] | None, final: bool
    ) -> dict[tuple[str, int], int]:
        epoch = self.epochs.get(node_id, 0)
        mine = [tp for tp in self.pending if self.cluster.leaders.get(tp) == node_id]
        acks = self._take_acks(tp for tp in mine if only is None or tp in only)
        if epoch == 0:
            # no open session: nothing this member holds there survived (the broker released it when the
            # session ended), so these acknowledgements cannot apply
            for tp, offsets in acks.items():
                self._report(tp, offsets, ErrorCode.SHARE_SESSION_NOT_FOUND)
            return {
                (self.cluster.names.get(tp[0], str(tp[0])), tp[1]): int(ErrorCode.SHARE_SESSION_NOT_FOUND)
                for tp in acks
            }
        if not acks and not final:
            return {}
        topics: dict[uuid.UUID, list[AcknowledgePartition]] = {}
        for (tid, p), offsets in sorted(acks.items()):
            topics.setdefault(tid, []).append(
                AcknowledgePartition(partition_index=p, acknowledgement_batches=encode_batches(offsets))
            )
        req = ShareAcknowledgeRequest(
            group_id=self.group_id,
            member_id=self.member_id,
            share_session_epoch=FINAL_EPOCH if final else epoch,
            topics=tuple(AcknowledgeTopic(topic_id=t, partitions=tuple(ps)) for t, ps in topics.items()),
        )
        try:
            node = await self.cluster.node(node_id)
            resp = await node.request(ApiKey.SHARE_ACKNOWLEDGE, req, self.timeout)
        except (ConnectionClosedError, OSError, TimeoutError):
            self._restore_acks(acks)
            self._reset_session(node_id)
            await self.cluster.drop(node_id)
            raise
        assert isinstance(resp, ShareAcknowledgeResponse)
        if resp.error_code:
            if not final:
                self._restore_acks(acks)
            self._top_level_error(node_id, resp.error_code, resp.error_message, "ShareAcknowledge")
            raise ShareConsumerError(f"ShareAcknowledge failed with error {resp.error_code}", resp.error_code)
        if final:
            self._reset_session(node_id)
        else:
            self.epochs[node_id] = _next_epoch(epoch)
        out: dict[tuple[str, int], int] = {}
        for t in resp.responses:
            for pd in t.partitions:
                tp = (t.topic_id, pd.partition_index)
                if tp in acks:
                    self._report(tp, acks[tp], pd.error_code)
                    out[(self.cluster.names.get(tp[0], str(tp[0])), tp[1])] = pd.error_code
        return out

    # -- membership --------------------------------------------------------------------------------------
    async def _heartbeat_loop(self) -> None:
        failures = 0
        while not self.closed:
            try:
                await self._heartbeat(leave=False)
                delay, failures = self.heartbeat_interval, 0
            except (ConnectionClosedError, OSError, TimeoutError) as exc:
                log.info("share consumer %s: heartbeat failed: %s", self.member_id, exc)
                await self.cluster.drop_coordinator()
                delay = min(1.0, self.retry_backoff * 2**failures)  # a coordinator that is down: back off
                failures += 1
            except ShareConsumerError as exc:
                self.error = exc
                self.assigned.set()
                self.acked.set()
                raise
            await asyncio.sleep(delay)

    async def _heartbeat(self, leave: bool) -> None:
        if leave and self.member_epoch == 0 and not self.assignment:
            return
        node = await self.cluster.find_coordinator(self.group_id)
        req = ShareGroupHeartbeatRequest(
            group_id=self.group_id,
            member_id=self.member_id,
            member_epoch=-1 if leave else self.member_epoch,
            subscribed_topic_names=None if leave else self.topics,
        )
        resp = await node.request(ApiKey.SHARE_GROUP_HEARTBEAT, req, self.timeout)
        assert isinstance(resp, ShareGroupHeartbeatResponse)
        if leave:
            return
        code = resp.error_code
        if code == 0:
            self.member_epoch = resp.member_epoch
            if resp.heartbeat_interval_ms > 0:
                self.heartbeat_interval = resp.heartbeat_interval_ms / 1000
            if resp.assignment is not None:
                self._assign(
                    frozenset((t.topic_id, p) for t in resp.assignment.topic_partitions for p in t.partitions)
                )
        elif code in REJOIN_ERRORS:
            log.info("share consumer %s: error %d, rejoining", self.member_id, code)
            self.member_epoch = 0
            self._assign(frozenset())
            self.heartbeat_interval = 0.0
        elif code in COORDINATOR_ERRORS:
            await self.cluster.drop_coordinator()
        else:
            raise ShareConsumerError(
                f"ShareGroupHeartbeat failed with error {code} {resp.error_message or ''}", code
            )

    def _assign(self, parts: frozenset[TP]) -> None:
        gone = self.assignment - parts
        if gone:  # records fetched from partitions we no longer own go back
            keep: deque[ShareRecord] = deque()
            for rec in self.buffer:
                if (rec.topic_id, rec.partition) in gone:
                    self.pending.setdefault((rec.topic_id, rec.partition), {})[rec.offset] = (
                        AcknowledgeType.RELEASE
                    )
                else:
                    keep.append(rec)
            self.buffer = keep
        if parts - set(self.cluster.leaders):
            self.stale_metadata = True
        self.assignment = parts
        self.assigned.set()


def _next_epoch(epoch: int) -> int:
    return 1 if epoch >= MAX_EPOCH else epoch + 1


async def _wait(event: asyncio.Event, timeout: float | None) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(event.wait(), timeout)
