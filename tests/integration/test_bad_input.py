"""Bad input affects only its own connection.

Each test runs a stable two-member aiokafka group and a bystander raw connection, then sends something
broken on a connection of its own: garbage, a truncated frame, a frame whose body does not decode, an
oversized frame, an unknown API key, an unsupported version of a known API, ApiVersions at v99. Afterwards:
the bad connection got what it should (closed, or an error response), the group kept its generation, members
and assignments (and the journal shows no new group events), the bystander connection still works, a fresh
client works, and the server process is alive.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import socket
import struct
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from groupcoord.protocol.codec import decode_response, encode_request
from groupcoord.protocol.consumer import ConsumerProtocolSubscription, encode_subscription
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages import RESPONSES
from groupcoord.protocol.messages.api_versions import ApiVersionsRequest
from groupcoord.protocol.messages.delete_groups import DeleteGroupsRequest
from groupcoord.protocol.messages.describe_groups import DescribeGroupsRequest
from groupcoord.protocol.messages.fetch import FetchRequest
from groupcoord.protocol.messages.heartbeat import HeartbeatRequest
from groupcoord.protocol.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from groupcoord.protocol.messages.leave_group import LeaveGroupRequest, MemberIdentity
from groupcoord.protocol.messages.list_groups import ListGroupsRequest
from groupcoord.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from groupcoord.protocol.messages.sync_group import SyncGroupRequest
from tests.integration.helpers import (
    HeartbeatCounter,
    RawClient,
    describe_group,
    exact_cover,
    journal_events,
    wait_for,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]
logging.getLogger("aiokafka").setLevel(logging.CRITICAL)

MAX_BYTES = 4096
GROUP = "g-steady"
TOPIC = "steady"


@dataclass
class Steady:
    server: Any
    consumers: list[AIOKafkaConsumer]
    bystander: RawClient
    heartbeats: list[HeartbeatCounter]

    async def snapshot(self) -> tuple[Any, ...]:
        d = await asyncio.to_thread(describe_group, self.server.host, self.server.port, GROUP)
        members = {mid: (m["client_id"], frozenset(m["partitions"])) for mid, m in d["members"].items()}
        gens = tuple(c._coordinator.generation for c in self.consumers)
        own = tuple(frozenset((tp.topic, tp.partition) for tp in c.assignment()) for c in self.consumers)
        return d["state"], d["protocol"], members, gens, own

    def group_events(self) -> list[dict]:
        return journal_events(self.server.data_dir, GROUP)


def frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def raw_request(api_key: int, version: int, body: Any, correlation: int = 7) -> bytes:
    return encode_request(api_key, version, correlation, body, client_id="bad-input-test")


def with_version(data: bytes, version: int) -> bytes:
    """A frame with its header's api_version replaced (the server peeks it before decoding anything)."""
    return data[:6] + struct.pack(">h", version) + data[8:]


def with_api_key(data: bytes, api_key: int) -> bytes:
    return data[:4] + struct.pack(">h", api_key) + data[6:]


def join_request(group: str) -> bytes:
    meta = encode_subscription(ConsumerProtocolSubscription(topics=(TOPIC,)))
    body = JoinGroupRequest(
        group_id=group,
        session_timeout_ms=6000,
        rebalance_timeout_ms=6000,
        member_id="",
        group_instance_id=None,
        protocol_type="consumer",
        protocols=(JoinGroupRequestProtocol(name="roundrobin", metadata=meta),),
    )
    return raw_request(11, 5, body)


@contextlib.asynccontextmanager
async def steady_group(server) -> AsyncIterator[Steady]:  # type: ignore[no-untyped-def]
    admin = AIOKafkaAdminClient(bootstrap_servers=server.bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(TOPIC, 4, 1)])
    finally:
        await admin.close()
    consumers = [
        AIOKafkaConsumer(
            TOPIC,
            bootstrap_servers=server.bootstrap,
            group_id=GROUP,
            session_timeout_ms=6000,
            heartbeat_interval_ms=300,
            enable_auto_commit=False,
        )
        for _ in range(2)
    ]
    bystander = await asyncio.to_thread(RawClient, server.host, server.port)
    try:
        await asyncio.gather(*(c.start() for c in consumers))
        everything = {(TOPIC, p) for p in range(4)}

        def ok() -> bool:
            owned = [{(tp.topic, tp.partition) for tp in c.assignment()} for c in consumers]
            return len({c._coordinator.generation for c in consumers}) == 1 and exact_cover(owned, everything)

        await wait_for(ok, 30, "the steady group to settle")
        yield Steady(server, consumers, bystander, [HeartbeatCounter(c) for c in consumers])
    finally:
        bystander.close()
        await asyncio.gather(*(c.stop() for c in consumers))


