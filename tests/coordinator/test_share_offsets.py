"""The pure coordinator's side of AlterShareGroupOffsets and DeleteShareGroupOffsets
(coordinator/modern/share/offsets.py): a share group only, empty only, alter creating the group, the
initialized partitions updated and written before the answer (SHARE_GROUPS_SPEC.md §6.3-§6.4)."""

from __future__ import annotations

import itertools
from typing import Any

from groupcoord.protocol.errors import ErrorCode as E
from groupcoord.server.coordinator.modern.share.group import ShareHeartbeatRequest
from groupcoord.server.coordinator.records import ShareGroupRecord
from groupcoord.server.coordinator.shard import GroupCoordinatorShard
from groupcoord.server.coordinator.types import Effects, JoinGroupRequest

_tokens = itertools.count()


def answer(fx: Effects, ok: bool = True) -> Any:
    replies = list(fx.replies)
    if fx.after_persist is not None:
        replies += list(fx.after_persist(ok, 0).replies)
    [(_, result)] = replies
    return result


def test_alter_creates_the_group_marks_initialized_and_waits_for_the_write() -> None:
    shard = GroupCoordinatorShard()
    fx = shard.share_alter_offsets("g", {"00aa": {0, 1}}, next(_tokens), 0)
    assert fx.replies == () and fx.after_persist is not None  # the answer waits for the record
    [rec] = fx.records
    assert isinstance(rec, ShareGroupRecord) and rec.group_id == "g"
    assert answer(fx).error == 0
    assert shard.has_share_group("g") and shard.share_initialized("g") == {"00aa": (0, 1)}
    failed = shard.share_alter_offsets("g", {"00aa": {2}}, next(_tokens), 0)
    assert answer(failed, ok=False).error == E.COORDINATOR_NOT_AVAILABLE


def test_alter_and_delete_refuse_non_empty_and_other_groups() -> None:
    shard = GroupCoordinatorShard()
    join = ShareHeartbeatRequest("g", "u1", 0, None, ("t",), "cid", "/127.0.0.1", {"t": ("00aa", 1)})
    assert answer(shard.share_group_heartbeat(join, next(_tokens), 0)).error == 0
    r = answer(shard.share_alter_offsets("g", {"00aa": {0}}, next(_tokens), 0))
    assert r.error == E.NON_EMPTY_GROUP
    r = answer(shard.share_delete_offsets("g", {"t": "00aa"}, set(), next(_tokens), 0))
    assert r.error == E.NON_EMPTY_GROUP
    shard.join_group(
        JoinGroupRequest(9, "classic", 10000, 10000, "", None, "consumer", (("range", b""),)), 1, 0
    )
    assert shard.has_group("classic")
    r = answer(shard.share_alter_offsets("classic", {"00aa": {0}}, next(_tokens), 0))
    assert r.error == E.GROUP_ID_NOT_FOUND and not shard.has_share_group("classic")
    r = answer(shard.share_delete_offsets("nobody", {"t": "00aa"}, set(), next(_tokens), 0))
    assert r.error == E.GROUP_ID_NOT_FOUND


def test_delete_removes_initialized_topics_and_reports_the_others() -> None:
    shard = GroupCoordinatorShard()
    answer(shard.share_alter_offsets("g", {"00aa": {0, 1}}, next(_tokens), 0))
    fx = shard.share_delete_offsets(
        "g", {"t": "00aa", "t2": "00bb", "t3": "00cc", "nope": None}, {"00cc"}, next(_tokens), 0
    )
    r = answer(fx)
    assert r.error == 0 and set(r.deletable) == {"00aa", "00cc"}  # 00cc: state left by a failed delete
    failed = {name: code for name, code, _ in r.topics}
    assert failed == {"t2": E.UNKNOWN_TOPIC_OR_PARTITION, "nope": E.UNKNOWN_TOPIC_OR_PARTITION}
    assert shard.share_initialized("g") == {}
