"""The share-group side of AlterShareGroupOffsets (91) and DeleteShareGroupOffsets (92): Kafka's
`GroupMetadataManager.alterShareGroupOffsets` and `GroupCoordinatorShard.initiateDeleteShareGroupOffsets`.

Pure, like the rest of the coordinator: each call checks the group (a share group, and empty), updates its
set of initialized share partitions, emits the group's record and answers once that record is durable. The
share-partition state itself (SPSO and in-flight records) lives in `server/share`; the handler writes it
after this step, as Kafka's coordinator hands the persister its initialize or delete request after its own
write.

Alter creates the group (empty) when it does not exist, as Kafka's `getOrMaybeCreateShareGroup(groupId,
true)` does; delete needs an existing group.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.coordinator.modern.share.group import ShareGroup
from groupcoord.server.coordinator.modern.share.manager import ShareGroupManager
from groupcoord.server.coordinator.records import ShareGroupRecord
from groupcoord.server.coordinator.types import Effects

E = ErrorCode
NO_OFFSET_INFO = "There is no offset information to delete."
UNKNOWN_TOPIC_MESSAGE = "This server does not host this topic-partition."


@dataclass(frozen=True, slots=True)
class ShareOffsetsDecision:
    """The coordinator's answer to an alter or delete of share-group offsets.

    `error` is the top-level error (the group is of another type, not empty, missing, or its record could not
    be written). For alter, `state_epoch` is the group epoch the fresh share-partition states carry (Kafka's
    InitializeShareGroupState StateEpoch). For delete, `topics` is topic name -> (error, message) for the
    topics that cannot be deleted and `deletable` the topic ids whose state is to be deleted.
    """

    error: int
    error_message: str | None = None
    state_epoch: int = 0
    topics: tuple[tuple[str, int, str | None], ...] = ()
    deletable: tuple[str, ...] = ()


def _share_group(mgr: ShareGroupManager, group_id: str, create: bool) -> ShareGroup | ShareOffsetsDecision:
    if mgr.is_other_group(group_id):
        return ShareOffsetsDecision(int(E.GROUP_ID_NOT_FOUND), f"Group {group_id} is not a share group.")
    g = mgr.groups.get(group_id)
    if g is None:
        if not create:
            return ShareOffsetsDecision(int(E.GROUP_ID_NOT_FOUND), f"Group {group_id} not found.")
        g = mgr.groups[group_id] = ShareGroup(group_id)
    if g.members:
        return ShareOffsetsDecision(
            int(E.NON_EMPTY_GROUP),
            "The group is not empty.",  # Kafka's Errors.NON_EMPTY_GROUP message
        )
    return g


def _answer_after_write(fx: Effects, token: Hashable, g: ShareGroup, decision: ShareOffsetsDecision) -> None:
    fx.record(ShareGroupRecord(g.group_id, g.value()))

    def after(ok: bool, now: int) -> Effects:
        more = Effects()
        more.reply(
            token,
            decision
            if ok
            else ShareOffsetsDecision(int(E.COORDINATOR_NOT_AVAILABLE), "The group could not be written."),
        )
        return more

    fx.after_persist = after


def alter_offsets(
    mgr: ShareGroupManager, group_id: str, partitions: Mapping[str, set[int]], token: Hashable, now_ms: int
) -> Effects:
    """AlterShareGroupOffsets: `partitions` is topic id (hex) -> the existing partitions to re-initialize
    (the handler answered the unknown ones). Marks them initialized and answers with the state epoch."""
    fx = Effects()
    g = _share_group(mgr, group_id, create=True)
    if isinstance(g, ShareOffsetsDecision):
        fx.reply(token, g)
        return fx
    for tid, ps in partitions.items():
        if ps:
            g.initialized.setdefault(tid, set()).update(ps)
    _answer_after_write(fx, token, g, ShareOffsetsDecision(0, None, state_epoch=g.group_epoch))
    return fx


def delete_offsets(
    mgr: ShareGroupManager,
    group_id: str,
    topics: Mapping[str, str | None],
    with_state: set[str],
    token: Hashable,
    now_ms: int,
) -> Effects:
    """DeleteShareGroupOffsets: `topics` is topic name -> its id (hex), None when the topic does not exist;
    `with_state` the topic ids that still have stored share-partition state for this group (a delete whose
    state write failed left them there: they may be deleted again, like Kafka's "deleting" topics). The
    deletable topics leave the initialized set."""
    fx = Effects()
    g = _share_group(mgr, group_id, create=False)
    if isinstance(g, ShareOffsetsDecision):
        fx.reply(token, g)
        return fx
    failed: list[tuple[str, int, str | None]] = []
    deletable: list[str] = []
    for name, tid in topics.items():
        if tid is None:
            failed.append((name, int(E.UNKNOWN_TOPIC_OR_PARTITION), UNKNOWN_TOPIC_MESSAGE))
        elif tid in g.initialized or tid in with_state:
            g.initialized.pop(tid, None)
            deletable.append(tid)
        else:
            failed.append((name, int(E.UNKNOWN_TOPIC_OR_PARTITION), NO_OFFSET_INFO))
    decision = ShareOffsetsDecision(0, None, topics=tuple(failed), deletable=tuple(deletable))
    _answer_after_write(fx, token, g, decision)
    return fx