async def check_unaffected(steady: Steady, before: tuple[Any, ...], events_before: int) -> None:
    server = steady.server
    # a rebalance, had the bad input caused one, would make the members' heartbeats fail; wait until each
    # member has had two more succeed (or the server died)
    wanted = [h.ok + 2 for h in steady.heartbeats]
    await wait_for(
        lambda: not server.alive() or all(h.ok >= n for h, n in zip(steady.heartbeats, wanted, strict=True)),
        30,
        "two more successful heartbeats from every member",
    )
    assert server.alive(), server.log()
    after = await steady.snapshot()
    assert after == before
    assert after[0] == "Stable"
    new_events = steady.group_events()[events_before:]
    assert new_events == [], new_events

    # the bystander connection, open all along, still works
    resp = await asyncio.to_thread(steady.bystander.request, 18, 0, ApiVersionsRequest())
    assert resp.error_code == 0

    # so does a fresh client
    admin = AIOKafkaAdminClient(bootstrap_servers=server.bootstrap)
    await admin.start()
    try:
        listed = await asyncio.wait_for(admin.list_consumer_groups(), 60)
        assert [g[0] for g in listed] == [GROUP]  # nothing the bad input named was created
        described = (await asyncio.wait_for(admin.describe_consumer_groups([GROUP]), 60))[0].groups[0]
        assert described[2] == "Stable" and len(described[5]) == 2
        assert await asyncio.wait_for(admin.list_consumer_group_offsets(GROUP), 60) == {}  # nothing committed
    finally:
        await admin.close()


async def baseline(steady: Steady) -> tuple[tuple[Any, ...], int]:
    """A snapshot and the journal length, once the journal has caught up with the settled group."""

    generations = {c._coordinator.generation for c in steady.consumers}

    def stable_logged() -> bool:
        # the last event is the settled generation going Stable: nothing of the settling is still in flight
        events = steady.group_events()
        return (
            bool(events)
            and events[-1]["event"] == "state_change"
            and events[-1]["state_to"] == "Stable"
            and {events[-1]["generation"]} == generations
        )

    await wait_for(stable_logged, 60, "the journal to record the steady group")
    return await steady.snapshot(), len(steady.group_events())


# --- connections that must be closed by the server, with no reply ---

CLOSING_INPUTS: dict[str, Callable[[], bytes]] = {
    # an HTTP request: its first four bytes read as a ~1.1 GB size prefix
    "http_request": lambda: b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n",
    # a negative size prefix
    "negative_size": lambda: b"\xff\xff\xff\xf0" + bytes(64),
    # a JoinGroup v5 header prefix followed by 200 random bytes: the header itself does not decode
    "random_body": lambda: frame(bytes([0, 11, 0, 5]) + random.Random(20261122).randbytes(200)),
    # a frame too short to hold the 8-byte header prefix
    "runt_frame": lambda: frame(b"\x00\x0b\x00"),
    # JoinGroup v5 for the steady group whose group-id string length points past the frame
    "join_bad_string_length": lambda: corrupt_group_id_length(join_request(GROUP)),
    # JoinGroup v5 for the steady group whose protocols array claims 2^31-1 entries
    "join_bad_array_length": lambda: corrupt_protocols_count(join_request(GROUP)),
    # a well-formed JoinGroup for the steady group, but larger than --socket-request-max-bytes
    "oversized_join": lambda: oversized_join(),
    # only a size prefix above the limit
    "oversized_prefix": lambda: struct.pack(">i", MAX_BYTES + 1) + bytes(100),
    # an API key we do not serve (DeleteRecords, 21) and one nobody does (999)
    "unknown_api_21": lambda: with_api_key(raw_request(18, 0, ApiVersionsRequest()), 21),
    "unknown_api_999": lambda: with_api_key(raw_request(18, 0, ApiVersionsRequest()), 999),
    # unsupported versions of APIs whose response has no top-level error code at the nearest version we speak:
    # an empty answer would read as success (no brokers, no records, nothing committed), so the server closes
    "fetch_v3": lambda: with_version(raw_request(1, 4, FetchRequest()), 3),
    "offset_commit_v10_for_the_group": lambda: with_version(raw_request(8, 9, commit_for_the_group()), 10),
}


