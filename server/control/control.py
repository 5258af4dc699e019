"""`Control`: what a test does to a running coordinator, in-process (the pytest plugin) or over HTTP."""

from __future__ import annotations

import asyncio
import uuid
from typing import TYPE_CHECKING, Protocol, Unpack

import structlog

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.control.clock import VirtualClock
from groupcoord.server.control.faults import (
    COORDINATOR_APIS,
    Fault,
    FaultInjector,
    FaultSpec,
    Recorded,
    api_key_of,
    error_code_of,
)
from groupcoord.server.control.views import GroupView, MemberView, Partitions
from groupcoord.server.coordinator.modern.consumer.manager import session_key as consumer_session_key

if TYPE_CHECKING:
    from collections.abc import Iterable

    from groupcoord.server.apis.consumer_groups import TopicLookups
    from groupcoord.server.coordinator.modern.consumer.api import (
        DescribedConsumerGroup,
        DescribedConsumerMember,
    )
    from groupcoord.server.coordinator.modern.share.group import DescribedShareGroup, DescribedShareMember
    from groupcoord.server.coordinator.shard import GroupCoordinatorShard
    from groupcoord.server.journal.writer import Journal
    from groupcoord.server.net.dispatch import Dispatcher
    from groupcoord.server.runtime import GroupRuntime
    from groupcoord.server.timers import Clock

log = structlog.get_logger("groupcoord.control")


def _modern_member_view(
    m: DescribedConsumerMember | DescribedShareMember,
    instance_id: str | None,
    assigned: Partitions,
    target: Partitions | None = None,
) -> MemberView:
    """A KIP-848 consumer or KIP-932 share group member: both describe epochs and partitions by topic name
    (the caller names them: consumer assignments carry names, share assignments topic ids), never the
    classic SyncGroup bytes."""
    return MemberView(
        m.member_id,
        instance_id,
        m.client_id,
        m.client_host,
        b"",
        member_epoch=m.member_epoch,
        assigned=assigned,
        target={} if target is None else target,
        subscribed_topics=tuple(m.subscribed_topic_names),
    )


def _modern_group_view(
    group_id: str,
    group_type: str,
    d: DescribedConsumerGroup | DescribedShareGroup,
    members: Iterable[MemberView],
) -> GroupView:
    """A consumer or share group as its Describe API shows it: the group epoch stands for the generation, the
    assignor for the protocol, and there is no leader (the coordinator assigns)."""
    return GroupView(
        group_id=group_id,
        state=d.state,
        generation=d.group_epoch,
        protocol_type=group_type,
        protocol=d.assignor_name,
        leader=None,
        members=tuple(members),
        group_type=group_type,
        assignment_epoch=d.assignment_epoch,
    )


class EventStream:
    """One group's events as an async iterator; `close()` (or leaving an `async with`) unsubscribes."""

    def __init__(self, group_id: str, registry: list[EventStream]) -> None:
        self.group_id = group_id
        self.queue: asyncio.Queue[dict] = asyncio.Queue()
        self._registry = registry

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> dict:
        return await self.queue.get()

    def drain(self) -> list[dict]:
        """The events queued now, without waiting (the same on the subprocess facade's stream)."""
        out = []
        while not self.queue.empty():
            out.append(self.queue.get_nowait())
        return out

    def close(self) -> None:
        if self in self._registry:
            self._registry.remove(self)

    async def __aenter__(self) -> EventStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()


class Endpoint(Protocol):
    """A serving endpoint of these controls (`server.control.http.ControlHttp`), stopped with them."""

    async def stop(self) -> None: ...


class ControlledServer(Protocol):
    """What the controls use of the running server (`server.broker.Broker` satisfies it). A Protocol, so that
    `server.control` does not import `server.broker`, which makes the controls on first use."""

    clock: Clock
    loop: asyncio.AbstractEventLoop | None
    journal: Journal | None
    machine: GroupCoordinatorShard | None
    runtime: GroupRuntime | None
    dispatcher: Dispatcher
    topics: TopicLookups | None


