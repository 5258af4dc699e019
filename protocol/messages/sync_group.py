"""SyncGroup (API key 14), versions 0-5, flexible from v4.

Version notes:
- v1: response ThrottleTimeMs.  v2: same layout.
- v3: request GroupInstanceId (KIP-345).
- v4: flexible encoding.
- v5: ProtocolType and ProtocolName in request and response (KIP-559); the broker requires them non-null.
"""

from __future__ import annotations

from groupcoord.protocol.schema import BYTES, INT16, INT32, STRING, array, f, message, struct


@struct
class SyncGroupRequestAssignment:
    member_id: str = f(STRING, "0+")
    assignment: bytes = f(BYTES, "0+")


@message(14, "request", valid="0-5", flexible="4+")
class SyncGroupRequest:
    group_id: str = f(STRING, "0+")
    generation_id: int = f(INT32, "0+")
    member_id: str = f(STRING, "0+")
    group_instance_id: str | None = f(STRING, "3+", nullable="3+", default=None)
    protocol_type: str | None = f(STRING, "5+", nullable="5+", default=None, ignorable=True)
    protocol_name: str | None = f(STRING, "5+", nullable="5+", default=None, ignorable=True)
    assignments: tuple[SyncGroupRequestAssignment, ...] = f(array(SyncGroupRequestAssignment), "0+")


@message(14, "response", valid="0-5", flexible="4+")
class SyncGroupResponse:
    throttle_time_ms: int = f(INT32, "1+", ignorable=True)
    error_code: int = f(INT16, "0+")
    protocol_type: str | None = f(STRING, "5+", nullable="5+", default=None, ignorable=True)
    protocol_name: str | None = f(STRING, "5+", nullable="5+", default=None, ignorable=True)
    assignment: bytes = f(BYTES, "0+")
