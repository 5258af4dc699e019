"""Orderings that must match Java's so that Python and Java leaders produce the same assignment."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from groupcoord.assignors.model import Member


def java_key(text: str) -> bytes:
    """Sort key equal to Java's ``String.compareTo`` (UTF-16 code units), which differs from Python's
    code-point order for characters above U+FFFF."""
    return text.encode("utf-16-be", "surrogatepass")


def member_key(member: Member) -> tuple[int, bytes]:
    """Java's ``MemberInfo`` order: static members (group.instance.id) first by instance id, then dynamic
    members by member id."""
    if member.instance_id is not None:
        return (0, java_key(member.instance_id))
    return (1, java_key(member.member_id))


def sorted_members(members: Iterable[Member]) -> list[Member]:
    return sorted(members, key=member_key)
