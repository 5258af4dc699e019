"""Journal events of KIP-848 consumer groups (docs/journal.md), in the vocabulary the classic groups use, so
that the console's rebalance timeline and the report read both.

A consumer group has no join/sync barrier: its "rebalance" is the span from a group epoch bump (state
`Assigning`, or `Reconciling` when the target is computed in the same heartbeat) until every member has
reconciled to the target (`Stable`) or the group is `Empty`. Each transition an operation passes through is
journaled in order, even when one heartbeat passes several (join, bump, target, reconciled), so the
timeline's phases show them all. Pure: events go into the operation's `Effects`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from groupcoord.server.coordinator.context import EVENT_KEYS, OperationContext
from groupcoord.server.coordinator.modern.consumer.api import TopicImage
from groupcoord.server.coordinator.modern.consumer.group import (
    ASSIGNING,
    EMPTY,
    RECONCILING,
    STABLE_STATE,
    ConsumerGroup,
)
from groupcoord.server.coordinator.modern.consumer.member import STATE_NAMES, ConsumerGroupMember

#: `protocol_type` of every consumer-group event (what ListGroups answers for such a group)
PROTOCOL_TYPE = "consumer"


class ConsumerJournal:
    def __init__(self, ctx: OperationContext, default_assignor: str) -> None:
        self.ctx = ctx
        self.default_assignor = default_assignor

    def event(self, g: ConsumerGroup, event: str, **fields: object) -> None:
        """One event with every `EVENT_KEYS` field: `generation` is the group epoch after the event."""
        ev: dict[str, object] = dict.fromkeys(EVENT_KEYS)
        ev["ts"] = self.ctx.now
        ev["group"] = g.group_id
        ev["event"] = event
        ev["generation"] = g.group_epoch
        ev["members"] = len(g.members)
        ev["protocol_type"] = PROTOCOL_TYPE
        ev["protocol"] = g.preferred_assignor(self.default_assignor)
        ev.update(fields)
        self.ctx.fx.event(ev)

    def member(
        self, g: ConsumerGroup, event: str, m: ConsumerGroupMember, reason: str | None, **f: object
    ) -> None:
        self.event(
            g,
            event,
            reason=reason,
            member_id=m.member_id,
            group_instance_id=m.instance_id,
            client_id=m.client_id,
            member_epoch=m.member_epoch,
            **f,
        )

    def target(self, g: ConsumerGroup, topics: TopicImage, reason: str | None) -> None:
        """`target_assignment`: the target just computed, as `{member: ["topic-partition", ...]}`."""
        self.event(
            g, "target_assignment", reason=reason, assignment=_named(g.target, topics), member_epoch=None
        )

    def states(self, g: ConsumerGroup, cause: str | None, bumped: bool, assigned: bool) -> None:
        """The `state_change` events from the state last journaled to the group's state now, through
        `Assigning` when the epoch was bumped and `Reconciling` when a target was computed."""
        after, cur = g.state, g.journaled_state
        g.journaled_state = after
        if after != EMPTY:
            if bumped and cur != ASSIGNING:
                self._change(g, cur, ASSIGNING, cause)
                cur = ASSIGNING
            if assigned and cur == ASSIGNING and after != ASSIGNING:
                self._change(g, cur, RECONCILING, "target_assignment")
                cur = RECONCILING
        if after != cur:
            self._change(g, cur, after, "reconciled" if after == STABLE_STATE else cause)

    def _change(self, g: ConsumerGroup, state_from: str, state_to: str, reason: str | None) -> None:
        self.event(g, "state_change", state_from=state_from, state_to=state_to, reason=reason)

    def reconciliation(
        self, g: ConsumerGroup, old: ConsumerGroupMember, new: ConsumerGroupMember, assignment_epoch: int
    ) -> None:
        """`member_epoch` when the member's epoch moves; `member_reconciled` (with the time since the target
        was computed) when it reaches the target epoch in state STABLE."""
        if new.member_epoch != old.member_epoch:
            self.member(g, "member_epoch", new, STATE_NAMES.get(new.state, "UNKNOWN").lower())
        if new.is_reconciled_to(assignment_epoch) and not old.is_reconciled_to(assignment_epoch):
            self.member(
                g, "member_reconciled", new, None, duration_ms=max(0, self.ctx.now - g.assignment_timestamp)
            )


def _named(
    target: Mapping[str, Mapping[uuid.UUID, frozenset[int]]], topics: TopicImage
) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for mid in sorted(target):
        parts: list[str] = []
        for tid, ps in target[mid].items():
            name = topics.topic_name(tid) or str(tid)
            parts += [f"{name}-{p}" for p in sorted(ps)]
        out[mid] = sorted(parts)
    return out
