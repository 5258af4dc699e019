"""Share-group journal events (docs/journal.md "Share groups") written by the real server: the group's
membership (group_created, member_joined, target_assignment, state_change, member_removed) from the
coordinator, and one `share_records` event per ShareFetch / ShareAcknowledge that moved records, with the
counts the report sums (tests/pipeline/test_transform.py)."""

from __future__ import annotations

from typing import Any

import pytest

from groupcoord.protocol.messages.delete_groups import DeleteGroupsRequest
from groupcoord.protocol.messages.share_group_heartbeat import ShareGroupHeartbeatRequest

from .helpers import RawClient, journal_events, wait_for_sync
from .test_share_fetch_wire import ACCEPT, REJECT, RELEASE, Member, ack_errors, acquired, b, produce, topic_id

pytestmark = [pytest.mark.integration, pytest.mark.owns_server]


def test_share_group_journal_events(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory("--topic", "t:1", "--share-auto-offset-reset", "earliest")
    produce(srv.bootstrap, 10)
    c = RawClient(srv.host, srv.port)
    tid = topic_id(c)
    hb = c.request(76, 1, ShareGroupHeartbeatRequest("g", "m1", 0, None, ("t",)))
    assert hb.error_code == 0
    m = Member(srv, "m1", tid)
    assert acquired(m.fetch(max_wait_ms=5000)) == [(0, 9, 1)]
    assert ack_errors(m.ack(b(0, 5, ACCEPT), b(6, 7, RELEASE), b(8, 9, REJECT))) == [0]
    left = c.request(76, 1, ShareGroupHeartbeatRequest("g", "m1", -1, None, None))
    assert left.error_code == 0

    def events() -> list[dict[str, Any]]:
        return journal_events(srv.data_dir, "g")

    wait_for_sync(lambda: any(e["event"] == "member_removed" for e in events()), 30, "the leave journaled")
    ev = events()
    kinds = [e["event"] for e in ev]
    assert kinds[:4] == ["group_created", "member_joined", "target_assignment", "state_change"]
    assert all(e["protocol_type"] == "share" for e in ev)
    joined = ev[1]
    assert joined["member_id"] == "m1" and joined["reason"] == "new_member" and joined["members"] == 1
    assert ev[2]["assignment"] == {"m1": ["t-0"]}
    assert (ev[3]["state_from"], ev[3]["state_to"]) == ("Empty", "Stable")
    records = [e for e in ev if e["event"] == "share_records"]
    assert [
        (e["reason"], e["acquired"], e["acknowledged"], e["released"], e["archived"]) for e in records
    ] == [
        ("fetch", 10, 0, 0, 0),
        ("acknowledge", 0, 6, 2, 2),
    ]
    removed = next(e for e in ev if e["event"] == "member_removed")
    assert removed["reason"] == "left" and removed["members"] == 0
    assert (ev[-1]["event"], ev[-1]["state_to"]) == ("state_change", "Empty")
    # DeleteGroups of the Empty share group: Dead, then group_deleted
    (result,) = c.request(42, 2, DeleteGroupsRequest(groups_names=("g",))).results
    assert result.error_code == 0
    wait_for_sync(lambda: any(e["event"] == "group_deleted" for e in events()), 30, "the delete journaled")
    tail = [(e["event"], e["state_to"], e["reason"]) for e in events()[-2:]]
    assert tail == [("state_change", "Dead", "deleted"), ("group_deleted", None, "deleted")]