def corrupt_group_id_length(data: bytes) -> bytes:
    """Header v1 is api_key, version, correlation (8 bytes), then client_id (int16 length + bytes); the body
    starts with the group id's int16 length."""
    client_id_len = struct.unpack_from(">h", data, 4 + 8)[0]
    at = 4 + 8 + 2 + client_id_len
    assert data[at : at + 2] == struct.pack(">h", len(GROUP))
    return data[:at] + struct.pack(">h", 0x7FFF) + data[at + 2 :]


def corrupt_protocols_count(data: bytes) -> bytes:
    marker = struct.pack(">h", len("consumer")) + b"consumer"
    at = data.index(marker) + len(marker)
    assert struct.unpack_from(">i", data, at)[0] == 1
    return data[:at] + struct.pack(">i", 0x7FFFFFFF) + data[at + 4 :]


def commit_for_the_group() -> OffsetCommitRequest:
    return OffsetCommitRequest(
        group_id=GROUP,
        generation_id_or_member_epoch=-1,
        member_id="",
        topics=(
            OffsetCommitRequestTopic(
                name=TOPIC, partitions=(OffsetCommitRequestPartition(partition_index=0, committed_offset=99),)
            ),
        ),
    )


def oversized_join() -> bytes:
    meta = encode_subscription(
        ConsumerProtocolSubscription(topics=(TOPIC,), user_data=b"x" * (2 * MAX_BYTES))
    )
    body = JoinGroupRequest(
        group_id=GROUP,
        session_timeout_ms=6000,
        rebalance_timeout_ms=6000,
        member_id="",
        group_instance_id=None,
        protocol_type="consumer",
        protocols=(JoinGroupRequestProtocol(name="roundrobin", metadata=meta),),
    )
    data = raw_request(11, 5, body)
    assert len(data) - 4 > MAX_BYTES
    return data


@pytest.mark.parametrize("case", sorted(CLOSING_INPUTS))
async def test_input_that_closes_only_its_own_connection(server_factory, case: str) -> None:
    server = server_factory("--socket-request-max-bytes", str(MAX_BYTES))
    async with steady_group(server) as steady:
        before, events = await baseline(steady)
        data = CLOSING_INPUTS[case]()

        def send_and_watch() -> tuple[bool, bytes]:
            bad = RawClient(server.host, server.port)
            try:
                bad.send_raw(data)
                bad.sock.settimeout(5)
                try:
                    got = bad.sock.recv(4096)
                except (ConnectionResetError, BrokenPipeError):
                    return True, b""
                except TimeoutError:
                    return False, b""
                return got == b"", got
            finally:
                bad.close()

        closed, reply = await asyncio.to_thread(send_and_watch)
        assert closed, f"{case}: the server kept the connection open (reply {reply[:40]!r})"
        await check_unaffected(steady, before, events)


