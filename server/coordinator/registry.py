"""The one map of groups across the managers (issue 40): group id -> its type and the manager that owns it.

Kafka's `GroupMetadataManager` keeps every group, whatever its type, in one `groups` map, so "one id, one
type" is a lookup. Here each type's manager keeps its own groups (classic: `group_manager.py`, consumer:
`modern/consumer/manager.py`, share: `modern/share/manager.py`) and registers itself in one `GroupRegistry`
passed to every manager's constructor; whoever needs to know which type owns an id (the shard's type switches,
the offset manager, a manager refusing an id another type holds) asks the registry, never another manager.

A new group type (streams groups) plugs in by registering its manager: an object with a `group_type` name,
`holds_offsets` (whether its groups commit offsets, as classic, consumer and streams groups do and share
groups do not) and `has(group_id)`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

#: the group types, as ListGroups names them (Kafka's `Group.GroupType`)
CLASSIC = "classic"
CONSUMER = "consumer"
SHARE = "share"
STREAMS = "streams"


class GroupOwner(Protocol):
    """What the registry knows of a manager: its type, whether its groups hold offsets, and its group ids."""

    @property
    def group_type(self) -> str: ...

    @property
    def holds_offsets(self) -> bool: ...

    def has(self, group_id: str) -> bool: ...


class GroupRegistry:
    """Every group type's manager, in registration order (the order in which an id's owner is looked up)."""

    def __init__(self) -> None:
        self._owners: dict[str, GroupOwner] = {}

    def register(self, owner: GroupOwner) -> None:
        if owner.group_type in self._owners:
            raise ValueError(f"a {owner.group_type} group manager is already registered")
        self._owners[owner.group_type] = owner

    def __iter__(self) -> Iterator[GroupOwner]:
        return iter(self._owners.values())

    def owner(self, group_type: str) -> GroupOwner:
        return self._owners[group_type]

    def type_of(self, group_id: str) -> str | None:
        """The type of the group `group_id` names, or None when no manager has it."""
        for owner in self._owners.values():
            if owner.has(group_id):
                return owner.group_type
        return None

    def is_of(self, group_id: str, group_type: str) -> bool:
        """Whether the manager of `group_type` has a group `group_id`."""
        owner = self._owners.get(group_type)
        return owner is not None and owner.has(group_id)

    def held_by_other_than(self, group_id: str, *group_types: str) -> bool:
        """Whether a manager of another type than `group_types` has `group_id` (then it is none of those types'
        group: one id, one type)."""
        return any(o.has(group_id) for t, o in self._owners.items() if t not in group_types)

    def holds_offsets(self, group_id: str) -> bool:
        """Whether a group whose type commits offsets has this id (a simple group need not be recreated)."""
        return any(o.has(group_id) for o in self._owners.values() if o.holds_offsets)

    def without_offsets(self, group_id: str) -> bool:
        """Whether `group_id` is a group of a type that has no committed offsets (a share group): OffsetCommit,
        OffsetFetch and OffsetDelete answer GROUP_ID_NOT_FOUND for it."""
        return any(o.has(group_id) for o in self._owners.values() if not o.holds_offsets)
