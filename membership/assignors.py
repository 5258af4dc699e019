"""What the group leader runs: a user-supplied assignor over arbitrary resources.

The coordinator treats member metadata and assignments as opaque bytes (only ``protocol_type`` and the
protocol names matter to it), so a non-consumer group chooses its own encoding. :class:`ResourceAssignor`
is the ready-made one: members advertise nothing, resources (task names, shard ids, job names) are spread
with ``strategy`` and each member receives its share as a JSON list.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True, slots=True)
class GroupMemberInfo:
    """One member as the leader sees it in the JoinGroup response."""

    member_id: str
    instance_id: str | None
    metadata: bytes


class Assignor(Protocol):
    """A group protocol: its name, what this member advertises, and (on the leader) the assignment."""

    name: str

    def metadata(self) -> bytes: ...

    def assign(self, leader_id: str, members: Sequence[GroupMemberInfo]) -> Mapping[str, bytes]: ...


Strategy = Callable[[Sequence[str], Sequence[str]], Mapping[str, list[str]]]


def member_order(members: Sequence[GroupMemberInfo]) -> list[str]:
    """Static members by instance id first, then dynamic ones by member id, so restarts reshuffle little."""
    ordered = sorted(members, key=lambda m: (m.instance_id is None, m.instance_id or m.member_id))
    return [m.member_id for m in ordered]


def round_robin(resources: Sequence[str], member_ids: Sequence[str]) -> dict[str, list[str]]:
    """Resource i goes to member i mod N: loads differ by at most one."""
    out: dict[str, list[str]] = {m: [] for m in member_ids}
    for i, resource in enumerate(resources):
        out[member_ids[i % len(member_ids)]].append(resource)
    return out


def encode_resources(resources: Sequence[str]) -> bytes:
    return json.dumps(list(resources), separators=(",", ":")).encode()


def decode_resources(data: bytes) -> tuple[str, ...]:
    """A member's resources from its assignment bytes; empty for an empty or foreign assignment."""
    if not data:
        return ()
    try:
        value = json.loads(data)
    except ValueError:
        return ()
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


@dataclass
class ResourceAssignor:
    """Spreads named ``resources`` over the members (``strategy`` defaults to round robin)."""

    resources: Sequence[str]
    name: str = "resources"
    strategy: Strategy = field(default=round_robin)

    def metadata(self) -> bytes:
        return b""

    def assign(self, leader_id: str, members: Sequence[GroupMemberInfo]) -> dict[str, bytes]:
        shares = self.strategy(list(self.resources), member_order(members))
        return {m.member_id: encode_resources(shares.get(m.member_id, [])) for m in members}
