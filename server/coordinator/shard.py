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

from collections.abc import Callable, Collection, Hashable, Iterable

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.coordinator.context import NONE, OperationContext
from groupcoord.server.coordinator.group import DEAD, EMPTY, ClassicGroup
from groupcoord.server.coordinator.group_manager import GroupMetadataManager
from groupcoord.server.coordinator.modern.share.config import ShareGroupConfig
from groupcoord.server.coordinator.modern.share.group import (
    DescribedShareGroup,
    ShareHeartbeatRequest,
)
from groupcoord.server.coordinator.modern.share.manager import SESSION_TIMER, ShareGroupManager
from groupcoord.server.coordinator.offset_manager import OffsetMetadataManager
from groupcoord.server.coordinator.records import (
    GroupRecord,
    OffsetRecord,
    OffsetValue,
    PendingOffsetRecord,
    Record,
    ShareGroupRecord,
    SharePartitionRecord,
)
from groupcoord.server.coordinator.types import (
    CoordinatorConfig,
    DescribedGroup,
    Effects,
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
    """All classic groups of this coordinator and their committed offsets."""

    def __init__(
        self,
        config: CoordinatorConfig | None = None,
        *,
        id_factory: Callable[[str], str] | None = None,
        share_config: ShareGroupConfig | None = None,
    ) -> None:
        self._ctx = OperationContext(config or CoordinatorConfig())
        self.group_manager = GroupMetadataManager(self._ctx, id_factory, on_group_dropped=self._drop_offsets)
        self.offset_manager = OffsetMetadataManager(self._ctx, self.group_manager)
        #: KIP-932 share groups (modern/share); one group id has one type, so each side asks the other
        self.share_manager = ShareGroupManager(share_config or ShareGroupConfig(), self.has_group)
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
        return list(self.group_manager.groups)

    def has_group(self, group_id: str) -> bool:
        return group_id in self.group_manager.groups

    def group(self, group_id: str) -> ClassicGroup | None:
        """The live group object (for tests and diagnostics; do not mutate)."""
        return self.group_manager.group(group_id)

    def committed_offsets(self, group_id: str) -> dict[tuple[str, int], OffsetValue]:
        return self.offset_manager.committed_offsets(group_id)

    # ============================================================================= group requests

    def join_group(self, req: JoinGroupRequest, token: Hashable, now_ms: int) -> Effects:
        if self.share_manager.has(req.group_id):
            # one id, one type: a classic join on a share group's id (Kafka: "not a classic group")
            fx = self._ctx.begin(now_ms)
            fx.reply(token, JoinGroupResult(int(E.GROUP_ID_NOT_FOUND), member_id=req.member_id))
            return fx
        return self.group_manager.join_group(req, token, now_ms)

    def sync_group(self, req: SyncGroupRequest, token: Hashable, now_ms: int) -> Effects:
        return self.group_manager.sync_group(req, token, now_ms)

    def heartbeat(self, req: HeartbeatRequest, now_ms: int) -> tuple[int, Effects | None]:
        return self.group_manager.heartbeat(req, now_ms)

    def leave_group(self, req: LeaveGroupRequest, now_ms: int) -> tuple[LeaveGroupResult, Effects]:
        return self.group_manager.leave_group(req, now_ms)

    def force_rebalance(self, group_id: str, reason: str, now_ms: int) -> tuple[str, Effects]:
        """Test control: rebalance a Stable/CompletingRebalance group now; returns the state it was in."""
        return self.group_manager.force_rebalance(group_id, reason, now_ms)

    def on_timer(self, key: tuple, now_ms: int) -> Effects:
        if key[0] == SESSION_TIMER:
            return self.share_manager.on_timer(key, now_ms)
        return self.group_manager.on_timer(key, now_ms)

    # ================================================================ share groups (KIP-932)

    def share_group_heartbeat(self, req: ShareHeartbeatRequest, token: Hashable, now_ms: int) -> Effects:
        return self.share_manager.heartbeat(req, token, now_ms)

    def share_group_describe(self, ids: Iterable[str]) -> list[DescribedShareGroup]:
        return self.share_manager.describe(ids)

    def share_subscribed_names(self, group_id: str) -> set[str]:
        return self.share_manager.subscribed_names(group_id)

    def has_share_group(self, group_id: str) -> bool:
        return self.share_manager.has(group_id)

    def describe_groups(self, ids: Iterable[str]) -> list[DescribedGroup]:
        return self.group_manager.describe_groups(ids)

    def list_groups(
        self, states_filter: Iterable[str] = (), types_filter: Iterable[str] = ()
    ) -> list[ListedGroup]:
        states = {s.lower() for s in states_filter}
        types = {t.lower() for t in types_filter}
        out = self.group_manager.list_groups(states_filter, types_filter)
        if not types or "share" in types:
            for g in self.share_manager.groups.values():
                if not states or g.state.lower() in states:
                    out.append(ListedGroup(g.group_id, "share", g.state, "share"))
        return out

    # ============================================================================ offset requests

    def commit_offsets(self, req: OffsetCommitRequest, token: Hashable, now_ms: int) -> Effects:
        if self.share_manager.has(req.group_id):
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
        return self.offset_manager.commit_offsets(req, token, now_ms)

    def txn_commit_offsets(self, req: TxnOffsetCommitRequest, token: Hashable, now_ms: int) -> Effects:
        """TxnOffsetCommit: the offsets stay pending until the transaction's marker (`complete_transaction`)."""
        return self.offset_manager.txn.commit(req, token, now_ms)

    def complete_transaction(
        self, group_id: str, producer_id: int, commit: bool, token: Hashable, now_ms: int
    ) -> Effects:
        """The transaction marker for one group (Kafka's `replayEndTransactionMarker`); `token` gets True
        once the outcome is durable."""
        return self.offset_manager.txn.complete(group_id, producer_id, commit, token, now_ms)

    def fetch_offsets(self, req: OffsetFetchRequest, now_ms: int) -> OffsetFetchResult:
        if self.share_manager.has(req.group_id):
            return OffsetFetchResult(int(E.GROUP_ID_NOT_FOUND), ())  # Kafka's ShareGroup.validateOffsetFetch
        return self.offset_manager.fetch_offsets(req, now_ms)

    def delete_offsets(
        self, group_id: str, topics: Iterable[tuple[str, Iterable[int]]], now_ms: int
    ) -> tuple[tuple[int, tuple[tuple[str, tuple[tuple[int, int], ...]], ...]], Effects]:
        """OffsetDelete (API 47): the result and the tombstones to write before answering."""
        fx = self._ctx.begin(now_ms)
        if self.share_manager.has(group_id):
            return (int(E.GROUP_ID_NOT_FOUND), ()), fx  # Kafka's ShareGroup.validateOffsetDelete
        return self.offset_manager.delete_offsets(group_id, topics), fx

    # ============================================================ across managers: delete, cleanup

    def delete_groups(self, ids: Iterable[str], now_ms: int) -> tuple[list[tuple[str, int]], Effects]:
        fx = self._ctx.begin(now_ms)
        results: list[tuple[str, int]] = []
        for gid in dict.fromkeys(ids):
            g = self.group_manager.group(gid)
            if g is None and self.share_manager.has(gid):
                results.append((gid, self.share_manager.delete(gid, fx)))
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
        elif isinstance(record, ShareGroupRecord):
            self.share_manager.replay(record)
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
        self.share_manager.on_loaded(fx, now_ms, group_ids)
        return fx

    def unload(self, now_ms: int, group_ids: Collection[str] | None = None) -> Effects:
        """Drop every group (or only `group_ids`: a shard this node lost) as Kafka does on resignation (spec
        §1.6, e.g. at shutdown): parked requests are answered NOT_COORDINATOR, timers cancelled, groups go
        Dead (journalled, reason `unloaded`)."""
        fx = self._ctx.begin(now_ms)
        self.group_manager.unload(group_ids)
        self.offset_manager.unload(group_ids)
        self.share_manager.unload(fx, group_ids)
        return fx
