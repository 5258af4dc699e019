"""ListGroups (API key 16), versions 0-5, flexible from v3.

Version notes: v1 response ThrottleTimeMs; v2 same layout; v3 flexible encoding; v4 StatesFilter and
GroupState (KIP-518); v5 TypesFilter and GroupType (KIP-848).
"""

from __future__ import annotations

from groupcoord.protocol.schema import INT16, INT32, STRING, array, f, message, struct


@message(16, "request", valid="0-5", flexible="3+")
class ListGroupsRequest:
    states_filter: tuple[str, ...] = f(array(STRING), "4+")
    types_filter: tuple[str, ...] = f(array(STRING), "5+")


@struct
class ListedGroup:
    group_id: str = f(STRING, "0+")
    protocol_type: str = f(STRING, "0+")
    group_state: str = f(STRING, "4+", ignorable=True)
    group_type: str = f(STRING, "5+", ignorable=True)


@message(16, "response", valid="0-5", flexible="3+")
class ListGroupsResponse:
    throttle_time_ms: int = f(INT32, "1+", ignorable=True)
    error_code: int = f(INT16, "0+")
    groups: tuple[ListedGroup, ...] = f(array(ListedGroup), "0+")
