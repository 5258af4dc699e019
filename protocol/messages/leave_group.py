"""LeaveGroup (API key 13), versions 0-5, flexible from v4.

Version notes:
- v1: response ThrottleTimeMs.  v2: same layout.
- v3: batched Members {MemberId, GroupInstanceId} replace the single MemberId (KIP-345); per-member errors.
- v4: flexible encoding.  v5: per-member Reason (KIP-800).
"""

from __future__ import annotations

from groupcoord.protocol.schema import INT16, INT32, STRING, array, f, message, struct


@struct
class MemberIdentity:
    member_id: str = f(STRING, "3+")
    group_instance_id: str | None = f(STRING, "3+", nullable="3+", default=None)
    reason: str | None = f(STRING, "5+", nullable="5+", default=None, ignorable=True)


@message(13, "request", valid="0-5", flexible="4+")
class LeaveGroupRequest:
    group_id: str = f(STRING, "0+")
    member_id: str = f(STRING, "0-2")
    members: tuple[MemberIdentity, ...] = f(array(MemberIdentity), "3+")


@struct
class MemberResponse:
    member_id: str = f(STRING, "3+")
    group_instance_id: str | None = f(STRING, "3+", nullable="3+")
    error_code: int = f(INT16, "3+")


@message(13, "response", valid="0-5", flexible="4+")
class LeaveGroupResponse:
    throttle_time_ms: int = f(INT32, "1+", ignorable=True)
    error_code: int = f(INT16, "0+")
    members: tuple[MemberResponse, ...] = f(array(MemberResponse), "3+")
