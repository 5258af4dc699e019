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

from groupcoord.membership.errors import AssignorError


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
        """Each member's share; refuses (:class:`AssignorError`) a ``strategy`` result that breaks "one owner
        per resource": shares for unknown members, resources left unowned, given twice or made up."""
        ids = member_order(members)
        shares = self.strategy(list(self.resources), ids)
        check_shares(self.name, self.resources, ids, shares)
        return {m.member_id: encode_resources(shares.get(m.member_id, [])) for m in members}


def check_shares(
    name: str, resources: Sequence[str], member_ids: Sequence[str], shares: Mapping[str, Sequence[str]]
) -> None:
    """Every resource owned by exactly one known member, or :class:`AssignorError` naming what is wrong."""
    unknown_members = sorted(set(shares) - set(member_ids))
    if unknown_members:
        raise AssignorError(f"assignor {name!r} gave shares to unknown member ids {unknown_members}")
    owners: dict[str, list[str]] = {}
    for member_id, share in shares.items():
        for resource in share:
            owners.setdefault(resource, []).append(member_id)
    wanted = list(dict.fromkeys(resources))
    unowned = [r for r in wanted if r not in owners]
    if unowned:
        raise AssignorError(f"assignor {name!r} left resources unowned: {unowned}")
    twice = {r: sorted(o) for r, o in owners.items() if len(o) > 1}
    if twice:
        raise AssignorError(f"assignor {name!r} gave resources to more than one owner: {twice}")
    made_up = sorted(set(owners) - set(wanted))
    if made_up:
        raise AssignorError(f"assignor {name!r} assigned resources it was not given: {made_up}")
