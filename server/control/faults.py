"""Fault injection and request recording, shaped like franz-go kfake's `Fault` and librdkafka's mock errors.

The dispatcher calls `FaultInjector.intercept` for every decoded request while the injector is installed
(`Dispatcher.faults`; None in production, so the hot path pays one attribute check). A matching fault
answers in the request's place: an error code in the response Kafka would send for it, a delay, a closed
connection, or no answer at all (`drop_response`: handled, but the response is never sent). `max_version`
caps make the coordinator look like an older broker: ApiVersions advertises the lower maximum and a request
above it is refused as the dispatcher refuses any unsupported version. A request no fault takes goes through the ordinary dispatcher; while recording, its decoded
request and response are kept for assertions.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import itertools
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, TypedDict

import structlog

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.codec import decode_response, encode_response
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages import RESPONSES
from groupcoord.protocol.messages.api_versions import ApiVersionsResponse
from groupcoord.protocol.messages.describe_groups import DescribedGroup, DescribeGroupsResponse
from groupcoord.protocol.messages.find_coordinator import Coordinator, FindCoordinatorResponse
from groupcoord.protocol.messages.offset_commit import (
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from groupcoord.protocol.messages.offset_fetch import (
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponseTopic,
)
from groupcoord.server.apis import catalog
from groupcoord.server.net.dispatch import PASS, Pending

if TYPE_CHECKING:
    from groupcoord.server.net.dispatch import Dispatcher, RequestContext
    from groupcoord.server.net.network import Connection

log = structlog.get_logger("groupcoord.control")

Reply = bytes | Pending | None
_KNOWN_MAX = 10_000


class FaultHandle(Protocol):
    """What a test holds for an injected fault, in-process (`Fault`) or over HTTP
    (`groupcoord.testing.remote.RemoteFault`): the same names, so a test reads the same either way."""

    @property
    def id(self) -> int: ...

    @property
    def fired(self) -> int: ...

    @property
    def holding(self) -> int: ...

    @property
    def active(self) -> bool: ...

    def release(self) -> int: ...

    def remove(self) -> None: ...

    def as_json(self) -> dict: ...


class FaultSpec(TypedDict, total=False):
    """What a fault does and which requests it takes, as keyword arguments of `Control.fault` and the test
    plugin's `fault` (one declaration for every facade; `FaultInjector.add` holds the defaults and the checks)."""

    error: str | int | None
    count: int | None
    delay_ms: int
    disconnect: bool
    group: str | None
    client_id: str | None
    for_ms: int | None
    hold: bool
    versions: tuple[int, ...]
    drop_response: bool


#: the APIs a client sends to its group coordinator (declared `coordinator=True` beside their handlers): what
#: "the coordinator is unavailable" applies to
COORDINATOR_APIS = catalog.coordinator_apis()


def api_key_of(name: str | int) -> int:
    """`"JoinGroup"`, `"JOIN_GROUP"`, `"join_group"` or `11` -> 11."""
    if isinstance(name, int) or (isinstance(name, str) and name.isdigit()):
        return int(ApiKey(int(name)))
    flat = name.replace("_", "").replace("-", "").lower()
    for key in ApiKey:
        if key.name.replace("_", "").lower() == flat:
            return int(key)
    raise ValueError(f"unknown API {name!r}")


def error_code_of(name: str | int) -> int:
    """`"NOT_COORDINATOR"` or `16` -> 16."""
    if isinstance(name, int) or (isinstance(name, str) and name.lstrip("-").isdigit()):
        return int(ErrorCode(int(name)))
    try:
        return int(ErrorCode[name.upper()])
    except KeyError:
        raise ValueError(f"unknown error code {name!r}") from None


