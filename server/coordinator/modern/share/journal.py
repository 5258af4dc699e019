"""Journal events of KIP-932 share groups (docs/journal.md "Share groups"), in the vocabulary the classic and
consumer groups use: `group_created`, `member_joined`, `member_removed` (`left`, `session_timeout`),
`target_assignment` (the `simple` assignor's result) and `state_change` (Empty <-> Stable). `protocol_type` is
`share`, `protocol` the assignor (`simple`), `generation` the group epoch. The record counts of ShareFetch and
ShareAcknowledge (`share_records`) come from the share partitions (server/share/service.py) with the same
fields. Pure: events go into the operation's `Effects`.
"""

from __future__ import annotations

from groupcoord.server.coordinator.context import EVENT_KEYS
from groupcoord.server.coordinator.modern.share.group import ShareGroup, ShareGroupMember
from groupcoord.server.coordinator.types import Effects

PROTOCOL_TYPE = "share"


def event(fx: Effects, g: ShareGroup, now_ms: int, name: str, **fields: object) -> None:
    """One event with every `EVENT_KEYS` field (unset ones None)."""
    ev: dict[str, object] = dict.fromkeys(EVENT_KEYS)
    ev["ts"] = now_ms
    ev["group"] = g.group_id
    ev["event"] = name
    ev["generation"] = g.group_epoch
    ev["members"] = len(g.members)
    ev["protocol_type"] = PROTOCOL_TYPE
    ev["protocol"] = "simple"
    ev.update(fields)
    fx.event(ev)


def member(fx: Effects, g: ShareGroup, now_ms: int, name: str, m: ShareGroupMember, reason: str) -> None:
    event(
        fx,
        g,
        now_ms,
        name,
        reason=reason,
        member_id=m.member_id,
        client_id=m.client_id,
        member_epoch=m.member_epoch,
    )


def target(fx: Effects, g: ShareGroup, now_ms: int, reason: str | None) -> None:
    """`target_assignment`: `{member: ["topic-partition", ...]}` by topic name."""
    names = {tid: name for name, (tid, _) in g.topics.items()}
    assignment: dict[str, list[str]] = {}
    for mid in sorted(g.target):
        parts = [f"{names.get(tid, tid)}-{p}" for tid, ps in g.target[mid].items() for p in sorted(ps)]
        assignment[mid] = sorted(parts)
    event(fx, g, now_ms, "target_assignment", reason=reason, assignment=assignment)


def state(fx: Effects, g: ShareGroup, now_ms: int, before: str, reason: str | None) -> None:
    """`state_change` when the group's state moved from `before`."""
    if g.state != before:
        event(fx, g, now_ms, "state_change", state_from=before, state_to=g.state, reason=reason)
