"""A small Kafka admin client over asyncio sockets and our own codec, for `groupcoord groups`.

It speaks to any Kafka-protocol broker (groupcoord or Apache Kafka): versions are negotiated with ApiVersions
per connection, groups are addressed through FindCoordinator, partitions' log offsets through their leaders.
Only what kafka-consumer-groups.sh needs is here.
"""

from __future__ import annotations

import asyncio
import struct
from dataclasses import dataclass, field
from typing import Any

from groupcoord.protocol.api import SUPPORTED, ApiKey
from groupcoord.protocol.codec import decode_response, encode_request
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages import consumer_group_describe as cgd
from groupcoord.protocol.messages.api_versions import ApiVersionsRequest
from groupcoord.protocol.messages.delete_groups import DeleteGroupsRequest
from groupcoord.protocol.messages.describe_groups import DescribedGroup, DescribeGroupsRequest
from groupcoord.protocol.messages.find_coordinator import FindCoordinatorRequest
from groupcoord.protocol.messages.list_groups import ListedGroup, ListGroupsRequest
from groupcoord.protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from groupcoord.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from groupcoord.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from groupcoord.protocol.messages.offset_fetch import OffsetFetchRequest

#: highest version we build requests for, per API (the body layouts this module fills in)
CAPS = {
    ApiKey.METADATA: 9,
    ApiKey.FIND_COORDINATOR: 3,
    ApiKey.OFFSET_FETCH: 7,
    ApiKey.LIST_OFFSETS: 7,
    ApiKey.OFFSET_COMMIT: 7,
    ApiKey.LIST_GROUPS: 5,  # v5: GroupType (Classic, Consumer) for `list --type`
    ApiKey.DESCRIBE_GROUPS: 5,
    ApiKey.DELETE_GROUPS: 2,
    ApiKey.API_VERSIONS: 3,
}
OFFSET_DELETE = 47  # encoded by hand, v0 only (this client predates our codec's declaration of it)
EARLIEST, LATEST = -2, -1


class AdminError(Exception):
    """A failure to report to the user (exit code 1)."""


def error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error {code}"


class Connection:
    def __init__(self, host: str, port: int, timeout: float) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.versions: dict[int, tuple[int, int]] = {}
        self.correlation = 0

    async def open(self) -> None:
        try:
            self.reader, self.writer = await asyncio.wait_for(
                asyncio.open_connection(self.host, self.port), self.timeout
            )
        except (OSError, TimeoutError) as exc:
            raise AdminError(f"cannot connect to {self.host}:{self.port}: {exc}") from None
        resp = await self._call(ApiKey.API_VERSIONS, 0, ApiVersionsRequest())
        if resp.error_code:
            raise AdminError(f"ApiVersions failed: {error_name(resp.error_code)}")
        self.versions = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}

    def version(self, api: int) -> int:
        theirs = self.versions.get(api)
        key = ApiKey(api)
        lo, hi = SUPPORTED[key]
        hi = min(hi, CAPS.get(key, hi))
        if theirs is None or theirs[1] < lo or theirs[0] > hi:
            raise AdminError(
                f"the broker at {self.host}:{self.port} does not support API {api} at a version we speak"
            )
        return min(hi, theirs[1])

    async def call(self, api: int, body: Any, version: int | None = None) -> Any:
        return await self._call(api, self.version(api) if version is None else version, body)

    async def _call(self, api: int, version: int, body: Any) -> Any:
        self.correlation += 1
        await self._send(encode_request(api, version, self.correlation, body, client_id="groupcoord-groups"))
        frame = await self._frame()
        corr, resp = decode_response(frame, api, version)
        if corr != self.correlation:
            raise AdminError("response out of order")
        return resp

    async def call_raw(self, frame_body: bytes) -> bytes:
        """Send a whole request frame (size prefix included) and return the response frame's body."""
        await self._send(frame_body)
        return await self._frame()

    async def _send(self, data: bytes) -> None:
        assert self.writer is not None
        self.writer.write(data)
        await self.writer.drain()

    async def _frame(self) -> bytes:
        assert self.reader is not None
        try:
            size = struct.unpack(">i", await asyncio.wait_for(self.reader.readexactly(4), self.timeout))[0]
            return await asyncio.wait_for(self.reader.readexactly(size), self.timeout)
        except asyncio.IncompleteReadError:
            raise AdminError(f"the broker at {self.host}:{self.port} closed the connection") from None
        except TimeoutError:
            raise AdminError(f"no answer from {self.host}:{self.port} within {self.timeout}s") from None

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


@dataclass
class Cluster:
    brokers: dict[int, tuple[str, int]] = field(default_factory=dict)
    partitions: dict[str, dict[int, int]] = field(default_factory=dict)  # topic -> partition -> leader


