"""Any valid group id reaches its own group through the HTTP control endpoint and the subprocess facade: the
client percent-encodes each path segment, the server splits the path before decoding it (as UTF-8, strictly).
Before, `describe("orders?v=2")` answered for `orders` (the `?` started a query string)."""

from __future__ import annotations

import asyncio
import json
import socket

import pytest
from aiokafka import AIOKafkaConsumer

pytestmark = pytest.mark.integration

# each one meant something else in a URL: a query, a fragment, a path separator, an escape, a space, a
# relative path, a `+` (a space in a query), and text that is not ASCII
ODD_GROUP_IDS = ["orders?v=2", "x#y", "a/b", "%41", "with space", "..", "a+b", "ünï-群組", "semi;colon&amp"]


def _raw_http(host: str, port: int, request_line: bytes) -> tuple[int, dict]:
    """One request written byte for byte (what curl sends for a non-ASCII path), its status and JSON body."""
    with socket.create_connection((host, port), timeout=30) as s:
        s.sendall(request_line + b"\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


async def test_a_member_in_an_odd_group_is_seen_in_that_group_and_not_in_its_prefix(
    groupcoord_factory,
) -> None:  # type: ignore[no-untyped-def]
    coord = await groupcoord_factory(subprocess=True)
    group = "orders?v=2"
    c = AIOKafkaConsumer("t", bootstrap_servers=coord.bootstrap, group_id=group, session_timeout_ms=30_000)
    await c.start()
    try:
        view = await coord.wait_group(group, members=1, timeout=60)
        assert view.group_id == group and view.state == "Stable"
        assert coord.describe(group).members[0].member_id == view.members[0].member_id
        assert coord.describe("orders").state == "Dead"  # the prefix is another (absent) group
        assert group in coord.call("GET", "/v1/groups")["groups"]
        # a fault for the odd group takes only its requests, the facade's recording filter finds them
        coord.record()
        again = await coord.force_rebalance(group, reason="odd id")
        assert (again.group_id, again.state) == (group, "PreparingRebalance")
        rejoined = await coord.wait_group(group, members=1, generation=view.generation + 1, timeout=60)
        assert rejoined.group_id == group
        assert {r["api"] for r in coord.recorded(api="JoinGroup", group=group)} == {"JOIN_GROUP"}
        assert coord.recorded(api="JoinGroup", group="orders") == []
        await coord.expire_member(group, rejoined.members[0].member_id)
        assert rejoined.members[0].member_id not in {m.member_id for m in coord.describe(group).members}
    finally:
        await c.stop()


async def test_every_odd_group_id_round_trips_through_describe_and_wait(groupcoord_factory) -> None:  # type: ignore[no-untyped-def]
    coord = await groupcoord_factory(subprocess=True)
    for group in ODD_GROUP_IDS:
        assert coord.describe(group).group_id == group, group
        waited = await coord.wait_group(group, state="Dead", timeout=30)
        assert waited.group_id == group, group
        with pytest.raises(RuntimeError, match="404 no member"):
            await coord.expire_member(group, "m/1?x")
        with pytest.raises(RuntimeError, match=r"404 no group"):
            await coord.force_rebalance(group, reason="none there")
        stream = await asyncio.to_thread(coord.events, group)
        assert stream.drain() == []
        await asyncio.to_thread(stream.close)


def test_the_server_decodes_the_path_segment_by_segment_as_utf8(groupcoord_process) -> None:  # type: ignore[no-untyped-def]
    host, port = groupcoord_process.host, groupcoord_process.control_port
    # an encoded `/` stays inside its segment
    status, body = _raw_http(host, port, b"GET /v1/groups/a%2Fb HTTP/1.1")
    assert (status, body["group_id"]) == (200, "a/b")
    # a raw UTF-8 path, as curl sends it, is the same group as its percent-encoded form
    status, raw = _raw_http(host, port, "GET /v1/groups/群組 HTTP/1.1".encode())
    status2, escaped = _raw_http(host, port, b"GET /v1/groups/%E7%BE%A4%E7%B5%84 HTTP/1.1")
    assert (status, raw["group_id"]) == (status2, escaped["group_id"]) == (200, "群組")
    # an escape that is not UTF-8 is refused, never replaced by U+FFFD and answered for another group
    status, body = _raw_http(host, port, b"GET /v1/groups/%FF HTTP/1.1")
    assert status == 400 and "UTF-8" in body["error"]
    # an empty segment is an empty group id, not a missing segment (`/v1/groups//wait` is not group "wait")
    status, body = _raw_http(host, port, b"GET /v1/groups//wait?state=Dead&timeout_ms=1000 HTTP/1.1")
    assert (status, body["group_id"]) == (200, "")