class Control:
    def __init__(self, broker: ControlledServer) -> None:
        assert broker.loop is not None and broker.journal is not None, "start the broker first"
        self.broker = broker
        self.faults = FaultInjector(broker.dispatcher, broker.loop)
        self._changed = asyncio.Event()
        self._subscribers: list[EventStream] = []
        broker.journal.listeners.append(self._on_event)
        self._http: Endpoint | None = None
        self.http_port: int | None = None

    # -- time

    @property
    def virtual(self) -> bool:
        return isinstance(self.broker.clock, VirtualClock)

    def now_ms(self) -> int:
        return self.broker.clock.now_ms()

    async def advance(self, ms: int) -> int:
        """Move the virtual clock `ms` forward, firing the due timers in deadline order; each deadline's
        effects (writes, then replies) complete before the next fires. Returns the new now."""
        clock = self.broker.clock
        if not isinstance(clock, VirtualClock):
            raise RuntimeError("advance() needs a server started with the virtual clock (--virtual-clock)")
        if ms < 0:
            raise ValueError("cannot move the clock backwards")
        await self.settle()
        target = clock.now_ms() + ms
        while clock.step(target):
            await self.settle()
        clock.set(target)
        await self.settle()
        return target

    async def settle(self) -> None:
        """Let queued callbacks run and in-flight state writes finish."""
        runtime = self.broker.runtime
        for _ in range(3):
            await asyncio.sleep(0)
            if runtime is not None:
                await runtime.quiesce()

    # -- observation

    def describe(self, group_id: str) -> GroupView:
        machine = self.broker.machine
        assert machine is not None
        if machine.consumer_group(group_id) is not None:
            return self._describe_consumer(group_id)
        if machine.has_share_group(group_id):
            return self._describe_share(group_id)
        described = machine.describe_groups([group_id])[0]
        g = machine.group(group_id)
        return GroupView(
            group_id=group_id,
            state=described.state,
            generation=g.generation_id if g is not None else 0,
            protocol_type=described.protocol_type,
            protocol=(g.protocol_name or "") if g is not None else "",
            leader=g.leader_id if g is not None else None,
            members=tuple(
                MemberView(m.member_id, m.group_instance_id, m.client_id, m.client_host, m.assignment)
                for m in described.members
            ),
        )

    def _describe_consumer(self, group_id: str) -> GroupView:
        """A KIP-848 consumer group as ConsumerGroupDescribe shows it (epochs, assignments by topic name)."""
        from groupcoord.server.apis.consumer_groups import LogTopicImage

        machine, topics = self.broker.machine, self.broker.topics
        assert machine is not None and topics is not None
        d = machine.consumer_group_describe([group_id], LogTopicImage(topics))[0]

        def parts(described: tuple) -> Partitions:  # type: ignore[type-arg]
            return {t.topic_name: tuple(t.partitions) for t in described}

        return _modern_group_view(
            group_id,
            "consumer",
            d,
            (
                _modern_member_view(m, m.instance_id, parts(m.assignment), parts(m.target_assignment))
                for m in d.members
            ),
        )

    def _describe_share(self, group_id: str) -> GroupView:
        """A KIP-932 share group as ShareGroupDescribe shows it."""
        machine, topics = self.broker.machine, self.broker.topics
        assert machine is not None and topics is not None
        d = machine.share_group_describe([group_id])[0]

        def named(assignment: tuple[tuple[str, tuple[int, ...]], ...]) -> Partitions:
            """Share assignments are keyed by topic id (hex); a topic since deleted is left out."""
            out: Partitions = {}
            for hex_id, ps in assignment:
                info = topics.by_id(uuid.UUID(hex=hex_id))
                if info is not None:
                    out[info.name] = tuple(sorted(ps))
            return out

        # share members have no static membership and no separate target assignment
        return _modern_group_view(
            group_id, "share", d, (_modern_member_view(m, None, named(m.assignment)) for m in d.members)
        )

    def group_ids(self) -> list[str]:
        assert self.broker.machine is not None
        return list(self.broker.machine.group_ids())

    async def wait_group(
        self,
        group_id: str,
        state: str | None = "Stable",
        members: int | None = None,
        generation: int | None = None,
        timeout: float = 10.0,
    ) -> GroupView:
        """Wait until the group is in `state` with `members` members at generation >= `generation`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            view = self.describe(group_id)
            if view.matches(state, members, generation):
                return view
            left = deadline - loop.time()
            if left <= 0:
                raise TimeoutError(
                    f"group {group_id!r} did not reach state={state} members={members} "
                    f"generation>={generation} within {timeout}s; it is {view.state} with "
                    f"{len(view.members)} members at generation {view.generation}"
                )
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), min(left, 0.05))
            except TimeoutError:
                pass

    def events(self, group_id: str) -> EventStream:
        """The group's journal events from this call on (state changes, joins, leaves, expiries), as an
        async iterator; subscribed at once, so nothing between this call and the first `anext` is missed."""
        stream = EventStream(group_id, self._subscribers)
        self._subscribers.append(stream)
        return stream

    def _on_event(self, event: dict) -> None:
        self._changed.set()
        gid = event.get("group")
        for stream in self._subscribers:
            if stream.group_id == gid:
                stream.queue.put_nowait(dict(event))

    # -- faults

    def fault(self, *apis: str | int, **spec: Unpack[FaultSpec]) -> Fault:
        """Make the next `count` requests of these APIs (all APIs when none named; only those of `versions`,
        naming `group` or sent by `client_id` when given) fail with `error`, wait `delay_ms` first, drop the
        connection, be handled without an answer (`drop_response`), or (`hold`) wait until the returned
        fault's `release()`. `for_ms` bounds it in wall-clock time; `count=None` takes every match."""
        return self.faults.add(apis, **spec)

    def max_version(self, api: str | int, max_version: int | None) -> None:
        """Pretend to be an older broker for `api`: ApiVersions advertises `max_version` as its highest and a
        request above it gets UNSUPPORTED_VERSION (as any version we do not speak). None lifts the cap."""
        self.faults.cap_version(api, max_version)

    def max_versions(self) -> dict[str, int]:
        return {ApiKey(k).name: v for k, v in sorted(self.faults.max_versions.items())}

    def coordinator_unavailable(
        self, for_ms: int, error: str | int = "COORDINATOR_NOT_AVAILABLE", group: str | None = None
    ) -> Fault:
        """Every coordinator request (FindCoordinator and the group APIs) fails with `error` for `for_ms`
        wall-clock milliseconds: COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS."""
        code = ErrorCode(error_code_of(error))
        if code not in (
            ErrorCode.COORDINATOR_NOT_AVAILABLE,
            ErrorCode.NOT_COORDINATOR,
            ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ):
            raise ValueError(f"{code.name} is not a coordinator-availability error")
        return self.faults.add(COORDINATOR_APIS, error=int(code), count=None, group=group, for_ms=for_ms)

    def clear_faults(self) -> None:
        self.faults.clear()

    async def expire_member(self, group_id: str, member_id: str) -> None:
        """End one member's session now, as if its heartbeats had stopped: removed with reason
        session_timeout, and the group rebalances as Kafka's would."""
        runtime, machine = self.broker.runtime, self.broker.machine
        assert runtime is not None and machine is not None
        cg = machine.consumer_group(group_id)
        if cg is not None:  # KIP-848: fenced as its session timer would (reason session_timeout)
            if member_id not in cg.members:
                raise KeyError(f"no member {member_id!r} in group {group_id!r}")
            expired = runtime.call(
                group_id, lambda now: (None, machine.on_timer(consumer_session_key(group_id, member_id), now))
            )
            if isinstance(expired, asyncio.Future):
                await expired
            await self.settle()
            return
        g = machine.group(group_id)
        if g is None or member_id not in g.members:
            raise KeyError(f"no member {member_id!r} in group {group_id!r}")
        key = ("heartbeat", group_id, member_id)

        def step(now: int) -> tuple[None, object]:
            group = machine.group(group_id)
            member = group.members.get(member_id) if group is not None else None
            if member is None:
                return None, None
            member.hb_deadline = now  # its session ends now; the machine's own expiry path does the rest
            return None, machine.on_timer(key, now)

        result = runtime.call(group_id, step)
        if isinstance(result, asyncio.Future):
            await result
        await self.settle()

    async def force_rebalance(self, group_id: str, reason: str = "forced") -> GroupView:
        """Make a Stable or CompletingRebalance group rebalance now, as Kafka does when it triggers one
        (`prepareRebalance(group, reason)`): it goes to PreparingRebalance, the journal's state_change carries
        `reason`, members get REBALANCE_IN_PROGRESS on their next heartbeat (parked SyncGroups at once) and
        rejoin into the next generation. Runs through the group's mailbox, after whatever it is doing.

        Raises KeyError when there is no such group and ValueError when it is Empty (nobody to rebalance) or
        already PreparingRebalance; returns the group as it is right after."""
        runtime, machine = self.broker.runtime, self.broker.machine
        assert runtime is not None and machine is not None
        if not reason:
            raise ValueError("a forced rebalance needs a reason")

        def step(now: int) -> tuple[str, object]:
            return machine.force_rebalance(group_id, reason, now)

        before = runtime.call(group_id, step)
        if isinstance(before, asyncio.Future):
            before = await before
        await self.settle()
        if before == "Dead":
            raise KeyError(f"no group {group_id!r}")
        if before not in ("Stable", "CompletingRebalance"):
            raise ValueError(
                f"group {group_id!r} is {before}: only a Stable or CompletingRebalance group rebalances"
            )
        log.info("rebalance forced", group=group_id, reason=reason, state_from=before)
        return self.describe(group_id)

    # -- recording

    def record(self, on: bool = True) -> None:
        self.faults.record(on)

    def recorded(self, api: str | int | None = None, group: str | None = None) -> list[Recorded]:
        key = api_key_of(api) if api is not None else None
        return [
            r
            for r in self.faults.recorded
            if (key is None or r.api_key == key) and (group is None or group in r.groups)
        ]

    def clear_recorded(self) -> None:
        self.faults.recorded.clear()

    # -- HTTP endpoint and lifetime

    def attach_http(self, endpoint: Endpoint, port: int) -> None:
        """Called by `server.control.http.serve_http`: the endpoint stops when these controls close."""
        self._http = endpoint
        self.http_port = port

    async def close(self) -> None:
        self.faults.clear()
        self.faults.known.clear()
        self.faults.max_versions.clear()
        self.faults.record(False)
        if self._http is not None:
            await self._http.stop()
            self._http = None
