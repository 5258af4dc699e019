"""DescribeGroups (API key 15), versions 0-6, flexible from v5.

Version notes: v1 response ThrottleTimeMs; v2 same layout; v3 IncludeAuthorizedOperations and
AuthorizedOperations (KIP-430); v4 members' GroupInstanceId (KIP-345); v5 flexible encoding; v6 per-group
ErrorMessage, and a group that does not exist or is not a classic group gets GROUP_ID_NOT_FOUND (KIP-1043)
instead of an empty Dead answer.
"""

from __future__ import annotations

from groupcoord.protocol.schema import BOOL, BYTES, INT16, INT32, STRING, array, f, message, struct


@message(15, "request", valid="0-6", flexible="5+")
class DescribeGroupsRequest:
    groups: tuple[str, ...] = f(array(STRING), "0+")
    include_authorized_operations: bool = f(BOOL, "3+", default=False)


@struct
class DescribedGroupMember:
    member_id: str = f(STRING, "0+")
    group_instance_id: str | None = f(STRING, "4+", nullable="4+", default=None, ignorable=True)
    client_id: str = f(STRING, "0+")
    client_host: str = f(STRING, "0+")
    member_metadata: bytes = f(BYTES, "0+")
    member_assignment: bytes = f(BYTES, "0+")


@struct
class DescribedGroup:
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "6+", nullable="6+", default=None)
    group_id: str = f(STRING, "0+")
    group_state: str = f(STRING, "0+")
    protocol_type: str = f(STRING, "0+")
    protocol_data: str = f(STRING, "0+")
    members: tuple[DescribedGroupMember, ...] = f(array(DescribedGroupMember), "0+")
    authorized_operations: int = f(INT32, "3+", default=-2147483648)


@message(15, "response", valid="0-6", flexible="5+")
class DescribeGroupsResponse:
    throttle_time_ms: int = f(INT32, "1+", ignorable=True)
    groups: tuple[DescribedGroup, ...] = f(array(DescribedGroup), "0+")
