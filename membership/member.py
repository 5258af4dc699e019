"""A member of a non-consumer group: join, leader assigns, receive, heartbeat, leave.

The classic group protocol serves any kind of member (Kafka Connect and Schema Registry use it with their
own ``protocol_type``). :class:`GroupMember` runs it for Python apps: it finds the coordinator, joins
(KIP-394 MEMBER_ID_REQUIRED, KIP-345 static membership via ``instance_id``), lets the elected leader run the
user's :class:`~groupcoord.membership.assignors.Assignor`, delivers each generation's assignment through
callbacks and an async iterator, heartbeats, rejoins on REBALANCE_IN_PROGRESS / UNKNOWN_MEMBER_ID /
ILLEGAL_GENERATION, rediscovers the coordinator on NOT_COORDINATOR, and leaves gracefully on ``stop()``.

Rebalances are eager: before rejoining, the current assignment is revoked (``on_revoked``), so a
resource is never held by two members of the same generation.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

from groupcoord.membership.assignors import Assignor, GroupMemberInfo, decode_resources
from groupcoord.membership.connection import Connection, ConnectionClosedError
from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from groupcoord.protocol.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from groupcoord.protocol.messages.join_group import (
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
)
from groupcoord.protocol.messages.leave_group import LeaveGroupRequest, LeaveGroupResponse, MemberIdentity
from groupcoord.protocol.messages.sync_group import (
    SyncGroupRequest,
    SyncGroupRequestAssignment,
    SyncGroupResponse,
)

log = logging.getLogger(__name__)

# Versions every Kafka since 2.3 and groupcoord answer: static membership (JoinGroup v5, Sync/Heartbeat v3),
# batched LeaveGroup (v3), FindCoordinator with a key type (v2).
JOIN_V, SYNC_V, HEARTBEAT_V, LEAVE_V, FIND_V = 5, 3, 3, 3, 2

REJOIN_ERRORS = {ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.ILLEGAL_GENERATION}
RESET_ERRORS = {ErrorCode.UNKNOWN_MEMBER_ID}
COORDINATOR_ERRORS = {
    ErrorCode.NOT_COORDINATOR,
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
}


class MembershipError(RuntimeError):
    """A non-retriable error from the coordinator (e.g. FENCED_INSTANCE_ID, INCONSISTENT_GROUP_PROTOCOL)."""

    def __init__(self, api: str, code: int) -> None:
        try:
            name = ErrorCode(code).name
        except ValueError:
            name = str(code)
        super().__init__(f"{api} failed: {name} ({code})")
        self.code = code


@dataclass(frozen=True, slots=True)
class Assignment:
    """What this member holds in one generation."""

    generation: int
    member_id: str
    leader_id: str
    protocol: str
    data: bytes
    members: tuple[str, ...]  # all member ids (only the leader learns them; empty on followers)

    @property
    def is_leader(self) -> bool:
        return self.member_id == self.leader_id

    @property
    def resources(self) -> tuple[str, ...]:
        """The resources a :class:`ResourceAssignor` gave this member."""
        return decode_resources(self.data)


Callback = Callable[[Assignment], Awaitable[None] | None]


class GroupMember:
    """One member of group ``group_id`` with protocol type ``protocol_type`` (see the module docstring)."""

    def __init__(
        self,
        bootstrap: str,
        group_id: str,
        assignor: Assignor,
        *,
        protocol_type: str = "groupcoord-membership",
        instance_id: str | None = None,
        session_timeout_ms: int = 10000,
        rebalance_timeout_ms: int = 30000,
        heartbeat_interval_ms: int = 1000,
        on_assigned: Callback | None = None,
        on_revoked: Callback | None = None,
        client_id: str = "groupcoord-membership",
        retry_backoff_s: float = 0.2,
    ) -> None:
        host, _, port = bootstrap.rpartition(":")
        self.bootstrap = (host, int(port))
        self.group_id, self.assignor, self.protocol_type = group_id, assignor, protocol_type
        self.instance_id = instance_id
        self.session_timeout_ms, self.rebalance_timeout_ms = session_timeout_ms, rebalance_timeout_ms
        self.heartbeat_interval = heartbeat_interval_ms / 1000
        self.on_assigned, self.on_revoked = on_assigned, on_revoked
        self.client_id, self.retry_backoff = client_id, retry_backoff_s
        self.member_id = ""
        self.generation = -1
        self.assignment: Assignment | None = None
        self.error: BaseException | None = None
        self.conn: Connection | None = None
        self.task: asyncio.Task[None] | None = None
        self.queue: asyncio.Queue[Assignment | None] = asyncio.Queue()
        self.first = asyncio.Event()

    # -- public -----------------------------------------------------------------------------------------
    async def start(self, wait: bool = True, timeout: float = 60.0) -> GroupMember:
        """Start membership in the background; with ``wait``, return after the first assignment."""
        self.task = asyncio.create_task(self.run())
        if wait:
            waiter = asyncio.create_task(self.first.wait())
            done, _ = await asyncio.wait(
                {waiter, self.task}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
            if self.task in done:
                waiter.cancel()
                self.task.result()  # raise the error that ended membership
            if waiter not in done:
                waiter.cancel()
                raise TimeoutError(f"no assignment for group {self.group_id!r} within {timeout}s")
        return self

    async def assignments(self) -> AsyncIterator[Assignment]:
        """Every assignment (those not yet taken by an earlier iterator first), until ``stop()``."""
        while True:
            item = await self.queue.get()
            if item is None:
                return
            yield item

    async def stop(self, leave: bool | None = None) -> None:
        """Stop; leave the group (default: dynamic members leave, static ones do not, as in Kafka)."""
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.task
        if self.assignment is not None:
            await self._revoke()
        if leave if leave is not None else self.instance_id is None:
            await self._leave()
        if self.conn is not None:
            await self.conn.close()
            self.conn = None
        self.queue.put_nowait(None)

    # -- the loop ---------------------------------------------------------------------------------------
    async def run(self) -> None:
        try:
            while True:
                try:
                    if self.conn is None:
                        self.conn = await self._find_coordinator()
                    await self._join_and_sync()
                    await self._heartbeat_until_rebalance()
                except (ConnectionClosedError, OSError, TimeoutError) as exc:
                    log.info("group %s: connection problem (%s); rediscovering", self.group_id, exc)
                    await self._drop_connection()
                    await asyncio.sleep(self.retry_backoff)
        except MembershipError as exc:
            self.error = exc
            self.queue.put_nowait(None)
            raise

    async def _find_coordinator(self) -> Connection:
        boot = await Connection.open(*self.bootstrap, self.client_id)
        try:
            while True:
                resp = await boot.request(
                    ApiKey.FIND_COORDINATOR, FIND_V, FindCoordinatorRequest(key=self.group_id, key_type=0), 30
                )
                assert isinstance(resp, FindCoordinatorResponse)
                if resp.error_code == ErrorCode.NONE:
                    break
                if resp.error_code not in COORDINATOR_ERRORS:
                    raise MembershipError("FindCoordinator", resp.error_code)
                await asyncio.sleep(self.retry_backoff)
        finally:
            await boot.close()
        return await Connection.open(resp.host, resp.port, self.client_id)

    async def _drop_connection(self) -> None:
        if self.conn is not None:
            await self.conn.close()
            self.conn = None

    async def _revoke(self) -> None:
        old, self.assignment = self.assignment, None
        if old is not None and self.on_revoked is not None:
            await _call(self.on_revoked, old)

    async def _join_and_sync(self) -> None:
        """Join (and, on the leader, assign) until SyncGroup hands us an assignment."""
        await self._revoke()
        conn = self.conn
        assert conn is not None
        while True:
            join = JoinGroupRequest(
                group_id=self.group_id,
                session_timeout_ms=self.session_timeout_ms,
                rebalance_timeout_ms=self.rebalance_timeout_ms,
                member_id=self.member_id,
                group_instance_id=self.instance_id,
                protocol_type=self.protocol_type,
                protocols=(JoinGroupRequestProtocol(self.assignor.name, self.assignor.metadata()),),
            )
            timeout = self.rebalance_timeout_ms / 1000 + 10
            resp = await conn.request(ApiKey.JOIN_GROUP, JOIN_V, join, timeout)
            assert isinstance(resp, JoinGroupResponse)
            code = resp.error_code
            if code == ErrorCode.MEMBER_ID_REQUIRED:  # KIP-394: rejoin with the id the coordinator gave us
                self.member_id = resp.member_id
                continue
            if code in RESET_ERRORS:
                self.member_id = ""
                continue
            if code in REJOIN_ERRORS:
                continue
            if code in COORDINATOR_ERRORS:
                raise ConnectionClosedError(f"JoinGroup: {ErrorCode(code).name}")
            if code != ErrorCode.NONE:
                raise MembershipError("JoinGroup", code)
            self.member_id, self.generation = resp.member_id, resp.generation_id
            protocol = resp.protocol_name or self.assignor.name
            members = tuple(
                GroupMemberInfo(m.member_id, m.group_instance_id, m.metadata) for m in resp.members
            )
            plan: dict[str, bytes] = {}
            if resp.leader == self.member_id and not resp.skip_assignment:
                plan = dict(self.assignor.assign(self.member_id, members))
            sync = SyncGroupRequest(
                group_id=self.group_id,
                generation_id=self.generation,
                member_id=self.member_id,
                group_instance_id=self.instance_id,
                assignments=tuple(SyncGroupRequestAssignment(m, a) for m, a in plan.items()),
            )
            sresp = await conn.request(ApiKey.SYNC_GROUP, SYNC_V, sync, timeout)
            assert isinstance(sresp, SyncGroupResponse)
            code = sresp.error_code
            if code in RESET_ERRORS:
                self.member_id = ""
                continue
            if code in REJOIN_ERRORS:
                continue
            if code in COORDINATOR_ERRORS:
                raise ConnectionClosedError(f"SyncGroup: {ErrorCode(code).name}")
            if code != ErrorCode.NONE:
                raise MembershipError("SyncGroup", code)
            self.assignment = Assignment(
                generation=self.generation,
                member_id=self.member_id,
                leader_id=resp.leader,
                protocol=protocol,
                data=sresp.assignment or b"",
                members=tuple(m.member_id for m in members),
            )
            log.info("group %s generation %d: %s", self.group_id, self.generation, self.assignment)
            if self.on_assigned is not None:
                await _call(self.on_assigned, self.assignment)
            self.queue.put_nowait(self.assignment)
            self.first.set()
            return

    async def _heartbeat_until_rebalance(self) -> None:
        conn = self.conn
        assert conn is not None
        while True:
            await asyncio.sleep(self.heartbeat_interval)
            req = HeartbeatRequest(self.group_id, self.generation, self.member_id, self.instance_id)
            resp = await conn.request(ApiKey.HEARTBEAT, HEARTBEAT_V, req, self.session_timeout_ms / 1000)
            assert isinstance(resp, HeartbeatResponse)
            code = resp.error_code
            if code == ErrorCode.NONE:
                continue
            if code in RESET_ERRORS:
                self.member_id = ""
                return
            if code in REJOIN_ERRORS:
                return
            if code in COORDINATOR_ERRORS:
                raise ConnectionClosedError(f"Heartbeat: {ErrorCode(code).name}")
            raise MembershipError("Heartbeat", code)

    async def _leave(self) -> None:
        if not self.member_id:
            return
        try:
            conn = self.conn or await self._find_coordinator()
            self.conn = conn
            req = LeaveGroupRequest(
                group_id=self.group_id,
                members=(MemberIdentity(self.member_id, self.instance_id),),
            )
            resp = await conn.request(ApiKey.LEAVE_GROUP, LEAVE_V, req, 10)
            assert isinstance(resp, LeaveGroupResponse)
            if resp.error_code != ErrorCode.NONE:
                log.info("group %s: LeaveGroup answered %s", self.group_id, resp.error_code)
        except (ConnectionClosedError, OSError, TimeoutError) as exc:
            log.info("group %s: could not leave (%s); the session timeout will expire us", self.group_id, exc)
        self.member_id, self.generation = "", -1


async def _call(callback: Callback, assignment: Assignment) -> None:
    try:
        res = callback(assignment)
        if asyncio.iscoroutine(res):
            await res
    except Exception:
        log.exception("membership callback %s failed", callback)
