"""Rebalances as they happen, folded from journal events into a bounded timeline per group.

A rebalance is what docs/journal.md defines: the span from a `state_change` to `PreparingRebalance` (a consumer
group's: to `Assigning` or `Reconciling`) until the next `state_change` to `Stable` or `Empty` of the same group; its cause is the reason of the transition that
opened it. Members that joined or left during the span (or just before it opened: a JoinGroup adds the member
before the group changes state) are listed on its row. A static member that rejoins without a rebalance is a
replacement, listed apart.

Memory is bounded: `max_rows` rows and `max_rows` replacements per group, `max_groups` groups (the group
touched longest ago is forgotten first). Each event costs a dict look-up and a few appends, on the loop.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any

#: a classic group's rebalance opens at PreparingRebalance; a consumer group's (KIP-848) at its group epoch bump
#: (Assigning) or at Reconciling when the target was computed in the same heartbeat
OPENING = ("PreparingRebalance", "Assigning", "Reconciling")
CLOSING = ("Stable", "Empty")
#: a group's members that joined/left with no rebalance open are kept for this long to be put on the next row
STASH_MS = 60_000


def _start_generation(to: object, generation: object, before: int | None) -> int:
    """The generation a rebalance starts from. A classic group's PreparingRebalance still carries the old one;
    a consumer group's Assigning (or Reconciling) is journaled after its epoch was bumped, so the one it starts
    from is the generation of the group's state_change before it, or (none seen: a new group, whose first
    bump is from 0) one less: KIP-848 bumps the group epoch by one."""
    gen = generation if isinstance(generation, int) else 0
    if to == "PreparingRebalance":
        return gen
    if before is not None:
        return before
    return max(0, gen - 1)


@dataclass(slots=True)
class Rebalance:
    """One row of a group's timeline."""

    start_ms: int
    cause: str | None
    generation_from: int
    joined: list[dict[str, Any]] = field(default_factory=list)
    left: list[dict[str, Any]] = field(default_factory=list)
    end_ms: int | None = None
    generation: int | None = None
    members: int | None = None
    state_to: str | None = None
    protocol: str | None = None
    phases: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "start_ms": self.start_ms,
            "end_ms": self.end_ms,
            "duration_ms": None if self.end_ms is None else self.end_ms - self.start_ms,
            "cause": self.cause,
            "generation_from": self.generation_from,
            "generation": self.generation,
            "members": self.members,
            "state_to": self.state_to,
            "protocol": self.protocol,
            "joined": self.joined,
            "left": self.left,
            "phases": self.phases,
            "open": self.end_ms is None,
        }


@dataclass(slots=True)
class GroupTimeline:
    rows: deque[Rebalance]
    replacements: deque[dict[str, Any]]
    open: Rebalance | None = None
    stash_joined: list[dict[str, Any]] = field(default_factory=list)
    stash_left: list[dict[str, Any]] = field(default_factory=list)
    stash_ms: int = 0
    deleted_ms: int | None = None
    #: the generation the group's last `state_change` carried: where the next rebalance starts from
    generation: int | None = None

    def last(self) -> Rebalance | None:
        if self.open is not None:
            return self.open
        return self.rows[-1] if self.rows else None