async def test_truncated_frames_hold_nothing_up(server_factory) -> None:
    """Size prefixes larger than what follows: one connection then hangs up mid-frame, another stays open
    mid-frame for the whole check. Neither reaches the coordinator; everyone else carries on."""
    server = server_factory("--socket-request-max-bytes", str(MAX_BYTES))
    async with steady_group(server) as steady:
        before, events = await baseline(steady)
        join = join_request(GROUP)

        def hang_up_mid_frame() -> None:
            s = socket.create_connection((server.host, server.port), timeout=5)
            s.sendall(join[: len(join) // 2])
            s.close()

        await asyncio.to_thread(hang_up_mid_frame)
        pending = await asyncio.to_thread(socket.create_connection, (server.host, server.port), 5)
        try:
            pending.sendall(struct.pack(">i", 1000) + join[4:40])  # 36 of the promised 1000 bytes
            await check_unaffected(steady, before, events)
            # the half-sent frame never got a reply, and the connection is still waiting for the rest
            pending.settimeout(0.2)
            with pytest.raises(TimeoutError):
                pending.recv(1)
        finally:
            pending.close()
        assert server.alive()


# --- requests that get an error response and keep their connection ---

UNSUPPORTED = [
    # (api key, version sent, version the codec can encode a request at, request body)
    (11, 10, 9, None),  # JoinGroup v10 (we speak 0-9)
    (12, 5, 4, HeartbeatRequest(group_id=GROUP, generation_id=1, member_id="nobody")),
    (13, 6, 5, LeaveGroupRequest(group_id=GROUP)),
    (14, 6, 5, SyncGroupRequest(group_id=GROUP, generation_id=1, member_id="nobody")),
    (16, 6, 5, ListGroupsRequest()),
]


@pytest.mark.parametrize(
    ("api_key", "sent", "encodable", "body"),
    UNSUPPORTED,
    ids=[f"{RESPONSES[k].__name__.removesuffix('Response')}-v{v}" for k, v, _, _ in UNSUPPORTED],
)
async def test_unsupported_version_gets_an_error_and_the_connection_lives(
    server_factory, api_key: int, sent: int, encodable: int, body: Any
) -> None:
    server = server_factory("--socket-request-max-bytes", str(MAX_BYTES))
    async with steady_group(server) as steady:
        before, events = await baseline(steady)
        if body is None:  # JoinGroup for the steady group itself
            meta = encode_subscription(ConsumerProtocolSubscription(topics=(TOPIC,)))
            body = JoinGroupRequest(
                group_id=GROUP,
                session_timeout_ms=6000,
                rebalance_timeout_ms=6000,
                member_id="",
                protocol_type="consumer",
                protocols=(JoinGroupRequestProtocol(name="roundrobin", metadata=meta),),
            )
        data = with_version(raw_request(api_key, encodable, body, correlation=41), sent)

        def exchange() -> tuple[int, Any, Any]:
            c = RawClient(server.host, server.port)
            try:
                c.send_raw(data)
                corr, resp = decode_response(c.read_frame(), api_key, encodable)
                # the same connection still serves requests
                follow_up = c.request(15, 0, DescribeGroupsRequest(groups=(GROUP,)))
                return corr, resp, follow_up
            finally:
                c.close()

        corr, resp, follow_up = await asyncio.to_thread(exchange)
        assert corr == 41
        assert resp.error_code == ErrorCode.UNSUPPORTED_VERSION
        assert follow_up.groups[0].group_state == "Stable"
        await check_unaffected(steady, before, events)


async def test_api_versions_v99_gets_a_v0_answer_with_our_range(server_factory) -> None:
    server = server_factory("--socket-request-max-bytes", str(MAX_BYTES))
    async with steady_group(server) as steady:
        before, events = await baseline(steady)
        # a flexible (header v2, KIP-511) ApiVersions request claiming v99
        data = with_version(
            raw_request(18, 3, ApiVersionsRequest("future-client", "9.9"), correlation=99), 99
        )

        def exchange() -> tuple[Any, Any, Any]:
            c = RawClient(server.host, server.port)
            try:
                c.send_raw(data)
                corr, resp = decode_response(c.read_frame(), 18, 0)
                assert corr == 99
                retried = c.request(
                    18, 3, ApiVersionsRequest("future-client", "9.9")
                )  # the retry a client makes
                groups = c.request(16, 0, ListGroupsRequest())
                return resp, retried, groups
            finally:
                c.close()

        resp, retried, groups = await asyncio.to_thread(exchange)
        assert resp.error_code == ErrorCode.UNSUPPORTED_VERSION
        assert [(k.api_key, k.min_version, k.max_version) for k in resp.api_keys] == [(18, 0, 5)]
        assert retried.error_code == 0
        ours = {k.api_key: (k.min_version, k.max_version) for k in retried.api_keys}
        assert ours[18] == (0, 5) and ours[11] == (0, 9)
        assert [g.group_id for g in groups.groups] == [GROUP]
        await check_unaffected(steady, before, events)


async def test_a_burst_of_bad_connections_at_once(server_factory) -> None:
    """Every closing input above, five times each, on concurrent connections, while the group runs."""
    server = server_factory("--socket-request-max-bytes", str(MAX_BYTES))
    async with steady_group(server) as steady:
        before, events = await baseline(steady)
        payloads = [make() for make in CLOSING_INPUTS.values() for _ in range(5)]

        async def one(data: bytes) -> bool:
            reader, writer = await asyncio.open_connection(server.host, server.port)
            try:
                writer.write(data)
                await writer.drain()
                return await asyncio.wait_for(reader.read(1), 60) == b""
            except (ConnectionResetError, BrokenPipeError):
                return True
            finally:
                writer.close()

        closed = await asyncio.gather(*(one(p) for p in payloads))
        assert all(closed), [i for i, c in enumerate(closed) if not c]
        await check_unaffected(steady, before, events)


# --- well-formed requests with wrong values: an error for the sender, nothing for the group ---


async def test_requests_with_wrong_values_get_errors_and_change_nothing(server_factory) -> None:
    server = server_factory("--socket-request-max-bytes", str(MAX_BYTES))
    async with steady_group(server) as steady:
        before, events = await baseline(steady)
        gen = steady.consumers[0]._coordinator.generation
        real = steady.consumers[0]._coordinator.member_id
        meta = encode_subscription(ConsumerProtocolSubscription(topics=(TOPIC,)))

        def join(**kw: Any) -> JoinGroupRequest:
            fields: dict[str, Any] = {
                "group_id": GROUP,
                "session_timeout_ms": 6000,
                "rebalance_timeout_ms": 6000,
                "member_id": "",
                "protocol_type": "consumer",
                "protocols": (JoinGroupRequestProtocol(name="roundrobin", metadata=meta),),
            }
            fields.update(kw)
            return JoinGroupRequest(**fields)

        def commit(generation: int, member: str) -> OffsetCommitRequest:
            return OffsetCommitRequest(
                group_id=GROUP,
                generation_id_or_member_epoch=generation,
                member_id=member,
                topics=(
                    OffsetCommitRequestTopic(
                        name=TOPIC,
                        partitions=(OffsetCommitRequestPartition(partition_index=0, committed_offset=5),),
                    ),
                ),
            )

        E = ErrorCode
        cases: list[tuple[str, int, int, Any, Callable[[Any], Any], int]] = [
            ("join: session timeout below the minimum", 11, 5, join(session_timeout_ms=10),
             lambda r: r.error_code, E.INVALID_SESSION_TIMEOUT),
            ("join: no protocol in common", 11, 5,
             join(protocols=(JoinGroupRequestProtocol(name="no-such-assignor", metadata=meta),)),
             lambda r: r.error_code, E.INCONSISTENT_GROUP_PROTOCOL),
            ("join: another protocol type", 11, 5, join(protocol_type="connect"),
             lambda r: r.error_code, E.INCONSISTENT_GROUP_PROTOCOL),
            ("join: a member id the group never gave out", 11, 5, join(member_id="bogus-member"),
             lambda r: r.error_code, E.UNKNOWN_MEMBER_ID),
            ("join: empty group id", 11, 5, join(group_id=""), lambda r: r.error_code, E.INVALID_GROUP_ID),
            ("heartbeat: unknown member", 12, 1, HeartbeatRequest(group_id=GROUP, generation_id=gen, member_id="x"),
             lambda r: r.error_code, E.UNKNOWN_MEMBER_ID),
            ("heartbeat: a member's id, a wrong generation", 12, 1,
             HeartbeatRequest(group_id=GROUP, generation_id=gen + 7, member_id=real),
             lambda r: r.error_code, E.ILLEGAL_GENERATION),
            ("sync: a member's id, a wrong generation", 14, 3,
             SyncGroupRequest(group_id=GROUP, generation_id=gen + 7, member_id=real),
             lambda r: r.error_code, E.ILLEGAL_GENERATION),
            ("leave: unknown member", 13, 3, LeaveGroupRequest(group_id=GROUP, members=(MemberIdentity("x"),)),
             lambda r: (r.error_code, [m.error_code for m in r.members]), (E.NONE, [E.UNKNOWN_MEMBER_ID])),
            ("commit: a member's id, a wrong generation", 8, 2, commit(gen + 7, real),
             lambda r: r.topics[0].partitions[0].error_code, E.ILLEGAL_GENERATION),
            ("commit: no member id to a group with members", 8, 2, commit(-1, ""),
             lambda r: r.topics[0].partitions[0].error_code, E.UNKNOWN_MEMBER_ID),
            ("delete: the group has members", 42, 1, DeleteGroupsRequest(groups_names=(GROUP,)),
             lambda r: r.results[0].error_code, E.NON_EMPTY_GROUP),
        ]  # fmt: skip

        def run() -> list[tuple[str, Any, Any]]:
            c = RawClient(server.host, server.port)
            try:
                return [
                    (name, pick(c.request(key, v, body)), want) for name, key, v, body, pick, want in cases
                ]
            finally:
                c.close()

        results = await asyncio.to_thread(run)
        wrong = [(name, got, want) for name, got, want in results if got != want]
        assert wrong == [], wrong
        await check_unaffected(steady, before, events)
