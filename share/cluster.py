"""The cluster as a share consumer sees it: broker connections (with their ApiVersions), the metadata that
maps topic ids to names and partitions to leaders, and the group coordinator.

ShareFetch and ShareAcknowledge go to each partition's leader (Kafka >= 4.2 has many brokers; groupcoord is
one node that leads everything), ShareGroupHeartbeat to the group coordinator found with FindCoordinator
(key type GROUP, as Java's CoordinatorRequestManager asks for share groups too).
"""

from __future__ import annotations

import contextlib
import uuid

from groupcoord.membership.connection import Connection, ConnectionClosedError
from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from groupcoord.protocol.messages.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from groupcoord.protocol.messages.metadata import MetadataRequest, MetadataResponse
from groupcoord.share.errors import ShareConsumerError

#: the versions this client speaks, newest first wins where the broker has them too
SPOKEN: dict[int, tuple[int, int]] = {
    ApiKey.METADATA: (12, 12),
    ApiKey.FIND_COORDINATOR: (2, 6),
    ApiKey.SHARE_GROUP_HEARTBEAT: (1, 1),
    ApiKey.SHARE_FETCH: (1, 2),
    ApiKey.SHARE_ACKNOWLEDGE: (1, 2),
}
COORDINATOR_ERRORS = {
    ErrorCode.NOT_COORDINATOR,
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
}


class Node:
    """One broker connection and the API versions agreed with that broker."""

    def __init__(self, conn: Connection, versions: dict[int, int]) -> None:
        self.conn, self.versions = conn, versions

    @classmethod
    async def open(cls, host: str, port: int, client_id: str, timeout: float) -> Node:
        conn = await Connection.open(host, port, client_id, timeout)
        try:
            resp = await conn.request(
                ApiKey.API_VERSIONS,
                3,
                ApiVersionsRequest(client_software_name="groupcoord-share", client_software_version="1"),
                timeout,
            )
            assert isinstance(resp, ApiVersionsResponse)
            if resp.error_code:
                raise ShareConsumerError(f"ApiVersions failed with error {resp.error_code}", resp.error_code)
            theirs = {a.api_key: (a.min_version, a.max_version) for a in resp.api_keys}
            versions: dict[int, int] = {}
            for key, (lo, hi) in SPOKEN.items():
                if key in theirs and max(lo, theirs[key][0]) <= min(hi, theirs[key][1]):
                    versions[key] = min(hi, theirs[key][1])
            missing = [ApiKey(k).name for k in SPOKEN if k not in versions]
            if missing:
                raise ShareConsumerError(
                    f"broker {host}:{port} does not speak {', '.join(missing)} in versions this client knows "
                    "(share groups need Kafka >= 4.1 with share groups enabled, or groupcoord)"
                )
        except BaseException:
            await conn.close()
            raise
        return cls(conn, versions)

    async def request(self, api_key: int, body: object, timeout: float) -> object:
        return await self.conn.request(api_key, self.versions[api_key], body, timeout)

    @property
    def alive(self) -> bool:
        return not self.conn.reader_task.done()

    async def close(self) -> None:
        await self.conn.close()


class Cluster:
    """Connections by node id plus the latest metadata."""

    def __init__(self, bootstrap: tuple[str, int], client_id: str, timeout: float) -> None:
        self.bootstrap, self.client_id, self.timeout = bootstrap, client_id, timeout
        self.brokers: dict[int, tuple[str, int]] = {}
        self.nodes: dict[int, Node] = {}
        self.names: dict[uuid.UUID, str] = {}
        self.leaders: dict[tuple[uuid.UUID, int], int] = {}
        self.coordinator: Node | None = None

    async def node(self, node_id: int) -> Node:
        node = self.nodes.get(node_id)
        if node is not None and node.alive:
            return node
        if node is not None:
            await self.drop(node_id)
        host, port = self.brokers[node_id]
        node = self.nodes[node_id] = await Node.open(host, port, self.client_id, self.timeout)
        return node

    async def any_node(self) -> Node:
        for node_id in list(self.nodes):
            if self.nodes[node_id].alive:
                return self.nodes[node_id]
        if self.brokers:
            with contextlib.suppress(ConnectionClosedError, OSError, TimeoutError):
                return await self.node(next(iter(self.brokers)))
        return await Node.open(*self.bootstrap, self.client_id, self.timeout)

    async def refresh(self) -> None:
        """Metadata for all topics: names by id, leaders by partition, broker addresses."""
        node = await self.any_node()
        md = await node.request(ApiKey.METADATA, MetadataRequest(topics=None), self.timeout)
        assert isinstance(md, MetadataResponse)
        if node not in self.nodes.values():
            await node.close()  # the bootstrap connection; brokers get connections by node id
        self.brokers = {b.node_id: (b.host, b.port) for b in md.brokers}
        for t in md.topics:
            if t.error_code or t.name is None:
                continue
            self.names[t.topic_id] = t.name
            for p in t.partitions:
                if p.leader_id >= 0:
                    self.leaders[(t.topic_id, p.partition_index)] = p.leader_id

    async def find_coordinator(self, group_id: str) -> Node:
        if self.coordinator is not None and self.coordinator.alive:
            return self.coordinator
        node = await self.any_node()
        version = node.versions[ApiKey.FIND_COORDINATOR]
        if version >= 4:
            req = FindCoordinatorRequest(key_type=0, coordinator_keys=(group_id,))
        else:
            req = FindCoordinatorRequest(key=group_id, key_type=0)
        resp = await node.request(ApiKey.FIND_COORDINATOR, req, self.timeout)
        assert isinstance(resp, FindCoordinatorResponse)
        if node not in self.nodes.values():
            await node.close()
        if version >= 4:
            c = resp.coordinators[0]
            err, host, port = c.error_code, c.host, c.port
        else:
            err, host, port = resp.error_code, resp.host, resp.port
        if err in COORDINATOR_ERRORS:
            raise ConnectionClosedError(f"coordinator not available (error {err})")
        if err:
            raise ShareConsumerError(f"FindCoordinator for group {group_id!r} failed with error {err}", err)
        # a connection of its own: heartbeats never queue behind a long-polling ShareFetch
        self.coordinator = await Node.open(host, port, self.client_id, self.timeout)
        return self.coordinator

    async def drop_coordinator(self) -> None:
        if self.coordinator is not None:
            await self.coordinator.close()
            self.coordinator = None

    async def drop(self, node_id: int) -> None:
        node = self.nodes.pop(node_id, None)
        if node is not None:
            await node.close()

    async def close(self) -> None:
        await self.drop_coordinator()
        for node_id in list(self.nodes):
            await self.drop(node_id)
