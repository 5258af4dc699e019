"""``groupcoord.membership``: Kafka's group protocol for Python apps that are not consumers.

Join a group with your own protocol type, let the elected leader run your assignor over arbitrary resources
(tasks, shards, leadership of named jobs), and get each generation's share through callbacks or
``async for assignment in member.assignments()``. Works against groupcoord and Apache Kafka. Depends only on
:mod:`groupcoord.protocol` and asyncio. See docs/membership.md.
"""

from groupcoord.membership.assignors import (
    Assignor,
    GroupMemberInfo,
    ResourceAssignor,
    decode_resources,
    encode_resources,
    round_robin,
)
from groupcoord.membership.errors import AssignorError, BootstrapError, MembershipError
from groupcoord.membership.member import Assignment, GroupMember

__all__ = [
    "Assignment",
    "Assignor",
    "AssignorError",
    "BootstrapError",
    "GroupMember",
    "GroupMemberInfo",
    "MembershipError",
    "ResourceAssignor",
    "decode_resources",
    "encode_resources",
    "round_robin",
]