class RebalanceTimeline:
    """The journal listener: `on_event` for every group event; `rows(group)` for the console."""

    def __init__(self, max_rows: int = 200, max_groups: int = 10_000) -> None:
        self.max_rows = max_rows
        self.max_groups = max_groups
        self._groups: OrderedDict[str, GroupTimeline] = OrderedDict()
        self.events_seen = 0

    def _group(self, gid: str) -> GroupTimeline:
        tl = self._groups.get(gid)
        if tl is None:
            tl = self._groups[gid] = GroupTimeline(deque(maxlen=self.max_rows), deque(maxlen=self.max_rows))
            while len(self._groups) > self.max_groups:
                self._groups.popitem(last=False)
        else:
            self._groups.move_to_end(gid)
        return tl

    def on_event(self, ev: dict[str, Any]) -> None:
        kind = ev.get("event")
        if kind == "lag_snapshot":
            return
        gid = ev.get("group")
        if not isinstance(gid, str):
            return
        self.events_seen += 1
        tl = self._group(gid)
        ts = int(ev.get("ts") or 0)
        if kind == "member_joined":
            self._member(tl, ts, tl.open.joined if tl.open else None, tl.stash_joined, ev)
        elif kind == "member_removed":
            self._member(tl, ts, tl.open.left if tl.open else None, tl.stash_left, ev)
        elif kind == "static_rejoin":
            tl.replacements.append(
                {
                    "ts": ts,
                    "group_instance_id": ev.get("group_instance_id"),
                    "member_id": ev.get("member_id"),
                    "previous_member_id": ev.get("previous_member_id"),
                    "generation": ev.get("generation"),
                    "skip_assignment": ev.get("skip_assignment"),
                }
            )
        elif kind == "state_change":
            self._state_change(tl, ts, ev)
        elif kind == "group_deleted":
            tl.deleted_ms = ts
        elif kind == "group_created":
            tl.deleted_ms = None

    @staticmethod
    def _member(
        tl: GroupTimeline,
        ts: int,
        target: list[dict[str, Any]] | None,
        stash: list[dict[str, Any]],
        ev: dict[str, Any],
    ) -> None:
        entry = {
            "ts": ts,
            "member_id": ev.get("member_id"),
            "client_id": ev.get("client_id"),
            "group_instance_id": ev.get("group_instance_id"),
            "reason": ev.get("reason"),
        }
        if target is not None:
            target.append(entry)
            return
        if ts - tl.stash_ms > STASH_MS:
            tl.stash_joined.clear()
            tl.stash_left.clear()
        tl.stash_ms = ts
        stash.append(entry)

    def _state_change(self, tl: GroupTimeline, ts: int, ev: dict[str, Any]) -> None:
        to = ev.get("state_to")
        generation = ev.get("generation")
        before, tl.generation = tl.generation, generation if isinstance(generation, int) else tl.generation
        if to in OPENING and tl.open is None:
            tl.open = Rebalance(ts, ev.get("reason"), _start_generation(to, generation, before))
            if ts - tl.stash_ms <= STASH_MS:
                tl.open.joined.extend(tl.stash_joined)
                tl.open.left.extend(tl.stash_left)
            tl.stash_joined.clear()
            tl.stash_left.clear()
        row = tl.open
        if row is None:
            return
        row.phases.append({"ts": ts, "state": to, "reason": ev.get("reason")})
        if to in CLOSING:
            row.end_ms = ts
            row.generation = generation if isinstance(generation, int) else None
            row.members = ev.get("members")
            row.state_to = to
            row.protocol = ev.get("protocol")
            tl.rows.append(row)
            tl.open = None

    # -- reads

    def rows(self, gid: str, limit: int = 50) -> list[dict[str, Any]]:
        """The newest `limit` rows, newest first; an open rebalance comes first."""
        tl = self._groups.get(gid)
        if tl is None:
            return []
        out = [tl.open.to_json()] if tl.open is not None else []
        for row in reversed(tl.rows):
            if len(out) >= limit:
                break
            out.append(row.to_json())
        return out

    def replacements(self, gid: str, limit: int = 50) -> list[dict[str, Any]]:
        tl = self._groups.get(gid)
        return [] if tl is None else list(reversed(tl.replacements))[:limit]

    def last(self, gid: str) -> dict[str, Any] | None:
        tl = self._groups.get(gid)
        row = None if tl is None else tl.last()
        return None if row is None else row.to_json()

    def count(self, gid: str) -> int:
        tl = self._groups.get(gid)
        return 0 if tl is None else len(tl.rows) + (tl.open is not None)
