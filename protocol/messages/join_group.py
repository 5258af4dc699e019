"""JoinGroup (API key 11), versions 0-9, flexible from v6.

Version notes (request / response):
- v1: RebalanceTimeoutMs (v0 servers use the session timeout as the rebalance timeout).
- v2: response ThrottleTimeMs.  v3: same layout (clients throttle themselves).
- v4: same layout; a new dynamic member gets MEMBER_ID_REQUIRED (KIP-394).
- v5: GroupInstanceId (KIP-345, static membership); response members carry it too.
- v6: flexible encoding.  v7: response ProtocolType, ProtocolName nullable (KIP-559).
- v8: request Reason (KIP-800).  v9: response SkipAssignment (KIP-814).
"""

from __future__ import annotations

from groupcoord.protocol.schema import BOOL, BYTES, INT16, INT32, STRING, array, f, message, struct


@struct
class JoinGroupRequestProtocol:
    name: str = f(STRING, "0+")
    metadata: bytes = f(BYTES, "0+")


@message(11, "request", valid="0-9", flexible="6+")
class JoinGroupRequest:
    group_id: str = f(STRING, "0+")
    session_timeout_ms: int = f(INT32, "0+")
    rebalance_timeout_ms: int = f(INT32, "1+", default=-1, ignorable=True)
    member_id: str = f(STRING, "0+")
    group_instance_id: str | None = f(STRING, "5+", nullable="5+", default=None)
    protocol_type: str = f(STRING, "0+")
    protocols: tuple[JoinGroupRequestProtocol, ...] = f(array(JoinGroupRequestProtocol), "0+")
    reason: str | None = f(STRING, "8+", nullable="8+", default=None, ignorable=True)


@struct
class JoinGroupResponseMember:
    member_id: str = f(STRING, "0+")
    group_instance_id: str | None = f(STRING, "5+", nullable="5+", default=None, ignorable=True)
    metadata: bytes = f(BYTES, "0+")


@message(11, "response", valid="0-9", flexible="6+")
class JoinGroupResponse:
    throttle_time_ms: int = f(INT32, "2+", ignorable=True)
    error_code: int = f(INT16, "0+")
    generation_id: int = f(INT32, "0+", default=-1)
    protocol_type: str | None = f(STRING, "7+", nullable="7+", default=None, ignorable=True)
    protocol_name: str | None = f(STRING, "0+", nullable="7+")
    leader: str = f(STRING, "0+")
    skip_assignment: bool = f(BOOL, "9+", default=False)
    member_id: str = f(STRING, "0+")
    members: tuple[JoinGroupResponseMember, ...] = f(array(JoinGroupResponseMember), "0+")
