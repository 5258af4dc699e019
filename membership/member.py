"""A member of a non-consumer group: join, leader assigns, receive, heartbeat, leave.

The classic group protocol serves any kind of member (Kafka Connect and Schema Registry use it with their
own ``protocol_type``). :class:`GroupMember` runs it for Python apps: it finds the coordinator, joins
(KIP-394 MEMBER_ID_REQUIRED, KIP-345 static membership via ``instance_id``), lets the elected leader run the
user's :class:`~groupcoord.membership.assignors.Assignor`, delivers each generation's assignment through
callbacks and an async iterator, heartbeats, rejoins on REBALANCE_IN_PROGRESS / UNKNOWN_MEMBER_ID /
ILLEGAL_GENERATION, rediscovers the coordinator on NOT_COORDINATOR, and leaves gracefully on ``stop()``.

Rebalances are eager: before rejoining, the current assignment is revoked (``on_revoked``), so a
resource is never held by two members of the same generation. Heartbeats run in a task of their own, so slow
callbacks do not get the member expelled, and a session guard gives the assignment up (``on_lost``) a little
before the coordinator could expire a member that cannot reach it, so that no two members hold a resource at
once even across generations.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

from groupcoord.membership.assignors import Assignor, GroupMemberInfo, decode_resources
from groupcoord.membership.connection import Connection, ConnectionClosedError
from groupcoord.membership.errors import AssignorError, BootstrapError, MembershipError
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


# The member gives its assignment up once this share of the session timeout has passed since it sent the last
# request the coordinator answered as a live member, a little before the coordinator can expire it (the
# coordinator's timer started when that request arrived, later than we sent it), so that its lost callback
# runs before the coordinator lets another member own what it held.
LOST_AFTER_SESSION_SHARE = 0.9


def parse_bootstrap(bootstrap: str) -> tuple[str, int]:
    """``"host:port"`` (``"[::1]:9092"`` for IPv6) -> (host, port), or ValueError saying what is missing."""
    host, sep, port = bootstrap.strip().rpartition(":")
    if not sep or not host or not port or (host.count(":") and not host.startswith("[")):
        raise ValueError(f"bootstrap {bootstrap!r} has no port: expected host:port, e.g. 127.0.0.1:9092")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"bootstrap {bootstrap!r} has an invalid port {port!r}: expected host:port")
    return host.strip("[]"), int(port)


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
        on_lost: Callback | None = None,
        client_id: str = "groupcoord-membership",
        retry_backoff_s: float = 0.2,
    ) -> None:
        self.bootstrap = parse_bootstrap(bootstrap)
        self.group_id, self.assignor, self.protocol_type = group_id, assignor, protocol_type
        self.instance_id = instance_id
        self.session_timeout_ms, self.rebalance_timeout_ms = session_timeout_ms, rebalance_timeout_ms
        self.heartbeat_interval = heartbeat_interval_ms / 1000
        self.on_assigned, self.on_revoked, self.on_lost = on_assigned, on_revoked, on_lost
        self.client_id, self.retry_backoff = client_id, retry_backoff_s
        self.member_id = ""
        self.generation = -1
        self.assignment: Assignment | None = None
        self.error: BaseException | None = None
        self.last_problem: BaseException | None = None  # the latest retried failure (for start()'s timeout)
        self.conn: Connection | None = None
        self.task: asyncio.Task[None] | None = None
        self.queue: asyncio.Queue[Assignment | None] = asyncio.Queue()
        self.first = asyncio.Event()
        # while in a generation: the heartbeat task, what it reports to run(), and the session guard
        self.alive_until = 0.0  # loop time after which we assume the coordinator may have expired us
        self.heartbeats: asyncio.Task[None] | None = None
        self.trouble: asyncio.Future[tuple[str, BaseException | None]] | None = None
        self.guard: asyncio.Task[None] | None = None
        self.callbacks = asyncio.Lock()  # callbacks never overlap (a lost callback waits for on_assigned)

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
                cause = self.last_problem
                why = f": last problem: {cause}" if cause is not None else ""
                raise TimeoutError(
                    f"no assignment for group {self.group_id!r} within {timeout}s{why}"
                ) from cause
        return self

    async def assignments(self) -> AsyncIterator[Assignment]:
        """Every assignment (those not yet taken by an earlier iterator first), until ``stop()``; raises the
        error that ended membership (``self.error``) if one did."""
        while True:
            item = await self.queue.get()
            if item is None:
                if self.error is not None:
                    raise self.error
                return
            yield item

    async def stop(self, leave: bool | None = None) -> None:
        """Stop; leave the group (default: dynamic members leave, static ones do not, as in Kafka)."""
        if self.task is not None:
            # cancel until it has ended: a library awaited inside the loop may swallow one cancellation
            while not self.task.done():
                self.task.cancel()
                await asyncio.wait({self.task}, timeout=1.0)
            with contextlib.suppress(asyncio.CancelledError, Exception):
                self.task.result()
        await self._revoke()  # heartbeats go on while on_revoked runs
        await self._stop_heartbeats()
        await self._stop_guard()
        if leave if leave is not None else self.instance_id is None:
            await self._leave()
        await self._drop_connection()
        self.queue.put_nowait(None)

    # -- the loop ---------------------------------------------------------------------------------------
    async def run(self) -> None:
        try:
            while True:
                try:
                    if self.conn is None:
                        self.conn = await self._find_coordinator()
                    await self._join_and_sync()
                    await self._deliver()
                    await self._until_rejoin()
                except (ConnectionClosedError, OSError, TimeoutError) as exc:
                    self._problem(exc)
                    await self._drop_connection()  # the session guard still runs: see _guard
                    await asyncio.sleep(self.retry_backoff)
        except Exception as exc:  # MembershipError, or a bug: either way the member ends, and says so
            self.error = exc
            log.error(
                "group %s: membership ended: %s",
                self.group_id,
                exc,
                exc_info=not isinstance(exc, MembershipError),
            )
            await self._lose(self.assignment, str(exc))
            await self._stop_guard()
            if isinstance(exc, AssignorError):
                await self._leave()  # let the others rebalance now rather than after our session timeout
            await self._drop_connection()
            self.queue.put_nowait(None)
            raise

    def _problem(self, exc: BaseException) -> None:
        """Remember a retried failure; log it loudly when it is new, quietly when it repeats."""
        repeated = self.last_problem is not None and str(self.last_problem) == str(exc)
        self.last_problem = exc
        level = logging.INFO if repeated else logging.WARNING
        log.log(level, "group %s: %s; retrying", self.group_id, exc)

    async def _open(self, host: str, port: int, what: str) -> Connection:
        """A connection to ``host:port``; a failure says which address failed and why."""
        try:
            return await Connection.open(host, port, self.client_id)
        except socket.gaierror as exc:
            if what == "bootstrap" and not self.first.is_set():  # a configuration error, as in Java
                raise BootstrapError(
                    f"bootstrap host {host!r} does not resolve: {exc.strerror or exc}"
                ) from exc
            raise ConnectionClosedError(
                f"{what} host {host!r} does not resolve: {exc.strerror or exc}"
            ) from exc
        except ConnectionRefusedError as exc:
            raise ConnectionClosedError(f"{what} {host}:{port} refused the connection") from exc
        except TimeoutError as exc:
            raise ConnectionClosedError(f"{what} {host}:{port} did not accept a connection in time") from exc
        except OSError as exc:
            raise ConnectionClosedError(f"cannot connect to {what} {host}:{port}: {exc}") from exc

    async def _find_coordinator(self) -> Connection:
        boot = await self._open(*self.bootstrap, "bootstrap")
        try:
            while True:
                try:
                    resp = await boot.request(
                        ApiKey.FIND_COORDINATOR,
                        FIND_V,
                        FindCoordinatorRequest(key=self.group_id, key_type=0),
                        30,
                    )
                except TimeoutError as exc:
                    host, port = self.bootstrap
                    raise ConnectionClosedError(
                        f"bootstrap {host}:{port} did not answer FindCoordinator"
                    ) from exc
                assert isinstance(resp, FindCoordinatorResponse)
                if resp.error_code == ErrorCode.NONE:
                    break
                if resp.error_code not in COORDINATOR_ERRORS:
                    raise MembershipError("FindCoordinator", resp.error_code)
                await asyncio.sleep(self.retry_backoff)
        finally:
            await boot.close()
        return await self._open(resp.host, resp.port, "coordinator")

    async def _drop_connection(self) -> None:
        await self._stop_heartbeats()
        if self.conn is not None:
            await self.conn.close()
            self.conn = None

    async def _revoke(self) -> None:
        """Eager rebalance: give up the current assignment (``on_revoked``) before rejoining."""
        old, self.assignment = self.assignment, None
        if old is not None:
            self._cancel_guard()
        if old is not None and self.on_revoked is not None:
            async with self.callbacks:
                await _call(self.on_revoked, old)

    async def _lose(self, old: Assignment | None, reason: str) -> None:
        """The assignment may already belong to someone else: drop it now (``on_lost``, else ``on_revoked``)."""
        if old is None or self.assignment is not old:
            return  # already revoked or lost
        self.assignment = None
        self._cancel_guard()
        log.warning("group %s generation %d: assignment lost (%s)", self.group_id, old.generation, reason)
        callback = self.on_lost or self.on_revoked
        if callback is not None:
            async with self.callbacks:
                await _call(callback, old)

    async def _join_and_sync(self) -> None:
        """Join (and, on the leader, assign) until SyncGroup hands us an assignment."""
        await self._revoke()  # heartbeats (if we are in a generation) go on while on_revoked runs
        await self._stop_heartbeats()
        conn = self.conn
        assert conn is not None
        loop = asyncio.get_running_loop()
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
                plan = self._assign(members)
            sync = SyncGroupRequest(
                group_id=self.group_id,
                generation_id=self.generation,
                member_id=self.member_id,
                group_instance_id=self.instance_id,
                assignments=tuple(SyncGroupRequestAssignment(m, a) for m, a in plan.items()),
            )
            sent = loop.time()
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
            self.last_problem = None
            self._alive(sent)  # the coordinator restarted our session timer when it answered the SyncGroup
            self.trouble = loop.create_future()
            self.heartbeats = asyncio.create_task(self._heartbeat_loop(conn, self.trouble))
            self.guard = asyncio.create_task(self._guard(self.assignment))
            return

    def _assign(self, members: tuple[GroupMemberInfo, ...]) -> dict[str, bytes]:
        """The leader's plan, or :class:`AssignorError` when the assignor raises or names unknown members."""
        name = self.assignor.name
        try:
            plan = dict(self.assignor.assign(self.member_id, members))
        except AssignorError:
            raise
        except Exception as exc:
            raise AssignorError(f"assignor {name!r} failed on the leader: {exc!r}") from exc
        unknown = sorted(set(plan) - {m.member_id for m in members})
        if unknown:
            raise AssignorError(f"assignor {name!r} assigned to unknown member ids {unknown}")
        not_bytes = sorted(m for m, a in plan.items() if not isinstance(a, bytes | bytearray))
        if not_bytes:
            raise AssignorError(f"assignor {name!r} gave non-bytes assignments to {not_bytes}")
        return {m: bytes(a) for m, a in plan.items()}

    async def _deliver(self) -> None:
        """``on_assigned`` (heartbeats go on meanwhile), then the iterator."""
        assignment = self.assignment
        assert assignment is not None
        if self.on_assigned is not None:
            async with self.callbacks:
                await _call(self.on_assigned, assignment)
        self.queue.put_nowait(assignment)
        self.first.set()

    async def _until_rejoin(self) -> None:
        """Wait until the heartbeats say the generation is over, then act on why."""
        assert self.trouble is not None
        kind, exc = await self.trouble
        if kind == "reset":  # UNKNOWN_MEMBER_ID: the coordinator expired or removed us
            await self._lose(self.assignment, "the coordinator no longer knows this member")
            self.member_id = ""
        elif kind == "reconnect":
            raise ConnectionClosedError(str(exc)) from exc
        elif kind == "fatal":
            assert exc is not None
            raise exc
        elif kind == "lost":  # nothing answered for most of a session: do not trust this connection
            raise ConnectionClosedError("the coordinator did not answer for most of the session timeout")
        # "rejoin" (a rebalance began, or the generation moved on): run() rejoins

    # -- heartbeats and the session guard, beside the callbacks -----------------------------------------
    def _alive(self, sent: float) -> None:
        """A request sent at ``sent`` was answered as from a live member: the session runs from there."""
        until = sent + LOST_AFTER_SESSION_SHARE * self.session_timeout_ms / 1000
        self.alive_until = max(self.alive_until, until)

    async def _heartbeat_loop(
        self, conn: Connection, trouble: asyncio.Future[tuple[str, BaseException | None]]
    ) -> None:
        """Heartbeat every interval in a task of its own, so that slow callbacks do not get us expelled, as
        Java's heartbeat thread does. Reports the end of the generation through ``trouble`` but keeps
        heartbeating through REBALANCE_IN_PROGRESS, which keeps us alive while ``on_revoked`` runs."""
        loop = asyncio.get_running_loop()

        def report(kind: str, exc: BaseException | None = None) -> None:
            if not trouble.done():
                trouble.set_result((kind, exc))

        while True:
            await asyncio.sleep(self.heartbeat_interval)
            req = HeartbeatRequest(self.group_id, self.generation, self.member_id, self.instance_id)
            sent = loop.time()
            try:
                resp = await conn.request(ApiKey.HEARTBEAT, HEARTBEAT_V, req, self.session_timeout_ms / 1000)
            except (ConnectionClosedError, OSError, TimeoutError) as exc:
                report("reconnect", ConnectionClosedError(f"Heartbeat: {exc or type(exc).__name__}"))
                return
            if not isinstance(resp, HeartbeatResponse):  # never a silent end: run() waits on `trouble`
                report("reconnect", ConnectionClosedError(f"Heartbeat: unexpected response {resp!r}"))
                return
            code = resp.error_code
            if code in (ErrorCode.NONE, ErrorCode.REBALANCE_IN_PROGRESS):
                self._alive(sent)
                if code == ErrorCode.REBALANCE_IN_PROGRESS:
                    report("rejoin")
                continue
            if code in RESET_ERRORS:
                report("reset")
            elif code == ErrorCode.ILLEGAL_GENERATION:
                report("rejoin")
            elif code in COORDINATOR_ERRORS:
                report("reconnect", ConnectionClosedError(f"Heartbeat: {ErrorCode(code).name}"))
            else:
                report("fatal", MembershipError("Heartbeat", code))
            return

    async def _guard(self, assignment: Assignment) -> None:
        """Give ``assignment`` up when no request has been answered for (almost) a session timeout, so the
        member never holds what the coordinator may already have handed to another member. Runs whatever the
        loop is doing: heartbeating, stuck on a dead connection or rediscovering the coordinator."""
        loop = asyncio.get_running_loop()
        while self.assignment is assignment:
            left = self.alive_until - loop.time()
            if left <= 0:
                seconds = LOST_AFTER_SESSION_SHARE * self.session_timeout_ms / 1000
                await self._lose(
                    assignment, f"no heartbeat answered for {seconds:.1f}s of the session timeout"
                )
                if self.trouble is not None and not self.trouble.done():
                    self.trouble.set_result(("lost", None))
                return
            await asyncio.sleep(left)

    async def _stop_heartbeats(self) -> None:
        task, self.heartbeats = self.heartbeats, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def _cancel_guard(self) -> None:
        """The assignment was given up: its guard has nothing left to do (unless it is the one giving up)."""
        if self.guard is not None and self.guard is not asyncio.current_task():
            self.guard.cancel()
            self.guard = None

    async def _stop_guard(self) -> None:
        async with self.callbacks:  # a lost callback the guard already started runs to its end
            task, self.guard = self.guard, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

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
        except (ConnectionClosedError, OSError, TimeoutError, MembershipError) as exc:
            log.info("group %s: could not leave (%s); the session timeout will expire us", self.group_id, exc)
        self.member_id, self.generation = "", -1


async def _call(callback: Callback, assignment: Assignment) -> None:
    try:
        res = callback(assignment)
        if asyncio.iscoroutine(res):
            await res
    except Exception:
        log.exception("membership callback %s failed", callback)