@dataclass(eq=False)
class Fault:
    """One injected fault. `count` None means every matching request until removed or `until` passes.

    `fired` counts the requests it took; `remove()` takes it out early.
    """

    apis: frozenset[int]  # empty: every API
    error: int | None = None
    count: int | None = 1
    delay_ms: int = 0
    disconnect: bool = False
    group: str | None = None
    client_id: str | None = None
    until: float | None = None  # time.monotonic() after which it no longer applies
    hold: bool = False  # park each taken request until `release()`
    versions: frozenset[int] = frozenset()  # empty: every version
    drop_response: bool = False  # handle the request but never send its answer
    id: int = 0
    fired: int = 0
    removed: bool = False
    _owner: FaultInjector | None = field(default=None, repr=False)
    _held: list[Callable[[], None]] = field(default_factory=list, repr=False)

    def matches(self, api_key: int, version: int, client_id: str, groups: tuple[str, ...]) -> bool:
        if self.apis and api_key not in self.apis:
            return False
        if self.versions and version not in self.versions:
            return False
        if self.client_id is not None and client_id != self.client_id:
            return False
        return self.group is None or self.group in groups

    @property
    def active(self) -> bool:
        if self.removed or (self.count is not None and self.fired >= self.count):
            return False
        return self.until is None or time.monotonic() < self.until

    def remove(self) -> None:
        """Take the fault out; requests it holds are released."""
        self.removed = True
        if self._owner is not None:
            self._owner.forget(self)
        self.release()

    def park(self, go: Callable[[], None]) -> None:
        self._held.append(go)

    @property
    def holding(self) -> int:
        return len(self._held)

    def release(self) -> int:
        """Let the requests this fault holds go on (to their handler, or to the injected error)."""
        held, self._held = self._held, []
        for go in held:
            go()
        return len(held)

    def as_json(self) -> dict:
        return {
            "id": self.id,
            "apis": sorted(ApiKey(a).name for a in self.apis),
            "error": ErrorCode(self.error).name if self.error is not None else None,
            "count": self.count,
            "delay_ms": self.delay_ms,
            "disconnect": self.disconnect,
            "group": self.group,
            "client_id": self.client_id,
            "hold": self.hold,
            "versions": sorted(self.versions),
            "drop_response": self.drop_response,
            "held": self.holding,
            "fired": self.fired,
            "active": self.active,
        }


@dataclass(frozen=True)
class Recorded:
    """One request as the coordinator saw it, with the response it sent (None: no answer, or closed)."""

    at_ms: int
    api_key: int
    api: str
    version: int
    client_id: str
    groups: tuple[str, ...]
    request: object
    response: object | None
    injected: bool

    def as_json(self) -> dict:
        return {
            "at_ms": self.at_ms,
            "api_key": self.api_key,
            "api": self.api,
            "version": self.version,
            "client_id": self.client_id,
            "groups": list(self.groups),
            "request": _jsonable(self.request),
            "response": _jsonable(self.response),
            "injected": self.injected,
        }


def _jsonable(value: object) -> object:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [_jsonable(v) for v in value]
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, uuid.UUID):  # topic ids (ConsumerGroupHeartbeat, OffsetCommit v10, ...)
        return str(value)
    return value


def request_groups(request: object) -> tuple[str, ...]:
    """The group ids a request names (JoinGroup's group_id, OffsetFetch v8's groups, FindCoordinator's key...)."""
    gid = getattr(request, "group_id", None)
    if isinstance(gid, str) and gid:
        return (gid,)
    out: list[str] = []
    key = getattr(request, "key", None)
    if isinstance(key, str) and key:
        out.append(key)
    out.extend(getattr(request, "coordinator_keys", ()) or ())
    for g in getattr(request, "groups", ()) or ():
        out.append(g if isinstance(g, str) else getattr(g, "group_id", ""))
    out.extend(getattr(request, "groups_names", ()) or ())
    return tuple(out)


def error_response(api_key: int, version: int, request: object, code: int) -> object | None:
    """The response Kafka sends when a whole request fails with `code`; None where the API has no error code
    to carry it at this version (the fault then closes the connection, as a transport error)."""
    if api_key == ApiKey.OFFSET_COMMIT:
        return OffsetCommitResponse(
            topics=tuple(
                OffsetCommitResponseTopic(
                    name=t.name,
                    topic_id=t.topic_id,
                    partitions=tuple(
                        OffsetCommitResponsePartition(p.partition_index, code) for p in t.partitions
                    ),
                )
                for t in request.topics  # type: ignore[attr-defined]
            )
        )
    if api_key == ApiKey.OFFSET_FETCH:
        if version >= 8:
            return OffsetFetchResponse(
                groups=tuple(OffsetFetchResponseGroup(g.group_id, (), code) for g in request.groups)  # type: ignore[attr-defined]
            )
        if version >= 2:
            return OffsetFetchResponse(error_code=code)
        return OffsetFetchResponse(
            topics=tuple(
                OffsetFetchResponseTopic(
                    t.name,
                    tuple(OffsetFetchResponsePartition(p, -1, -1, "", code) for p in t.partition_indexes),
                )
                for t in request.topics or ()  # type: ignore[attr-defined]
            )
        )
    if api_key == ApiKey.FIND_COORDINATOR and version >= 4:
        return FindCoordinatorResponse(
            coordinators=tuple(
                Coordinator(k, -1, "", -1, code, ErrorCode(code).name)
                for k in request.coordinator_keys  # type: ignore[attr-defined]
            )
        )
    if api_key == ApiKey.DESCRIBE_GROUPS:
        return DescribeGroupsResponse(
            groups=tuple(DescribedGroup(error_code=code, group_id=g) for g in request.groups)  # type: ignore[attr-defined]
        )
    cls = RESPONSES[api_key]
    spec = next((s for s in cls.__kafka_fields__ if s.name == "error_code"), None)
    if spec is None or version not in spec.versions:
        return None
    return cls(error_code=code)


