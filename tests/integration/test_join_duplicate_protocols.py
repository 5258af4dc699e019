"""A JoinGroup that lists the same protocol name twice (issue 10, defect 6), over raw wire bytes.

Kafka keys a member's protocols by name (JoinGroupRequest's Protocols has `mapKey` on Name), so
`[range, range]` is a member that supports `range`. Before the fix the server counted `range` twice, found
no protocol every member supports, raised inside the group step and never answered: the group stayed in
PreparingRebalance. The join must be answered, the group must become Stable and take other members.
"""

from __future__ import annotations

import threading

import pytest

from groupcoord.protocol.consumer import ConsumerProtocolSubscription, encode_subscription
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from groupcoord.protocol.messages.sync_group import SyncGroupRequest, SyncGroupRequestAssignment
from tests.integration.helpers import RawClient, describe_group, wait_for_sync

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

META = encode_subscription(ConsumerProtocolSubscription(topics=("t",)))


def join(raw: RawClient, member_id: str, protocols: tuple[str, ...], group: str = "dup") -> object:
    return raw.request(
        11,
        9,
        JoinGroupRequest(
            group_id=group,
            session_timeout_ms=10000,
            rebalance_timeout_ms=10000,
            member_id=member_id,
            protocol_type="consumer",
            protocols=tuple(JoinGroupRequestProtocol(name=p, metadata=META) for p in protocols),
        ),
    )


def join_with_id(raw: RawClient, protocols: tuple[str, ...], group: str = "dup") -> object:
    first = join(raw, "", protocols, group)
    assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED  # type: ignore[attr-defined]
    return join(raw, first.member_id, protocols, group)  # type: ignore[attr-defined]


def test_join_listing_a_protocol_twice_is_answered_and_the_group_becomes_stable(groupcoord_server) -> None:
    raw = RawClient(groupcoord_server.host, groupcoord_server.port, timeout=20)
    try:
        r = join_with_id(raw, ("range", "range"))
        assert (r.error_code, r.protocol_name, r.leader) == (0, "range", r.member_id)  # type: ignore[attr-defined]
        assert [m.member_id for m in r.members] == [r.member_id]  # type: ignore[attr-defined]
        s = raw.request(
            14,
            5,
            SyncGroupRequest(
                group_id="dup",
                generation_id=r.generation_id,  # type: ignore[attr-defined]
                member_id=r.member_id,  # type: ignore[attr-defined]
                protocol_type="consumer",
                protocol_name="range",
                assignments=(SyncGroupRequestAssignment(member_id=r.member_id, assignment=b""),),  # type: ignore[attr-defined]
            ),
        )
        assert s.error_code == 0
    finally:
        raw.close()
    g = describe_group(groupcoord_server.host, groupcoord_server.port, "dup")
    assert (g["state"], g["protocol"], len(g["members"])) == ("Stable", "range", 1)


def test_a_second_protocol_listed_twice_still_counts_once(groupcoord_server) -> None:
    """[roundrobin, range, range] and [range] share only range: that is what the group picks."""
    a = RawClient(groupcoord_server.host, groupcoord_server.port, timeout=20)
    b = RawClient(groupcoord_server.host, groupcoord_server.port, timeout=20)
    try:
        ra = join_with_id(a, ("roundrobin", "range", "range"), group="dup2")
        assert (ra.error_code, ra.protocol_name) == (0, "roundrobin")  # type: ignore[attr-defined]
        first = join(b, "", ("range",), group="dup2")
        assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED  # type: ignore[attr-defined]
        # b's join parks and starts a rebalance; then a rejoins, which completes it
        result: dict[str, object] = {}

        def join_b() -> None:
            result["b"] = join(b, first.member_id, ("range",), "dup2")  # type: ignore[attr-defined]

        t = threading.Thread(target=join_b)
        t.start()
        host, port = groupcoord_server.host, groupcoord_server.port
        wait_for_sync(
            lambda: describe_group(host, port, "dup2")["state"] == "PreparingRebalance",
            60,
            "b's join to park",
        )
        ra2 = join(a, ra.member_id, ("roundrobin", "range", "range"), group="dup2")  # type: ignore[attr-defined]
        t.join(20)
        rb = result["b"]
        assert (ra2.error_code, rb.error_code) == (0, 0)  # type: ignore[attr-defined]
        assert ra2.protocol_name == rb.protocol_name == "range"  # type: ignore[attr-defined]
    finally:
        a.close()
        b.close()
