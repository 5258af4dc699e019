"""The KIP-848 member behind ``group_protocol="consumer"``: aiokafka's GroupCoordinator with its join/sync
replaced by ConsumerGroupHeartbeat (68) v1.

What stays aiokafka's: finding the coordinator, fetching committed offsets, auto-commit timing, the error
hand-over to ``getone``/``getmany``. What is new: one membership loop that heartbeats with a client-generated
member id and the member epoch, reconciles the broker's target assignment as Java's consumer does (revoke
first: commit the revoked partitions' consumed offsets when auto-commit is on, call ``on_partitions_revoked``;
then assign the added partitions and call ``on_partitions_assigned``; then acknowledge with the owned
partitions), commits with OffsetCommit v9 carrying the member epoch, leaves with epoch -1 (-2 for a static
member), and on FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID loses its partitions (``on_partitions_lost`` when the
listener has it, else ``on_partitions_revoked``, with no commit) and rejoins at epoch 0 with the same id.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import logging
import uuid
from typing import Any

import aiokafka.errors as Errors
from aiokafka.client import ConnectionGroup
from aiokafka.consumer.group_coordinator import GroupCoordinator
from aiokafka.structs import OffsetAndMetadata, TopicPartition

from groupcoord.aio.wire import WireRequest
from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    HeartbeatTopicPartitions,
)
from groupcoord.protocol.messages.metadata import MetadataRequest, MetadataResponse
from groupcoord.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)

log = logging.getLogger(__name__)

LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2
FENCE_ERRORS = {ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID}
COORDINATOR_ERRORS = {
    ErrorCode.NOT_COORDINATOR,
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
}


def new_member_id() -> str:
    """A random id in Kafka's Uuid text form (22 characters of URL-safe base64), as the Java client makes."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


