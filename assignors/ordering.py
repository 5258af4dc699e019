"""Orderings that must match Java's so that Python and Java leaders produce the same assignment."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, TypeVar


class Ordered(Protocol):
    """What the member order reads of a member (`assignors.model.Member`): a Protocol, not the class, so that
    `model` imports `ordering` and not the other way round (no import circle, even through type hints)."""

    @property
    def instance_id(self) -> str | None: ...

    @property
    def member_id(self) -> str: ...


M = TypeVar("M", bound=Ordered)


def java_key(text: str) -> bytes:
    """Sort key equal to Java's ``String.compareTo`` (UTF-16 code units), which differs from Python's
    code-point order for characters above U+FFFF."""
    return text.encode("utf-16-be", "surrogatepass")


def member_key(member: Ordered) -> tuple[int, bytes]:
    """Java's ``MemberInfo`` order: static members (group.instance.id) first by instance id, then dynamic
    members by member id."""
    if member.instance_id is not None:
        return (0, java_key(member.instance_id))
    return (1, java_key(member.member_id))


def sorted_members(members: Iterable[M]) -> list[M]:
    return sorted(members, key=member_key)
