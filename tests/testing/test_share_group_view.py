"""The plugin's `describe`/`wait_group` on a KIP-932 share group (the in-process facade), driven by raw
ShareGroupHeartbeat frames from a thread (the server runs on the test's loop): the view carries the group
type, the group epoch, member epochs and assignments by topic name."""

from __future__ import annotations

import asyncio

import pytest

from groupcoord.protocol.messages.share_group_heartbeat import ShareGroupHeartbeatRequest
from groupcoord.testing.inprocess import start_groupcoord
from tests.integration.helpers import RawClient

pytestmark = pytest.mark.integration


def join(host: str, port: int, member: str) -> int:
    c = RawClient(host, port)
    try:
        r = c.request(76, 1, ShareGroupHeartbeatRequest("sg", member, 0, None, ("st",)))
        assert r.error_code == 0, r
        return r.member_epoch  # type: ignore[no-any-return]
    finally:
        c.close()


async def test_describe_and_wait_on_a_share_group(tmp_path) -> None:  # type: ignore[no-untyped-def]
    coord = await start_groupcoord(tmp_path, topics=(("st", 3),))
    try:
        host, port = coord.bootstrap.rsplit(":", 1)
        await asyncio.to_thread(join, host, int(port), "u1")
        view = await coord.wait_group("sg", state="Stable", members=1, timeout=30)
        (m,) = view.members
        assert (view.group_type, view.protocol_type, view.protocol, view.leader) == (
            "share",
            "share",
            "simple",
            None,
        )
        assert (m.member_id, m.member_epoch, m.assigned, m.subscribed_topics) == (
            "u1",
            view.generation,
            {"st": (0, 1, 2)},
            ("st",),
        )
    finally:
        await coord.stop()