class ConsumerProtocolCoordinator(GroupCoordinator):  # type: ignore[misc]
    """A consumer-group member speaking the KIP-848 protocol (see the module docstring)."""

    def __init__(self, *args: Any, remote_assignor: str | None = None, **kw: Any) -> None:
        self._remote_assignor = remote_assignor
        self.member_epoch = 0
        self._member_id = new_member_id()
        self._owned: set[TopicPartition] = set()
        self._topic_names: dict[uuid.UUID, str] = {}
        self._topic_ids: dict[str, uuid.UUID] = {}
        self._interval_s = kw.get("heartbeat_interval_ms", 3000) / 1000
        self._wake = asyncio.Event()
        self._last_assignment: Any = None
        self._last_listener: Any = None  # unsubscribe() drops the listener before the loop revokes
        super().__init__(*args, **kw)
        self.member_id = self._member_id

    # --- aiokafka's hooks -------------------------------------------------------------------------------

    def _on_metadata_change(self) -> None:
        """A topic appeared or grew: the broker notices by itself; only wake the loop (a pending target
        assignment may name a topic id we could not resolve yet)."""
        self._wake.set()

    def reset_generation(self) -> None:
        """aiokafka calls this on commit errors; for this member a fence comes from the heartbeat."""
        self._wake.set()

    def request_rejoin(self) -> None:
        self._wake.set()

    async def _coordination_routine(self) -> None:
        try:
            await self._membership_loop()
        except asyncio.CancelledError:  # pragma: no cover
            raise
        except Exception as exc:
            log.exception("Unexpected error in the consumer-protocol membership loop")
            kafka_exc = Errors.KafkaError(f"Unexpected error during coordination {exc!r}")
            self._subscription.abort_waiters(kafka_exc)
            raise kafka_exc from exc

    async def close(self) -> None:
        """Leave the group (after the last auto-commit), as aiokafka's close does."""
        if self._closing.done():
            return
        self._closing.set_result(None)
        self._wake.set()
        if not self._coordination_task.done():
            await self._coordination_task
        await self._stop_commit_offsets_refresh_task()

    def maybe_leave_group(self) -> None:
        """aiokafka's unsubscribe() calls this: the loop revokes first, then sends the leave heartbeat."""
        self._wake.set()

    async def _maybe_leave_group(self) -> None:
        """Send the leave heartbeat (epoch -1; -2 keeps a static member's assignment for its restart)."""
        if self.member_epoch <= 0 or self.coordinator_id is None:
            self.member_epoch = 0
            return
        epoch = STATIC_LEAVE_EPOCH if self._group_instance_id is not None else LEAVE_EPOCH
        request = ConsumerGroupHeartbeatRequest(
            group_id=self.group_id,
            member_id=self._member_id,
            member_epoch=epoch,
            instance_id=self._group_instance_id,
        )
        try:
            await self._send_req(WireRequest(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, request))
        except Errors.KafkaError as err:
            log.error("Leave heartbeat failed: %s", err)
        else:
            log.info("Left group %s (member %s, epoch %d)", self.group_id, self._member_id, epoch)
        self.member_epoch = 0

    # --- the membership loop ----------------------------------------------------------------------------

    async def _membership_loop(self) -> None:
        subscription = self._subscription.subscription
        while not self._closing.done():
            if subscription is None or not subscription.active:
                await asyncio.wait(
                    [self._subscription.wait_for_subscription(), self._closing],
                    return_when=asyncio.FIRST_COMPLETED,
                )
                subscription = self._subscription.subscription
                continue
            try:
                await self.ensure_coordinator_known()
                if self._closing.done():
                    break
                await self._heartbeat_once(subscription)
                if self._subscription.subscription is not subscription:
                    subscription = self._subscription.subscription
                    continue
                timeout = self._interval_s
                if subscription.assignment is not None and subscription.assignment.active:
                    auto = await self._maybe_do_autocommit(subscription.assignment)
                    if auto is not None:
                        timeout = min(timeout, auto)
            except Errors.KafkaError as exc:
                await self._push_error_to_user(exc)
                continue
            self._wake.clear()
            waits: list[Any] = [self._closing, asyncio.ensure_future(self._wake.wait())]
            if subscription.unsubscribe_future is not None:
                waits.append(subscription.unsubscribe_future)
            if self._commit_refresh_task is not None:
                waits.append(self._commit_refresh_task)
            await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            waits[1].cancel()
            task = self._commit_refresh_task
            if task is not None and task.done() and not task.cancelled() and task.exception():
                await self._push_error_to_user(task.exception())
            if not subscription.active:
                subscription = self._subscription.subscription
                if subscription is None:  # unsubscribe(): revoke first (listener, auto-commit), then leave
                    await self._revoke(set(self._owned), lost=False)
                    await self._maybe_leave_group()
        await self._finish()

    async def _finish(self) -> None:
        """On close: the last auto-commit of what was consumed, then the leave heartbeat."""
        assignment = self._subscription.subscription.assignment if self._subscription.subscription else None
        if assignment is not None and assignment.active:
            try:
                await self._maybe_do_last_autocommit(assignment)
            except Errors.KafkaError as err:
                log.error("Failed to commit on close: %s", err)
        await self._maybe_leave_group()

    async def _heartbeat_once(self, subscription: Any) -> None:
        pattern = self._subscription.subscribed_pattern
        self._last_listener = self._subscription.listener
        request = ConsumerGroupHeartbeatRequest(
            group_id=self.group_id,
            member_id=self._member_id,
            member_epoch=self.member_epoch,
            instance_id=self._group_instance_id,
            rebalance_timeout_ms=self._rebalance_timeout_ms,
            subscribed_topic_names=None if pattern is not None else tuple(sorted(subscription.topics)),
            subscribed_topic_regex=pattern.pattern if pattern is not None else None,
            server_assignor=self._remote_assignor,
            topic_partitions=self._owned_wire() if self.member_epoch > 0 else (),
        )
        response: ConsumerGroupHeartbeatResponse = await self._send_req(
            WireRequest(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, request)
        )
        code = response.error_code
        if code in COORDINATOR_ERRORS:
            self.coordinator_dead()
            await asyncio.sleep(self._retry_backoff_ms / 1000)
            return
        if code in FENCE_ERRORS:
            log.warning(
                "Member %s fenced (%s): partitions lost, rejoining", self._member_id, ErrorCode(code).name
            )
            await self._revoke(set(self._owned), lost=True)
            self.member_epoch = 0
            return
        if code != ErrorCode.NONE:
            raise Errors.for_code(code)(response.error_message or ErrorCode(code).name)
        if response.member_id:
            self._member_id = self.member_id = response.member_id
        self.member_epoch = response.member_epoch
        self.generation = response.member_epoch
        if response.heartbeat_interval_ms > 0:
            self._interval_s = response.heartbeat_interval_ms / 1000
        if response.assignment is not None:
            await self._reconcile(response.assignment.topic_partitions)

    def _owned_wire(self) -> tuple[HeartbeatTopicPartitions, ...]:
        by_topic: dict[uuid.UUID, list[int]] = collections.defaultdict(list)
        for tp in self._owned:
            topic_id = self._topic_ids.get(tp.topic)
            if topic_id is not None:
                by_topic[topic_id].append(tp.partition)
        return tuple(
            HeartbeatTopicPartitions(topic_id=t, partitions=tuple(sorted(p))) for t, p in by_topic.items()
        )

    # --- reconciliation ---------------------------------------------------------------------------------

    async def _reconcile(self, target_wire: tuple[HeartbeatTopicPartitions, ...]) -> None:
        """Move the owned partitions to the broker's target: revoke first, then assign, then acknowledge."""
        target: set[TopicPartition] = set()
        for entry in target_wire:
            name = await self._topic_name(entry.topic_id)
            if name is None:
                self._wake.set()  # retry once metadata knows the topic
                continue
            target.update(TopicPartition(name, p) for p in entry.partitions)
        subscribed = self._subscription.subscription
        if subscribed is None:
            return
        unknown = {tp for tp in target if tp.topic not in subscribed.topics}
        if unknown:  # a regex match aiokafka's metadata has not seen yet: refresh, reconcile the rest now
            self._client.force_metadata_update()
            self._wake.set()
            target -= unknown
        revoked = self._owned - target
        added = target - self._owned
        first = subscribed.assignment is None
        if revoked:
            await self._revoke(revoked, lost=False)
        if added or first:
            self._set_assignment(self._owned | added)
            self._owned |= added
            await self._call_listener("on_partitions_assigned", added)
        if revoked or added:
            self._wake.set()  # acknowledge promptly with the new owned set

    async def _revoke(self, revoked: set[TopicPartition], lost: bool) -> None:
        if not revoked:
            return
        subscribed = self._subscription.subscription
        assignment = self._last_assignment
        if not lost and assignment is not None and self._enable_auto_commit:
            offsets = {tp: o for tp, o in assignment.all_consumed_offsets().items() if tp in revoked}
            try:
                await self.commit_offsets(assignment, offsets)
            except Errors.KafkaError as err:
                log.error("Commit before revocation failed: %s", err)
        listener = self._subscription.listener or self._last_listener
        if lost and listener is not None and hasattr(listener, "on_partitions_lost"):
            await self._call_listener("on_partitions_lost", revoked)
        else:
            await self._call_listener("on_partitions_revoked", revoked)
        self._owned -= revoked
        if subscribed is not None and subscribed.active:
            self._set_assignment(self._owned)

    def _set_assignment(self, partitions: set[TopicPartition]) -> None:
        """Install a new aiokafka Assignment, keeping the positions of the partitions that stay."""
        old = self._last_assignment  # the previous one, even when a new subscription replaced it
        positions: dict[TopicPartition, int] = {}
        if old is not None:
            for tp in old.tps & partitions:
                state = old.state_value(tp)
                if state.has_valid_position:
                    positions[tp] = state.position
        topics = self._subscription.subscription.topics
        self._subscription.assign_from_subscribed({tp for tp in partitions if tp.topic in topics})
        new = self._last_assignment = self._subscription.subscription.assignment
        for tp, position in positions.items():
            new.state_value(tp).seek(position)
        self.start_commit_offsets_refresh_task(new)

    async def _call_listener(self, name: str, partitions: set[TopicPartition]) -> None:
        listener = self._subscription.listener or self._last_listener
        log.info("%s %s for group %s", name, sorted(partitions), self.group_id)
        if listener is None:
            return
        try:
            result = getattr(listener, name)(set(partitions))
            if asyncio.iscoroutine(result):
                await result
        except Exception:
            log.exception("Rebalance listener %s failed in %s", listener, name)

    async def _topic_name(self, topic_id: uuid.UUID) -> str | None:
        if topic_id not in self._topic_names:
            await self._load_topic_ids()
        return self._topic_names.get(topic_id)

    async def _load_topic_ids(self) -> None:
        """Metadata v12 for all topics: aiokafka's cluster metadata has no topic ids."""
        request = MetadataRequest(
            topics=None,
            allow_auto_topic_creation=False,
            include_cluster_authorized_operations=False,
            include_topic_authorized_operations=False,
        )
        node = self.coordinator_id
        if node is None:
            return
        response: MetadataResponse = await self._client.send(
            node,
            WireRequest(ApiKey.METADATA, 12, request, min_version=10),
            group=ConnectionGroup.COORDINATION,
        )
        for topic in response.topics:
            if topic.name:
                self._topic_names[topic.topic_id] = topic.name
                self._topic_ids[topic.name] = topic.topic_id

    # --- offsets ----------------------------------------------------------------------------------------

    async def _do_commit_offsets(
        self, assignment: Any, offsets: dict[TopicPartition, OffsetAndMetadata]
    ) -> None:
        """OffsetCommit v9 with the member epoch (Kafka rejects older versions from consumer-protocol members)."""
        if not offsets:
            return
        by_topic: dict[str, list[OffsetCommitRequestPartition]] = collections.defaultdict(list)
        for tp, offset in offsets.items():
            by_topic[tp.topic].append(
                OffsetCommitRequestPartition(
                    partition_index=tp.partition,
                    committed_offset=offset.offset,
                    committed_leader_epoch=-1,
                    committed_metadata=offset.metadata,
                )
            )
        for _attempt in range(20):
            request = OffsetCommitRequest(
                group_id=self.group_id,
                generation_id_or_member_epoch=self.member_epoch,
                member_id=self._member_id,
                group_instance_id=self._group_instance_id,
                topics=tuple(
                    OffsetCommitRequestTopic(name=t, partitions=tuple(p)) for t, p in by_topic.items()
                ),
            )
            response: OffsetCommitResponse = await self._send_req(
                WireRequest(ApiKey.OFFSET_COMMIT, 9, request, min_version=9)
            )
            codes = {p.error_code for t in response.topics for p in t.partitions} - {ErrorCode.NONE}
            if ErrorCode.STALE_MEMBER_EPOCH in codes:  # a heartbeat moved the epoch on: retry with it
                self._wake.set()
                await asyncio.sleep(self._retry_backoff_ms / 1000)
                continue
            if not codes:
                return
            code = min(codes)
            if code in COORDINATOR_ERRORS:
                self.coordinator_dead()
            if code in FENCE_ERRORS:
                raise Errors.UnknownMemberIdError(self.group_id)
            raise Errors.for_code(code)()
        raise Errors.CommitFailedError("OffsetCommit kept answering STALE_MEMBER_EPOCH")