class Admin:
    def __init__(self, bootstrap: str, timeout: float = 30.0) -> None:
        host, _, port = bootstrap.rpartition(":")
        if not host or not port.isdigit():
            raise AdminError(f"--bootstrap-server must be HOST:PORT, got {bootstrap!r}")
        self.bootstrap = (host, int(port))
        self.timeout = timeout
        self.conns: dict[tuple[str, int], Connection] = {}

    async def conn(self, addr: tuple[str, int]) -> Connection:
        c = self.conns.get(addr)
        if c is None:
            c = Connection(addr[0], addr[1], self.timeout)
            await c.open()
            self.conns[addr] = c
        return c

    async def close(self) -> None:
        for c in self.conns.values():
            await c.close()

    async def metadata(self, topics: list[str] | None) -> Cluster:
        c = await self.conn(self.bootstrap)
        req = MetadataRequest(
            topics=None if topics is None else tuple(MetadataRequestTopic(name=t) for t in topics),
            allow_auto_topic_creation=False,
        )
        resp = await c.call(ApiKey.METADATA, req)
        cluster = Cluster(brokers={b.node_id: (b.host, b.port) for b in resp.brokers})
        for t in resp.topics:
            if t.error_code == 0 and t.name is not None:
                cluster.partitions[t.name] = {p.partition_index: p.leader_id for p in t.partitions}
        return cluster

    async def coordinator(self, group: str) -> tuple[int, str, int]:
        c = await self.conn(self.bootstrap)
        resp = await c.call(ApiKey.FIND_COORDINATOR, FindCoordinatorRequest(key=group, key_type=0))
        if resp.error_code:
            raise AdminError(f"FindCoordinator for group '{group}': {error_name(resp.error_code)}")
        return resp.node_id, resp.host, resp.port

    async def coordinator_conn(self, group: str) -> Connection:
        _, host, port = await self.coordinator(group)
        return await self.conn((host, port))

    async def list_groups(self, states: list[str]) -> list[ListedGroup]:
        """ListGroups on every broker (each lists the groups it coordinates)."""
        cluster = await self.metadata([])
        out: list[ListedGroup] = []
        for addr in sorted(set(cluster.brokers.values())) or [self.bootstrap]:
            c = await self.conn(addr)
            version = c.version(ApiKey.LIST_GROUPS)
            if states and version < 4:
                raise AdminError("the broker cannot filter groups by state (ListGroups v4 needed)")
            resp = await c.call(ApiKey.LIST_GROUPS, ListGroupsRequest(states_filter=tuple(states)), version)
            if resp.error_code:
                raise AdminError(f"ListGroups on {addr[0]}:{addr[1]}: {error_name(resp.error_code)}")
            out.extend(resp.groups)
        return sorted(out, key=lambda g: g.group_id)

    async def describe(self, group: str) -> DescribedGroup:
        c = await self.coordinator_conn(group)
        resp = await c.call(ApiKey.DESCRIBE_GROUPS, DescribeGroupsRequest(groups=(group,)))
        g = resp.groups[0]
        if g.error_code:
            raise AdminError(f"DescribeGroups '{group}': {error_name(g.error_code)}")
        return g

    async def consumer_describe(self, group: str) -> cgd.DescribedGroup | None:
        """ConsumerGroupDescribe (69), as Kafka's admin tries it first: None when the group is not a KIP-848
        consumer group (GROUP_ID_NOT_FOUND) or the broker lacks the API, so the caller uses DescribeGroups."""
        c = await self.coordinator_conn(group)
        try:
            c.version(ApiKey.CONSUMER_GROUP_DESCRIBE)
        except AdminError:
            return None
        resp = await c.call(
            ApiKey.CONSUMER_GROUP_DESCRIBE, cgd.ConsumerGroupDescribeRequest(group_ids=(group,))
        )
        g: cgd.DescribedGroup = resp.groups[0]
        if g.error_code == ErrorCode.GROUP_ID_NOT_FOUND:
            return None
        if g.error_code:
            raise AdminError(f"ConsumerGroupDescribe '{group}': {error_name(g.error_code)}")
        return g

    async def committed(self, group: str) -> dict[tuple[str, int], int]:
        c = await self.coordinator_conn(group)
        resp = await c.call(ApiKey.OFFSET_FETCH, OffsetFetchRequest(group_id=group, topics=None))
        if getattr(resp, "error_code", 0):
            raise AdminError(f"OffsetFetch '{group}': {error_name(resp.error_code)}")
        return {
            (t.name, p.partition_index): p.committed_offset
            for t in resp.topics
            for p in t.partitions
            if p.error_code == 0 and p.committed_offset >= 0
        }

    async def log_offsets(
        self, partitions: list[tuple[str, int]], timestamp: int | dict[tuple[str, int], int]
    ) -> dict[tuple[str, int], int | None]:
        """ListOffsets through each partition's leader; None where the partition or its leader is unknown."""
        cluster = await self.metadata(sorted({t for t, _ in partitions}))
        by_leader: dict[int, list[tuple[str, int]]] = {}
        out: dict[tuple[str, int], int | None] = {}
        for tp in partitions:
            leader = cluster.partitions.get(tp[0], {}).get(tp[1], -1)
            if leader < 0 or leader not in cluster.brokers:
                out[tp] = None
            else:
                by_leader.setdefault(leader, []).append(tp)
        for leader, tps in by_leader.items():
            c = await self.conn(cluster.brokers[leader])
            topics: dict[str, list[ListOffsetsPartition]] = {}
            for t, p in tps:
                ts = timestamp if isinstance(timestamp, int) else timestamp[(t, p)]
                topics.setdefault(t, []).append(ListOffsetsPartition(partition_index=p, timestamp=ts))
            req = ListOffsetsRequest(
                replica_id=-1,
                isolation_level=0,
                topics=tuple(ListOffsetsTopic(name=t, partitions=tuple(ps)) for t, ps in topics.items()),
            )
            resp = await c.call(ApiKey.LIST_OFFSETS, req)
            for t in resp.topics:
                for p in t.partitions:
                    out[(t.name, p.partition_index)] = p.offset if p.error_code == 0 else None
        return out

    async def commit(self, group: str, offsets: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
        """Commit as an admin (generation -1, no member), as AdminClient.alterConsumerGroupOffsets does."""
        c = await self.coordinator_conn(group)
        topics: dict[str, list[OffsetCommitRequestPartition]] = {}
        for (t, p), off in sorted(offsets.items()):
            topics.setdefault(t, []).append(
                OffsetCommitRequestPartition(partition_index=p, committed_offset=off, committed_metadata="")
            )
        req = OffsetCommitRequest(
            group_id=group,
            generation_id_or_member_epoch=-1,
            member_id="",
            topics=tuple(OffsetCommitRequestTopic(name=t, partitions=tuple(ps)) for t, ps in topics.items()),
        )
        resp = await c.call(ApiKey.OFFSET_COMMIT, req)
        return {(t.name, p.partition_index): p.error_code for t in resp.topics for p in t.partitions}

    async def delete_groups(self, groups: list[str]) -> dict[str, int]:
        out: dict[str, int] = {}
        for group in groups:
            c = await self.coordinator_conn(group)
            resp = await c.call(ApiKey.DELETE_GROUPS, DeleteGroupsRequest(groups_names=(group,)))
            for r in resp.results:
                out[r.group_id] = r.error_code
        return out

    async def delete_offsets(
        self, group: str, partitions: list[tuple[str, int]]
    ) -> tuple[int, dict[tuple[str, int], int]]:
        """OffsetDelete v0 (API 47), encoded by hand: (top-level error, per-partition errors)."""
        c = await self.coordinator_conn(group)
        if OFFSET_DELETE not in c.versions:
            raise AdminError(
                f"the broker at {c.host}:{c.port} does not support OffsetDelete (API 47): UNSUPPORTED_VERSION"
            )
        topics: dict[str, list[int]] = {}
        for t, p in partitions:
            topics.setdefault(t, []).append(p)
        c.correlation += 1
        body = bytearray(struct.pack(">hhi", OFFSET_DELETE, 0, c.correlation))
        body += _string("groupcoord-groups") + _string(group) + struct.pack(">i", len(topics))
        for t, ps in topics.items():
            body += _string(t) + struct.pack(">i", len(ps)) + b"".join(struct.pack(">i", p) for p in ps)
        frame = await c.call_raw(struct.pack(">i", len(body)) + bytes(body))
        return _decode_offset_delete(frame)


def _string(s: str) -> bytes:
    raw = s.encode()
    return struct.pack(">h", len(raw)) + raw


def _decode_offset_delete(frame: bytes) -> tuple[int, dict[tuple[str, int], int]]:
    pos = 4  # correlation id
    (error,) = struct.unpack_from(">h", frame, pos)
    pos += 2 + 4  # error_code, throttle_time_ms
    (ntopics,) = struct.unpack_from(">i", frame, pos)
    pos += 4
    out: dict[tuple[str, int], int] = {}
    for _ in range(max(ntopics, 0)):
        (n,) = struct.unpack_from(">h", frame, pos)
        name = frame[pos + 2 : pos + 2 + n].decode()
        pos += 2 + n
        (nparts,) = struct.unpack_from(">i", frame, pos)
        pos += 4
        for _ in range(max(nparts, 0)):
            p, perr = struct.unpack_from(">ih", frame, pos)
            pos += 6
            out[(name, p)] = perr
    return error, out
