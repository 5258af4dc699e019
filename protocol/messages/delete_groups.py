"""DeleteGroups (API key 42), versions 0-3, flexible from v2.

Version notes: v1 same layout; v2 flexible encoding; v3 adds the per-group ErrorMessage (nullable, ignorable;
KIP-1331: a cause for GROUP_DELETION_FAILED, which Kafka turns into UNKNOWN_SERVER_ERROR below v3).
"""

from __future__ import annotations

from groupcoord.protocol.schema import INT16, INT32, STRING, array, f, message, struct


@message(42, "request", valid="0-3", flexible="2+")
class DeleteGroupsRequest:
    groups_names: tuple[str, ...] = f(array(STRING), "0+")


@struct
class DeletableGroupResult:
    group_id: str = f(STRING, "0+")
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "3+", nullable="3+", default=None, ignorable=True)


@message(42, "response", valid="0-3", flexible="2+")
class DeleteGroupsResponse:
    throttle_time_ms: int = f(INT32, "0+")
    results: tuple[DeletableGroupResult, ...] = f(array(DeletableGroupResult), "0+")
