"""Heartbeat (API key 12), versions 0-4, flexible from v4.

Version notes: v1 response ThrottleTimeMs; v2 same layout; v3 request GroupInstanceId (KIP-345);
v4 flexible encoding.
"""

from __future__ import annotations

from groupcoord.protocol.schema import INT16, INT32, STRING, f, message


@message(12, "request", valid="0-4", flexible="4+")
class HeartbeatRequest:
    group_id: str = f(STRING, "0+")
    generation_id: int = f(INT32, "0+")
    member_id: str = f(STRING, "0+")
    group_instance_id: str | None = f(STRING, "3+", nullable="3+", default=None)


@message(12, "response", valid="0-4", flexible="4+")
class HeartbeatResponse:
    throttle_time_ms: int = f(INT32, "1+", ignorable=True)
    error_code: int = f(INT16, "0+")