class FaultInjector:
    """The faults in force and the request recording; installed on the dispatcher while either is in use."""

    def __init__(self, dispatcher: Dispatcher, loop: asyncio.AbstractEventLoop) -> None:
        self.dispatcher = dispatcher
        self.loop = loop
        self.faults: list[Fault] = []
        self.recording = False
        self.recorded: list[Recorded] = []
        self._ids = itertools.count(1)
        # every fault by id, also once used up or removed, so a test can still read its `fired` count
        # (`faults` holds only those in force); the oldest are forgotten past _KNOWN_MAX
        self.known: dict[int, Fault] = {}
        self._bypass: bytes | None = None
        self.max_versions: dict[int, int] = {}  # api key -> the highest version we pretend to speak

    def __bool__(self) -> bool:
        return bool(self.faults) or self.recording or bool(self.max_versions)

    def add(
        self,
        apis: tuple[str | int, ...] = (),
        *,
        error: str | int | None = None,
        count: int | None = 1,
        delay_ms: int = 0,
        disconnect: bool = False,
        group: str | None = None,
        client_id: str | None = None,
        for_ms: int | None = None,
        hold: bool = False,
        versions: tuple[int, ...] = (),
        drop_response: bool = False,
    ) -> Fault:
        if error is None and not disconnect and delay_ms <= 0 and not hold and not drop_response:
            raise ValueError("a fault needs an error, a delay, hold, disconnect or drop_response")
        if drop_response and (error is not None or disconnect):
            raise ValueError("drop_response sends no answer: it cannot also send an error or disconnect")
        if any(v < 0 for v in versions):
            raise ValueError("versions must not be negative")
        if count is not None and count < 1:
            raise ValueError("count must be at least 1 (or None for every matching request)")
        if delay_ms < 0:
            raise ValueError("delay_ms must not be negative")
        fault = Fault(
            apis=frozenset(api_key_of(a) for a in apis),
            error=error_code_of(error) if error is not None else None,
            count=count,
            delay_ms=delay_ms,
            disconnect=disconnect,
            group=group,
            client_id=client_id,
            until=time.monotonic() + for_ms / 1000 if for_ms is not None else None,
            hold=hold,
            versions=frozenset(int(v) for v in versions),
            drop_response=drop_response,
            id=next(self._ids),
            _owner=self,
        )
        self.faults.append(fault)
        self.known[fault.id] = fault
        while len(self.known) > _KNOWN_MAX:
            del self.known[next(iter(self.known))]
        self._install()
        log.info("fault added", **fault.as_json())
        return fault

    def forget(self, fault: Fault) -> None:
        if fault in self.faults:
            self.faults.remove(fault)

    def clear(self) -> None:
        faults, self.faults = self.faults, []
        for fault in faults:
            fault.remove()

    def record(self, on: bool = True) -> None:
        self.recording = on
        self._install()

    def cap_version(self, api: str | int, max_version: int | None) -> None:
        """Pretend to speak `api` only up to `max_version` (None: lift the cap)."""
        key = api_key_of(api)
        if max_version is None:
            self.max_versions.pop(key, None)
            return
        lo, hi = self.dispatcher.ranges[key]
        if not lo <= max_version <= hi:
            raise ValueError(f"max_version of {ApiKey(key).name} must be within {lo}..{hi}")
        self.max_versions[key] = max_version
        self._install()
        log.info("version capped", api=ApiKey(key).name, max_version=max_version)

    def _install(self) -> None:
        self.dispatcher.faults = self

    # -- the dispatcher hook

    def intercept(self, ctx: RequestContext, request: object, frame: bytes) -> Reply | object:
        if frame is self._bypass:
            return PASS
        groups = request_groups(request)
        capped = self._capped(ctx, frame)
        if capped is not PASS:
            return self._record(ctx, request, groups, capped, injected=True) if self.recording else capped
        fault = self._take(ctx.api_key, ctx.version, ctx.client_id, groups)
        if fault is None:
            if not self.recording:
                return PASS
            reply = self._through(ctx.conn, frame)
            return self._record(ctx, request, groups, reply, injected=False)
        reply = self._inject(fault, ctx, request, frame)
        if self.recording:
            return self._record(ctx, request, groups, reply, injected=True)
        return reply

    def _capped(self, ctx: RequestContext, frame: bytes) -> Reply | object:
        """Apply the `max_version` caps: refuse a request above its API's cap as an unsupported version, and
        lower the maxima an ApiVersions answer advertises."""
        if not self.max_versions:
            return PASS
        cap = self.max_versions.get(ctx.api_key)
        if cap is not None and ctx.version > cap:
            lo = self.dispatcher.ranges[ctx.api_key][0]
            return self.dispatcher.unsupported(
                ctx.conn, ctx.api_key, ctx.version, ctx.correlation_id, lo, cap
            )
        if ctx.api_key != ApiKey.API_VERSIONS:
            return PASS
        reply = self._through(ctx.conn, frame)
        if not isinstance(reply, bytes):
            return reply
        correlation_id, body = decode_response(reply[4:], ctx.api_key, ctx.version)
        assert isinstance(body, ApiVersionsResponse)
        table = tuple(
            dataclasses.replace(a, max_version=min(a.max_version, self.max_versions[a.api_key]))
            if a.api_key in self.max_versions
            else a
            for a in body.api_keys
        )
        return encode_response(
            correlation_id, ctx.api_key, ctx.version, dataclasses.replace(body, api_keys=table)
        )

    def _take(self, api_key: int, version: int, client_id: str, groups: tuple[str, ...]) -> Fault | None:
        for fault in self.faults:
            if fault.active and fault.matches(api_key, version, client_id, groups):
                fault.fired += 1
                return fault
        if self.faults:
            self.faults = [f for f in self.faults if f.active or f.holding]
        return None

    def _through(self, conn: Connection, frame: bytes) -> Reply:
        """Dispatch a frame past the faults (the request then meets its real handler)."""
        self._bypass = frame
        try:
            return self.dispatcher.dispatch(conn, frame)
        finally:
            self._bypass = None

    def _inject(self, fault: Fault, ctx: RequestContext, request: object, frame: bytes) -> Reply:
        conn = ctx.conn
        answer: Callable[[], Reply]
        if fault.disconnect:

            def answer() -> Reply:
                conn.close(f"fault injection: disconnect on API {ctx.api_key}")
                return None

        elif fault.error is not None:
            body = error_response(ctx.api_key, ctx.version, request, fault.error)

            def answer() -> Reply:
                if body is None:
                    conn.close(f"fault injection: API {ctx.api_key} v{ctx.version} has no error code")
                    return None
                return encode_response(ctx.correlation_id, ctx.api_key, ctx.version, body)

        elif fault.drop_response:

            def answer() -> Reply:
                return _dropped(self._through(conn, frame))

        else:

            def answer() -> Reply:
                return self._through(conn, frame)

        if fault.delay_ms <= 0 and not fault.hold:
            return answer()
        fut = self.loop.create_future()

        def later() -> None:
            if fut.done() or conn.closed:
                return
            try:
                reply = answer()
            except Exception as exc:
                fut.set_exception(exc)
                return
            _resolve(fut, reply)

        if fault.hold:
            delay = fault.delay_ms / 1000
            fault.park(lambda: self.loop.call_later(delay, later))
        else:
            self.loop.call_later(fault.delay_ms / 1000, later)
        return Pending(fut, _identity)

    def _record(
        self, ctx: RequestContext, request: object, groups: tuple[str, ...], reply: Reply, injected: bool
    ) -> Reply:
        api_key, version = ctx.api_key, ctx.version
        at_ms = time.time_ns() // 1_000_000

        def keep(data: bytes | None) -> None:
            response = decode_response(data[4:], api_key, version)[1] if data else None
            self.recorded.append(
                Recorded(
                    at_ms,
                    api_key,
                    ApiKey(api_key).name,
                    version,
                    ctx.client_id,
                    groups,
                    request,
                    response,
                    injected,
                )
            )

        if reply is None or isinstance(reply, bytes):
            keep(reply)
            return reply
        encode = reply.encode

        def encode_and_keep(result: object) -> bytes | None:
            data = encode(result)
            keep(data)
            return data

        return Pending(reply.fut, encode_and_keep)


def _identity(data: bytes | None) -> bytes | None:
    return data


def _dropped(reply: Reply) -> Reply:
    """The request was handled (and a parked one still completes in order), but nothing is sent back."""
    if reply is None or isinstance(reply, bytes):
        return None
    encode = reply.encode

    def discard(result: object) -> None:
        encode(result)  # what the handler's answer would have done (metrics), minus the bytes

    return Pending(reply.fut, discard)


def _resolve(fut: asyncio.Future, reply: Reply) -> None:
    """Settle a delayed answer's future with frame bytes, chaining through a parked request."""
    if reply is None or isinstance(reply, bytes):
        fut.set_result(reply)
        return
    inner = reply

    def done(f: asyncio.Future) -> None:
        if fut.done():
            return
        if f.cancelled():
            fut.cancel()
        elif f.exception() is not None:
            fut.set_exception(f.exception())  # type: ignore[arg-type]
        else:
            try:
                fut.set_result(inner.encode(f.result()))
            except Exception as exc:
                fut.set_exception(exc)

    inner.fut.add_done_callback(done)
