"""What request handlers may use of the server: small typed Protocols, one per subject.

Handlers (`groupcoord.server.apis`) receive a `RequestContext` whose `services` is a `HandlerServices`: the
group state machine and the runtime that runs its steps, the topic table and the log, topic and broker
configs, the transaction coordinator, the node's configuration and its ApiVersions table. `server.broker.Broker` satisfies it; handlers never see the Broker
itself, so the edge does not know the whole server and no import circle runs through `dispatch`, `network`,
`broker` and `apis` (`tests/test_architecture.py` checks both).

This module imports only the layers below the handlers (coordinator, runtime's step types, log, topics,
config, protocol), never `dispatch`, `network`, `broker` or `apis`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages.api_versions import ApiVersion
from groupcoord.server.config import ServerConfig
from groupcoord.server.configs.manager import ConfigManager
from groupcoord.server.coordinator.shard import GroupCoordinatorShard
from groupcoord.server.coordinator.types import Effects
from groupcoord.server.log.manager import LogManager
from groupcoord.server.runtime import Failed, Step
from groupcoord.server.security.authorizer import AclBinding, AclFilter
from groupcoord.server.share.service import ShareService
from groupcoord.server.topic_view import Topics
from groupcoord.server.txn.service import TxnCoordinator

#: reply token, now_ms -> effects: a step that may park its reply (JoinGroup, SyncGroup, OffsetCommit)
ParkedStep = Callable[[asyncio.Future, int], Effects]


class GroupCalls(Protocol):
    """How a handler runs a state-machine step: through the runtime's per-group mailbox (persist, then reply).

    Each returns the result now or a future of it (see `groupcoord.server.runtime.GroupRuntime`).
    """

    def call(self, group_id: str, step: Step, failed: Failed | None = None) -> Any: ...

    def call_parked(self, group_id: str, call: ParkedStep, failed: Failed | None = None) -> Any: ...

    def call_global(self, step: Step) -> Any: ...

    def heartbeat(
        self, group_id: str, generation_id: int, member_id: str, instance_id: str | None
    ) -> int | None:
        """A Heartbeat without the general step machinery (its error code), or None: use `call`."""
        ...


@runtime_checkable
class GroupServices(Protocol):
    """The group coordinator: the pure state machine (read directly, stepped only through `runtime`)."""

    @property
    def machine(self) -> GroupCoordinatorShard: ...

    @property
    def runtime(self) -> GroupCalls: ...


@runtime_checkable
class TopicServices(Protocol):
    """The topic table (names, ids, partitions, internal topics) and the embedded log behind it."""

    @property
    def topics(self) -> Topics: ...

    @property
    def logs(self) -> LogManager: ...


@runtime_checkable
class ConfigServices(Protocol):
    """Topic and broker configs (server/configs): effective values, validation, durable changes."""

    @property
    def configs(self) -> ConfigManager: ...


class NodeAddress(Protocol):
    """A node as FindCoordinator and Metadata name it."""

    node_id: int
    host: str
    port: int

    def address(self, listener: str) -> tuple[str, int]: ...  # for a client of that listener


class ShardRouting(Protocol):
    """Cluster mode (server/cluster): which node coordinates a group and whether this one serves it now."""

    def group_status(self, group_id: str) -> ErrorCode:
        """NONE (served here), COORDINATOR_LOAD_IN_PROGRESS (being taken over here) or NOT_COORDINATOR."""
        ...

    def coordinator_of(self, group_id: str) -> NodeAddress | None:
        """The owner of the group's shard; None while no live node holds it. A transactional id hashes to
        a shard the same way: its transaction coordinator."""
        ...

    def shard_status(self, shard: int) -> ErrorCode:
        """As `group_status`, for a shard by number (`__consumer_offsets` partition N of a WriteTxnMarkers)."""
        ...

    def live_nodes(self) -> Sequence[NodeAddress]: ...

    def partition_leader(self, topic: str, partition: int) -> tuple[NodeAddress, int] | None:
        """The topic partition's live leader and leader epoch; None while no live node leads it."""
        ...

    def shard_leader(self, shard: int) -> tuple[NodeAddress, int] | None:
        """`__consumer_offsets` partition `shard`'s leader: the shard's lease holder and epoch, or None."""
        ...


@runtime_checkable
class TxnServices(Protocol):
    """The transaction coordinator (server/txn): InitProducerId with a transactional id, the txn APIs,
    the verification of transactional Produce."""

    @property
    def txn(self) -> TxnCoordinator: ...


@runtime_checkable
class ClusterView(Protocol):
    """This node as clients see it: its configuration, its ApiVersions table, whether its state is loading,
    and in cluster mode the shard routing (None on a single node)."""

    @property
    def config(self) -> ServerConfig: ...

    @property
    def api_versions_table(self) -> tuple[ApiVersion, ...]: ...

    @property
    def loading(self) -> bool: ...

    @property
    def routing(self) -> ShardRouting | None: ...


@runtime_checkable
class AccessControl(Protocol):
    """The authorizer and its ACLs (`server.security.Security`); with none configured, everything is allowed."""

    @property
    def enabled(self) -> bool: ...

    def authorize(self, principal: str, host: str, operation: int, resource_type: int, name: str) -> bool: ...

    def authorize_by_resource_type(
        self, principal: str, host: str, operation: int, resource_type: int
    ) -> bool: ...

    def operations(self, principal: str, host: str, resource_type: int, name: str) -> int: ...

    def is_super_user(self, principal: str) -> bool: ...

    async def create_acls(self, bindings: list[AclBinding]) -> list[str | None]: ...

    def describe_acls(self, flt: AclFilter) -> list[AclBinding]: ...

    async def delete_acls(self, filters: list[AclFilter]) -> list[list[AclBinding]]: ...

    def scram_users(self) -> dict[str, dict[str, int]]: ...

    async def alter_scram(
        self, deletions: list[tuple[str, str]], upsertions: list[tuple[str, str, int, bytes, bytes]]
    ) -> None: ...


@runtime_checkable
class AccessServices(Protocol):
    """Who may do what (issue 18): the authorizer checks and the ACL store."""

    @property
    def access(self) -> AccessControl: ...


@runtime_checkable
class ShareServices(Protocol):
    """KIP-932 share partitions and share sessions (server/share): ShareFetch and ShareAcknowledge."""

    @property
    def share(self) -> ShareService: ...


@runtime_checkable
class HandlerServices(
    GroupServices,
    TopicServices,
    ConfigServices,
    TxnServices,
    ClusterView,
    AccessServices,
    ShareServices,
    Protocol,
):
    """Everything a handler may use: the subjects above, and nothing else of the server."""
