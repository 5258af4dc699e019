"""`GroupCoordinatorShard`: the one face of the pure coordinator (spec §1-§7), as in Kafka.

Kafka's `GroupCoordinatorShard` composes a `GroupMetadataManager` (groups and membership) and an
`OffsetMetadataManager` (committed offsets) and itself owns what spans both: record replay and load, group
deletion and the periodic cleanup that expires offsets and then deletes the Empty groups left without any.
This class does the same and forwards every single-manager request to its manager.

Every public method takes the current time and returns results plus `Effects`; nothing here does I/O, sleeps
or reads a clock. The actor applies the effects: timers and journal events at once, then the durable write
of `records`, then `after_persist(ok, now)`, then the replies. Replies that depend on a write succeeding
(leader's SyncGroup, static replacement in Stable, offset commits, group creation) are produced by
`after_persist`, which re-checks the group because other requests may have run while the write was in flight.

Parked JoinGroup/SyncGroup requests are represented by the caller's opaque `token` (must not be None),
stored on the member and handed back in `Effects.replies` when the request completes.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping
from typing import Any

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.coordinator.context import NONE, PERSIST_ERROR, OperationContext
from groupcoord.server.coordinator.conversions import GroupConversions
from groupcoord.server.coordinator.group import DEAD, EMPTY, ClassicGroup
from groupcoord.server.coordinator.group_manager import GroupMetadataManager
from groupcoord.server.coordinator.modern.consumer import migration
from groupcoord.server.coordinator.modern.consumer import views as consumer_views
from groupcoord.server.coordinator.modern.consumer.api import (
    ConsumerGroupConfig,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResult,
    DescribedConsumerGroup,
    StaticTopicImage,
    TopicImage,
)
from groupcoord.server.coordinator.modern.consumer.group import ConsumerGroup
from groupcoord.server.coordinator.modern.consumer.manager import (
    TIMER_KINDS,
    ConsumerGroupManager,
)
from groupcoord.server.coordinator.modern.consumer.validation import HeartbeatError
from groupcoord.server.coordinator.modern.share import offsets as share_offsets
from groupcoord.server.coordinator.modern.share.config import ShareGroupConfig
from groupcoord.server.coordinator.modern.share.group import (
    DescribedShareGroup,
    ShareHeartbeatRequest,
)
from groupcoord.server.coordinator.modern.share.manager import SESSION_TIMER, ShareGroupManager
from groupcoord.server.coordinator.modern.streams import manager as streams
from groupcoord.server.coordinator.modern.streams import shard_ops
from groupcoord.server.coordinator.modern.streams.api import StreamsGroupConfig, StreamsHeartbeatRequest
from groupcoord.server.coordinator.modern.streams.group import StreamsGroup
from groupcoord.server.coordinator.modern.streams.topology import PartitionCount
from groupcoord.server.coordinator.offset_manager import OffsetMetadataManager
from groupcoord.server.coordinator.records import (
    ConsumerGroupRecord,
    GroupRecord,
    OffsetRecord,
    OffsetValue,
    PendingOffsetRecord,
    Record,
    ShareGroupRecord,
    SharePartitionRecord,
    StreamsGroupRecord,
)
from groupcoord.server.coordinator.registry import CLASSIC, CONSUMER, SHARE, STREAMS, GroupRegistry
from groupcoord.server.coordinator.types import (
    CoordinatorConfig,
    DescribedGroup,
    Effects,
    FetchedPartition,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResult,
    LeaveGroupRequest,
    LeaveGroupResult,
    ListedGroup,
    OffsetCommitRequest,
    OffsetCommitResult,
    OffsetFetchRequest,
    OffsetFetchResult,
    SyncGroupRequest,
    TxnOffsetCommitRequest,
)

E = ErrorCode


class GroupCoordinatorShard:
    """All groups of this coordinator (classic and KIP-848 consumer groups) and their committed offsets."""

    def __init__(
        self,
        config: CoordinatorConfig | None = None,
        *,
        id_factory: Callable[[str], str] | None = None,
        consumer_config: ConsumerGroupConfig | None = None,
        share_config: ShareGroupConfig | None = None,
        streams_config: StreamsGroupConfig | None = None,
        topics: TopicImage | None = None,
    ) -> None:
        self._ctx = OperationContext(config or CoordinatorConfig())
        #: the topics as the coordinator sees them, for what no request brings an image to: classic members of
        #: consumer groups (their assignments name topics) and conversions started by a timer
        self.topics: TopicImage = topics if topics is not None else StaticTopicImage()
        #: Kafka's one `groups` map: which type's manager owns each group id; every manager registers in it
        #: when constructed and asks it (never another manager) which type holds an id (registry.py)
        self.groups = GroupRegistry()
        self.group_manager = GroupMetadataManager(
            self._ctx, self.groups, id_factory, on_group_dropped=self._drop_offsets
        )
        self.offset_manager = OffsetMetadataManager(self._ctx, self.group_manager, self.groups)
        self.consumer_manager = ConsumerGroupManager(
            self._ctx,
            self.groups,
            consumer_config,
            None if id_factory is None else (lambda: id_factory("")),
            downgrade=lambda group, member_ids, reason: self.conversions.downgrade(group, member_ids, reason),
        )
        #: KIP-1071 streams groups (modern/streams; the shard-side operations are `modern/streams/shard_ops.py`)
        self.streams_manager = streams.StreamsGroupManager(self._ctx, self.groups, streams_config)
        #: online migration: the moves between the two managers
        self.conversions = GroupConversions(
            self._ctx, self.group_manager, self.consumer_manager, lambda: self.topics
        )
        #: KIP-932 share groups (modern/share)
        self.share_manager = ShareGroupManager(share_config or ShareGroupConfig(), self.groups)
        #: share-partition state read at load, for the share-partition manager (server/share) to take
        self.loaded_share_partitions: list[SharePartitionRecord] = []

    @property
    def config(self) -> CoordinatorConfig:
        return self._ctx.config

    @config.setter
    def config(self, config: CoordinatorConfig) -> None:
        """Replace the limits (tests lower max_size as a restart with a new config would)."""
        self._ctx.config = config

    def _drop_offsets(self, group_id: str) -> None:
        self.offset_manager.remove_group(group_id)

    # ================================================================================== inspection

    def group_ids(self) -> list[str]:
        return [*self.group_manager.groups, *self.consumer_manager.groups, *self.streams_manager.groups]

    def has_group(self, group_id: str) -> bool:
        """Whether a classic or consumer group has this id."""
        return self.groups.is_of(group_id, CLASSIC) or self.groups.is_of(group_id, CONSUMER)

    def consumer_group(self, group_id: str) -> ConsumerGroup | None:
        """The live KIP-848 consumer group (for tests and diagnostics; do not mutate)."""
        return self.consumer_manager.group(group_id)

    def group(self, group_id: str) -> ClassicGroup | None:
        """The live group object (for tests and diagnostics; do not mutate)."""
        return self.group_manager.group(group_id)

    def committed_offsets(self, group_id: str) -> dict[tuple[str, int], OffsetValue]:
        return self.offset_manager.committed_offsets(group_id)

    @property
    def offsets_deleted(self) -> int:
        """Offsets removed by OffsetDelete since this shard started (Kafka's `offset-deletion-count`)."""
        return self.offset_manager.deleted_count

    def groups_with_pending_transaction(self, producer_id: int) -> list[str]:
        """The groups holding pending transactional offsets of `producer_id`: what an operator's marker for
        `__consumer_offsets` (WriteTxnMarkers) completes."""
        return [g for g, by_pid in self.offset_manager.txn.pending.items() if producer_id in by_pid]

    # ============================================================================= group requests

    # A classic request naming a consumer group comes from a classic member inside it (online migration,
    # spec §9.3): `modern/consumer/migration.py` serves it.

    def join_group(self, req: JoinGroupRequest, token: Hashable, now_ms: int) -> Effects:
        sg = self.streams_manager.group(req.group_id)
        if sg is not None:  # a non-empty streams group refuses; an empty one becomes classic (spec §12.1)
            if sg.members:
                fx = self._ctx.begin(now_ms)
                fx.reply(token, JoinGroupResult(int(E.INCONSISTENT_GROUP_PROTOCOL), member_id=""))
                return fx
            self.streams_manager.delete(req.group_id)
        cg = self.consumer_manager.group(req.group_id)
        cfg = self._ctx.config
        if cg is not None and cg.members:
            fx = self._ctx.begin(now_ms)
            if req.version == 0:  # v0 has no rebalance timeout: the session timeout stands for it
                req = dataclasses.replace(req, rebalance_timeout_ms=req.session_timeout_ms)
            if not cfg.min_session_timeout_ms <= req.session_timeout_ms <= cfg.max_session_timeout_ms:
                result = JoinGroupResult(int(E.INVALID_SESSION_TIMEOUT), member_id=req.member_id)
            else:
                result = migration.classic_join(
                    self.consumer_manager,
                    cg,
                    req,
                    self.topics,
                    cfg.max_size,
                    self.conversions.downgrade_replaced,
                )
            failed = JoinGroupResult(PERSIST_ERROR, member_id=req.member_id)
            self._reply_after_write(fx, token, result, failed)
            return fx
        if cg is not None:
            # an empty consumer group is replaced by a classic one (Kafka's classicGroupJoinToClassicGroup);
            # its offsets stay
            fx = self.group_manager.join_group(req, token, now_ms)
            if req.group_id in self.group_manager.groups:
                self.consumer_manager.delete(req.group_id, "converted")
            return fx
        if self.groups.held_by_other_than(req.group_id, CLASSIC):
            # one id, one type: a classic join on a share (or other modern) group's id ("not a classic group")
            fx = self._ctx.begin(now_ms)
            fx.reply(token, JoinGroupResult(int(E.GROUP_ID_NOT_FOUND), member_id=req.member_id))
            return fx
        return self.group_manager.join_group(req, token, now_ms)

    def _reply_after_write(self, fx: Effects, token: Hashable, result: object, failed: object) -> None:
        """Reply `result` once the operation's records are durable (`failed` if the write fails)."""
        if not fx.records:
            fx.reply(token, result)
            return

        def after(ok: bool, now: int) -> Effects:
            fx2 = self._ctx.begin(now)
            fx2.reply(token, result if ok else failed)
            return fx2

        fx.after_persist = after

    def sync_group(self, req: SyncGroupRequest, token: Hashable, now_ms: int) -> Effects:
        cg = self.consumer_manager.group(req.group_id)
        if cg is not None:
            fx = self._ctx.begin(now_ms)
            fx.reply(token, migration.classic_sync(self.consumer_manager, cg, req, self.topics))
            return fx
        return self.group_manager.sync_group(req, token, now_ms)

    def heartbeat(self, req: HeartbeatRequest, now_ms: int) -> tuple[int, Effects | None]:
        cg = self.consumer_manager.group(req.group_id)
        if cg is not None:
            fx = self._ctx.begin(now_ms)
            return migration.classic_heartbeat(self.consumer_manager, cg, req), fx
        return self.group_manager.heartbeat(req, now_ms)

    def heartbeat_timer(
        self, group_id: str, generation_id: int, member_id: str, instance_id: str | None, now_ms: int
    ) -> tuple[int | None, Hashable | None, int]:
        """The runtime's Heartbeat fast path; an error of None sends the request the general way (`heartbeat`):
        a classic member of a consumer group may need two timers moved."""
        if group_id in self.consumer_manager.groups:
            return None, None, 0
        return self.group_manager.heartbeat_timer(group_id, generation_id, member_id, instance_id, now_ms)

    def leave_group(self, req: LeaveGroupRequest, now_ms: int) -> tuple[LeaveGroupResult, Effects]:
        cg = self.consumer_manager.group(req.group_id)
        if cg is not None:
            fx = self._ctx.begin(now_ms)
            return migration.classic_leave(self.consumer_manager, cg, req), fx
        return self.group_manager.leave_group(req, now_ms)

    # ====================================================================== KIP-848 consumer groups

    def consumer_group_heartbeat(
        self, req: ConsumerGroupHeartbeatRequest, topics: TopicImage, token: Hashable, now_ms: int
    ) -> Effects:
        """ConsumerGroupHeartbeat (spec §2): `token` gets a `ConsumerGroupHeartbeatResult` once the
        records the heartbeat caused are durable."""
        fx = self._ctx.begin(now_ms)
        try:
            self.consumer_manager.validate(req)  # the request's own checks come first, as in Kafka
        except HeartbeatError as err:
            fx.reply(token, ConsumerGroupHeartbeatResult(err.code, err.message))
            return fx
        # one id, one type (Kafka: "not a consumer group"); a classic group of the id may be upgraded below
        if self.groups.held_by_other_than(req.group_id, CLASSIC, CONSUMER):
            message = f"Group {req.group_id} is not a consumer group."
            fx.reply(token, ConsumerGroupHeartbeatResult(int(E.GROUP_ID_NOT_FOUND), message))
            return fx
        classic = self.group_manager.group(req.group_id)
        if classic is not None and classic.state != DEAD:
            if req.member_epoch != 0 or req.group_id in self.consumer_manager.groups:
                message = f"Group {req.group_id} is not a consumer group."
                fx.reply(token, ConsumerGroupHeartbeatResult(int(E.GROUP_ID_NOT_FOUND), message))
                return fx
            if classic.state == EMPTY:
                self.group_manager.delete_group(classic, "converted")  # an empty classic group is replaced
            else:
                problem = self.conversions.upgrade(classic, topics)  # spec §9.1
                if problem is not None:
                    fx.reply(token, ConsumerGroupHeartbeatResult(int(E.GROUP_ID_NOT_FOUND), problem))
                    return fx
        result = self.consumer_manager.heartbeat(req, topics, validated=True)
        if not fx.records:
            fx.reply(token, result)
            return fx

        def after(ok: bool, now: int) -> Effects:
            fx2 = self._ctx.begin(now)
            fx2.reply(token, result if ok else ConsumerGroupHeartbeatResult(PERSIST_ERROR))
            return fx2

        fx.after_persist = after
        return fx

    def consumer_heartbeat_timer(
        self, group_id: str, member_id: str, fields: tuple[object, ...], now_ms: int
    ) -> tuple[int, Hashable, int] | None:
        """A steady-state ConsumerGroupHeartbeat (`ConsumerGroupManager.steady_heartbeat`, the decision
        `consumer_group_heartbeat` takes for the same request): (member epoch, session timer key, deadline),
        or None for `consumer_group_heartbeat` to decide. Only a group that is nothing but a consumer group
        (no share or classic group of that id) takes it."""
        if self.groups.held_by_other_than(group_id, CONSUMER):
            return None
        return self.consumer_manager.steady_heartbeat(group_id, member_id, fields, now_ms)

    def consumer_group_describe(self, ids: Iterable[str], topics: TopicImage) -> list[DescribedConsumerGroup]:
        default = self.consumer_manager.config.assignors[0]
        out = []
        for gid in ids:
            g = self.consumer_manager.group(gid)
            if g is not None:
                out.append(consumer_views.describe(g, topics, default))
            elif self.group_manager.group(gid) is not None:
                out.append(consumer_views.not_found(gid, f"Group {gid} is not a consumer group."))
            else:
                out.append(consumer_views.not_found(gid, f"Group {gid} not found."))
        return out

    def force_rebalance(self, group_id: str, reason: str, now_ms: int) -> tuple[str, Effects]:
        """Test control: rebalance a Stable/CompletingRebalance group now; returns the state it was in."""
        return self.group_manager.force_rebalance(group_id, reason, now_ms)

    def on_timer(self, key: tuple[Any, ...], now_ms: int) -> Effects:
        if key[0] in TIMER_KINDS:
            fx = self._ctx.begin(now_ms)
            self.consumer_manager.on_timer(key)
            return fx
        if key[0] in streams.TIMER_KINDS:
            fx = self._ctx.begin(now_ms)
            self.streams_manager.on_timer(key)
            return fx
        if key[0] == SESSION_TIMER:
            return self.share_manager.on_timer(key, now_ms)
        return self.group_manager.on_timer(key, now_ms)

    def set_group_config(self, group_id: str, group_configs: Mapping[str, str]) -> None:
        """A group's configs (Kafka's `GroupConfig`: `consumer.*`, `share.*`) changed or were loaded."""
        self.consumer_manager.set_group_config(group_id, group_configs)
        self.share_manager.set_group_config(group_id, group_configs)
        self.streams_manager.set_group_config(group_id, group_configs)

    # ============================================================== streams groups (KIP-1071)

    def streams_group_heartbeat(
        self, req: StreamsHeartbeatRequest, count: PartitionCount, token: Hashable, now_ms: int
    ) -> Effects:
        """StreamsGroupHeartbeat: `token` gets a `StreamsHeartbeatResult` once its records are durable."""

        def other_type(gid: str) -> bool:
            return self.groups.held_by_other_than(gid, CLASSIC, STREAMS)

        sm = self.streams_manager
        return shard_ops.heartbeat(self._ctx, self.group_manager, other_type, sm, req, count, token, now_ms)

    def streams_group(self, group_id: str) -> StreamsGroup | None:
        return self.streams_manager.group(group_id)

    # ================================================================ share groups (KIP-932)

    def share_group_heartbeat(self, req: ShareHeartbeatRequest, token: Hashable, now_ms: int) -> Effects:
        return self.share_manager.heartbeat(req, token, now_ms)

    def share_group_describe(self, ids: Iterable[str]) -> list[DescribedShareGroup]:
        return self.share_manager.describe(ids)

    def share_subscribed_names(self, group_id: str) -> set[str]:
        return self.share_manager.subscribed_names(group_id)

    def has_share_group(self, group_id: str) -> bool:
        return self.groups.is_of(group_id, SHARE)

    def share_initialized(self, group_id: str) -> dict[str, tuple[int, ...]]:
        return self.share_manager.initialized(group_id)

    def share_alter_offsets(
        self, group_id: str, partitions: Mapping[str, set[int]], token: Hashable, now_ms: int
    ) -> Effects:
        return share_offsets.alter_offsets(self.share_manager, group_id, partitions, token, now_ms)

    def share_delete_offsets(
        self,
        group_id: str,
        topics: Mapping[str, str | None],
        with_state: set[str],
        token: Hashable,
        now_ms: int,
    ) -> Effects:
        return share_offsets.delete_offsets(self.share_manager, group_id, topics, with_state, token, now_ms)

    def describe_groups(self, ids: Iterable[str]) -> list[DescribedGroup]:
        """Classic groups as DescribeGroups shows them; any other group id gets the empty Dead answer, marked
        with Kafka's reason (a consumer or share group is "not a classic group")."""
        out = []
        for d in self.group_manager.describe_groups(ids):
            if d.state == "Dead" and not d.members:
                gid = d.group_id
                modern = self.groups.held_by_other_than(gid, CLASSIC)
                reason = f"Group {gid} is not a classic group." if modern else f"Group {gid} not found."
                d = DescribedGroup(d.error, gid, d.state, d.protocol_type, d.protocol_data, (), reason)
            out.append(d)
        return out

    def list_groups(
        self, states_filter: Iterable[str] = (), types_filter: Iterable[str] = ()
    ) -> list[ListedGroup]:
        states = {s.strip().lower() for s in states_filter}
        types = {t.strip().lower() for t in types_filter}
        listed = self.group_manager.list_groups(states_filter, types_filter)
        if not types or "consumer" in types:
            for gid, g in self.consumer_manager.groups.items():
                if not states or g.state.lower() in states:
                    listed.append(ListedGroup(gid, "consumer", g.state, "consumer"))
        if not types or "share" in types:
            for sg in self.share_manager.groups.values():
                if not states or sg.state.lower() in states:
                    listed.append(ListedGroup(sg.group_id, "share", sg.state, "share"))
        listed += shard_ops.list_streams_groups(self.streams_manager, states, types)
        return listed

    # ============================================================================ offset requests

    def commit_offsets(
        self,
        req: OffsetCommitRequest,
        token: Hashable,
        now_ms: int,
        topic_ids: Callable[[str], uuid.UUID | None] | None = None,
    ) -> Effects:
        """`topic_ids` maps a committed topic name to its id, for a consumer group's per-partition
        assignment-epoch check (without it, no partition of an older epoch passes)."""
        if self.groups.without_offsets(req.group_id):
            # a share group has no committed offsets (Kafka's ShareGroup.validateOffsetCommit)
            fx = self._ctx.begin(now_ms)
            not_found = int(E.GROUP_ID_NOT_FOUND)
            fx.reply(
                token,
                OffsetCommitResult(
                    tuple((t, tuple((p.partition, not_found) for p in ps)) for t, ps in req.topics)
                ),
            )
            return fx
        sg = self.streams_manager.group(req.group_id)
        if sg is not None:
            checked = shard_ops.validate_commit(sg, req, False)
            return self.offset_manager.commit_offsets(req, token, now_ms, checked=checked)
        g = self.consumer_manager.group(req.group_id)
        if g is None:
            return self.offset_manager.commit_offsets(req, token, now_ms)
        lookup = topic_ids or (lambda name: None)
        partitions = [(lookup(topic), p.partition) for topic, parts in req.topics for p in parts]
        checked = g.validate_offset_commit(
            req.member_id, req.group_instance_id, req.generation_id, False, req.version, partitions
        )
        return self.offset_manager.commit_offsets(req, token, now_ms, checked=checked)

    def txn_commit_offsets(
        self,
        req: TxnOffsetCommitRequest,
        token: Hashable,
        now_ms: int,
        topic_ids: Callable[[str], uuid.UUID | None] | None = None,
    ) -> Effects:
        """TxnOffsetCommit: the offsets stay pending until the transaction's marker (`complete_transaction`).
        On a consumer group the member checks are `ConsumerGroup.validateOffsetCommit`'s transactional ones."""
        sg = self.streams_manager.group(req.group_id)
        if sg is not None:
            checked = shard_ops.validate_commit(sg, req, True)
            return self.offset_manager.txn.commit(req, token, now_ms, checked=checked)
        g = self.consumer_manager.group(req.group_id)
        if g is None:
            return self.offset_manager.txn.commit(req, token, now_ms)
        lookup = topic_ids or (lambda name: None)
        partitions = [(lookup(topic), p.partition) for topic, parts in req.topics for p in parts]
        checked = g.validate_offset_commit(
            req.member_id, req.group_instance_id, req.generation_id, True, req.version, partitions
        )
        return self.offset_manager.txn.commit(req, token, now_ms, checked=checked)

    def complete_transaction(
        self, group_id: str, producer_id: int, commit: bool, token: Hashable, now_ms: int
    ) -> Effects:
        """The transaction marker for one group (Kafka's `replayEndTransactionMarker`); `token` gets True
        once the outcome is durable."""
        return self.offset_manager.txn.complete(group_id, producer_id, commit, token, now_ms)

    def fetch_offsets(self, req: OffsetFetchRequest, now_ms: int) -> OffsetFetchResult:
        if self.groups.without_offsets(req.group_id):
            return OffsetFetchResult(int(E.GROUP_ID_NOT_FOUND), ())  # Kafka's ShareGroup.validateOffsetFetch
        g = self.consumer_manager.group(req.group_id) or self.streams_manager.group(req.group_id)
        if g is not None and req.version >= 9:
            err = g.validate_offset_fetch(req.member_id, req.member_epoch)
            if err:
                return OffsetFetchResult(err, _fetch_errors(req, err))
        return self.offset_manager.fetch_offsets(req, now_ms)

    def delete_offsets(
        self, group_id: str, topics: Iterable[tuple[str, Iterable[int]]], now_ms: int
    ) -> tuple[tuple[int, tuple[tuple[str, tuple[tuple[int, int], ...]], ...]], Effects]:
        """OffsetDelete (API 47): the result and the tombstones to write before answering."""
        fx = self._ctx.begin(now_ms)
        if self.groups.without_offsets(group_id):
            return (int(E.GROUP_ID_NOT_FOUND), ()), fx  # Kafka's ShareGroup.validateOffsetDelete
        if group_id in self.streams_manager.groups:  # always allowed for a streams group (spec §12.2)
            return (NONE, self.offset_manager.delete_offsets(group_id, topics)[1]), fx
        cg = self.consumer_manager.group(group_id)
        if cg is not None:  # a consumer group: no member check (spec §8.6), its subscriptions protect
            return (
                NONE,
                self.offset_manager.delete_unsubscribed(group_id, topics, cg.subscribed_names()),
            ), fx
        return self.offset_manager.delete_offsets(group_id, topics), fx

    # ============================================================ across managers: delete, cleanup

    def delete_groups(self, ids: Iterable[str], now_ms: int) -> tuple[list[tuple[str, int]], Effects]:
        fx = self._ctx.begin(now_ms)
        results: list[tuple[str, int]] = []
        for gid in dict.fromkeys(ids):
            sg = self.streams_manager.group(gid)
            if sg is not None:
                results.append((gid, shard_ops.delete_group(self.streams_manager, self.offset_manager, sg)))
                continue
            cg = self.consumer_manager.group(gid)
            if cg is not None:
                if cg.members:
                    results.append((gid, int(E.NON_EMPTY_GROUP)))
                else:
                    self.offset_manager.tombstone_group_offsets(gid)
                    self.consumer_manager.delete(gid)
                    self.offset_manager.remove_group(gid)
                    results.append((gid, NONE))
                continue
            g = self.group_manager.group(gid)
            if g is None and self.groups.is_of(gid, SHARE):
                results.append((gid, self.share_manager.delete(gid, fx, now_ms)))
            elif g is None or g.state == DEAD:
                results.append((gid, int(E.GROUP_ID_NOT_FOUND)))
            elif g.state != EMPTY:
                results.append((gid, int(E.NON_EMPTY_GROUP)))
            else:
                self.offset_manager.tombstone_group_offsets(gid)
                self._delete_group(g, "deleted")
                results.append((gid, NONE))
        return results, fx

    def cleanup_expired_offsets(self, now_ms: int) -> Effects:
        """Spec §6.6 (Kafka's `cleanupGroupMetadata`): expire offsets, then delete Empty groups left without."""
        fx = self._ctx.begin(now_ms)
        for g in list(self.group_manager.groups.values()):
            if self.offset_manager.cleanup_expired_offsets(g, now_ms) and g.state == EMPTY:
                self._delete_group(g, "expired")
        for cg in list(self.consumer_manager.groups.values()):
            subscribed = cg.subscribed_names()
            if (
                self.offset_manager.cleanup_expired_by_commit_time(cg.group_id, subscribed, now_ms)
                and not cg.members
            ):
                self.consumer_manager.delete(cg.group_id, "expired")
                self.offset_manager.remove_group(cg.group_id)
        return fx

    def reset_group(self, group_id: str, now_ms: int) -> Effects:
        """After a step of this group raised (a bug): answer its parked JoinGroup/SyncGroup requests
        UNKNOWN_SERVER_ERROR, cancel its timers, and replace it by an Empty group at the next generation,
        written and journalled (`GroupMetadataManager.reset_group`). No group: nothing to do."""
        fx = self._ctx.begin(now_ms)
        g = self.group_manager.group(group_id)
        if g is not None:
            self.group_manager.reset_group(g)
        return fx

    def _delete_group(self, g: ClassicGroup, reason: str) -> None:
        self.group_manager.delete_group(g, reason)
        self.offset_manager.remove_group(g.group_id)

    # ============================================================================ load from storage

    def replay(self, record: Record) -> None:
        """Apply one persisted record (latest value per key, any order between keys)."""
        if isinstance(record, GroupRecord):
            self.group_manager.replay_group(record)
        elif isinstance(record, OffsetRecord):
            self.offset_manager.replay_offset(record)
        elif isinstance(record, PendingOffsetRecord):
            self.offset_manager.txn.replay(record)
        elif isinstance(record, ConsumerGroupRecord):
            self.consumer_manager.replay(record)
        elif isinstance(record, ShareGroupRecord):
            self.share_manager.replay(record)
        elif isinstance(record, StreamsGroupRecord):
            self.streams_manager.replay(record)
        elif isinstance(record, SharePartitionRecord):
            self.loaded_share_partitions.append(record)
        # TxnRecords belong to the transaction coordinator (server/txn), which replays them itself

    def finish_load(self, now_ms: int, group_ids: Collection[str] | None = None) -> Effects:
        """Arm session timers for loaded members; journal loaded Empty groups; rebalance over-capacity groups.
        `group_ids`: only these were just replayed (a shard taken over in cluster mode); the others keep
        their timers."""
        fx = self._ctx.begin(now_ms)
        self.offset_manager.on_loaded()
        self.group_manager.on_loaded(group_ids)
        self.consumer_manager.on_loaded(group_ids)
        self.streams_manager.on_loaded(group_ids)
        self.share_manager.on_loaded(fx, now_ms, group_ids)
        return fx

    def unload(self, now_ms: int, group_ids: Collection[str] | None = None) -> Effects:
        """Drop every group (or only `group_ids`: a shard this node lost) as Kafka does on resignation (spec
        §1.6, e.g. at shutdown): parked requests are answered NOT_COORDINATOR, timers cancelled, groups go
        Dead (journalled, reason `unloaded`)."""
        fx = self._ctx.begin(now_ms)
        self.group_manager.unload(group_ids)
        self.consumer_manager.unload(group_ids)
        self.streams_manager.unload(group_ids)
        self.offset_manager.unload(group_ids)
        self.share_manager.unload(fx, group_ids)
        return fx


def _fetch_errors(req: OffsetFetchRequest, err: int) -> tuple[tuple[str, tuple[FetchedPartition, ...]], ...]:
    """Every requested partition with the group-level error (what Kafka's v9 handler fills in)."""
    if req.topics is None:
        return ()
    return tuple(
        (topic, tuple(FetchedPartition(p, -1, -1, "", err) for p in parts)) for topic, parts in req.topics
    )
