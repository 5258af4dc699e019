"""The test controls as JSON over HTTP/1.1, for suites in Java, Go, JavaScript and compose stacks.

Opt-in (`--control-port`), loopback by default, no authentication: a test fixture, never a production port.
One request per connection (`Connection: close`), bodies are JSON. Path segments ({g}, {m}) are
percent-encoded UTF-8, so any group id reaches its group. Unknown body or query fields are refused (400,
naming the field), a known path with another method gets 405, a value of the wrong JSON type a 400 that says
what was expected. Routes (docs/testing.md has curl examples):

    GET    /v1/clock                                  {"now_ms", "virtual"}
    POST   /v1/clock/advance            {"ms"}        {"now_ms"}
    GET    /v1/groups                                 {"groups": [...]}
    GET    /v1/groups/{g}                             a group (state, generation, leader, members)
    GET    /v1/groups/{g}/wait?state=&members=&generation=&timeout_ms=   the group, or 408
    POST   /v1/groups/{g}/members/{m}/expire          {}
    POST   /v1/groups/{g}/rebalance     {"reason"}    the group (PreparingRebalance), 404 or 409
    POST   /v1/groups/{g}/events                      {"id"}: subscribe to the group's journal events
    GET    /v1/events/{id}?timeout_ms=                {"events": [...]} queued since; waits for one
    DELETE /v1/events/{id}                            unsubscribe
    POST   /v1/faults                   {"apis", "error", "count", "delay_ms", "disconnect", "group",
                                         "client_id", "for_ms", "hold", "versions",
                                         "drop_response"}   the fault with its id
    GET    /v1/faults                                 {"faults": [...]} (those in force)
    GET    /v1/faults/{id}                            one fault, also after it is used up ("fired")
    POST   /v1/faults/{id}/release                    lets the requests a hold fault parked go on
    DELETE /v1/faults  |  /v1/faults/{id}
    GET    /v1/versions                               {"max_versions": {"JOIN_GROUP": 2, ...}}
    POST   /v1/versions                 {"api", "max_version"}   cap one API (max_version null: lift it)
    DELETE /v1/versions                               lift every cap
    POST   /v1/coordinator/unavailable  {"for_ms", "error", "group"}   the fault
    POST   /v1/recording                {"on"}
    GET    /v1/requests?api=&group=                   {"requests": [...]}
    DELETE /v1/requests
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import structlog

from groupcoord.server.control.faults import FaultSpec
from groupcoord.server.control.http_values import (
    HttpError,
    check_fields,
    flag,
    name_or_code,
    names_or_codes,
    query_whole,
    split_target,
    text,
    whole,
    wholes,
)

if TYPE_CHECKING:
    from groupcoord.server.control.control import Control, EventStream
    from groupcoord.server.control.faults import Fault

log = structlog.get_logger("groupcoord.control")

_MAX_BODY = 1 << 20
_REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    409: "Conflict",
}
_LONG_POLL_MAX_MS = 60_000

# Every route: (method, path with "*" for one free segment, accepted body fields, accepted query fields, the
# `ControlHttp` method that serves it with the path's free segments). A path that matches with another method
# is a 405; a field outside these is a 400 naming it.
_FAULT_FIELDS = frozenset(FaultSpec.__annotations__) | {"apis", "api"}
_ROUTES: tuple[tuple[str, tuple[str, ...], frozenset[str], frozenset[str], str], ...] = tuple(
    (method, tuple(path.strip("/").split("/")), frozenset(body), frozenset(query), serve)
    for method, path, body, query, serve in (
        ("GET", "/v1/clock", (), (), "get_clock"),
        ("POST", "/v1/clock/advance", ("ms",), (), "advance_clock"),
        ("GET", "/v1/groups", (), (), "list_groups"),
        ("GET", "/v1/groups/*", (), (), "describe_group"),
        ("GET", "/v1/groups/*/wait", (), ("state", "members", "generation", "timeout_ms"), "wait_group"),
        ("POST", "/v1/groups/*/members/*/expire", (), (), "expire_member"),
        ("POST", "/v1/groups/*/rebalance", ("reason",), (), "force_rebalance"),
        ("POST", "/v1/groups/*/events", (), (), "subscribe_events"),
        ("GET", "/v1/events/*", (), ("timeout_ms",), "poll_events"),
        ("DELETE", "/v1/events/*", (), (), "unsubscribe_events"),
        ("POST", "/v1/faults", _FAULT_FIELDS, (), "add_fault"),
        ("GET", "/v1/faults", (), (), "list_faults"),
        ("DELETE", "/v1/faults", (), (), "clear_faults"),
        ("GET", "/v1/faults/*", (), (), "get_fault"),
        ("DELETE", "/v1/faults/*", (), (), "remove_fault"),
        ("POST", "/v1/faults/*/release", (), (), "release_fault"),
        ("GET", "/v1/versions", (), (), "get_versions"),
        ("POST", "/v1/versions", ("api", "max_version"), (), "cap_version"),
        ("DELETE", "/v1/versions", (), (), "clear_versions"),
        ("POST", "/v1/coordinator/unavailable", ("for_ms", "error", "group"), (), "coordinator_unavailable"),
        ("POST", "/v1/recording", ("on",), (), "record"),
        ("GET", "/v1/requests", (), ("api", "group"), "list_requests"),
        ("DELETE", "/v1/requests", (), (), "clear_requests"),
    )
)


def _matches(pattern: tuple[str, ...], path: list[str]) -> bool:
    return len(pattern) == len(path) and all(p in ("*", s) for p, s in zip(pattern, path, strict=True))


def check_request(method: str, path: list[str], query: dict[str, str], body: dict) -> None:
    """404 for no such path, 405 (with the methods it takes) for a wrong method, 400 for an unknown field."""
    routes = [r for r in _ROUTES if _matches(r[1], path)]
    if not routes:
        raise HttpError(404, f"no route {method} /{'/'.join(path)}")
    route = next((r for r in routes if r[0] == method), None)
    if route is None:
        allow = tuple(sorted({r[0] for r in routes}))
        raise HttpError(
            405, f"{method} is not allowed on /{'/'.join(path)} (allowed: {', '.join(allow)})", allow
        )
    check_fields("body", body, route[2])
    check_fields("query", query, route[3])


class ControlHttp:
    def __init__(self, control: Control) -> None:
        self.control = control
        self._server: asyncio.base_events.Server | None = None
        self._streams: dict[int, EventStream] = {}  # event subscriptions by id (POST /v1/groups/{g}/events)
        self._stream_ids = 0

    async def start(self, host: str, port: int) -> int:
        self._server = await asyncio.start_server(self._serve, host, port, reuse_address=True)
        return self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        for stream in self._streams.values():
            stream.close()
        self._streams.clear()
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        status, payload, allow = 500, {"error": "internal error"}, ()
        try:
            method, target, body = await asyncio.wait_for(_read_request(reader), 30)
            path, query = split_target(target)
            check_request(method, path, query, body)
            status, payload = 200, await self.route(method, path, query, body)
        except HttpError as exc:
            status, payload, allow = exc.status, {"error": str(exc)}, exc.allow
        except (ValueError, KeyError, TypeError) as exc:
            # str(KeyError("x")) is "'x'": answer with the text it was raised with
            message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
            status, payload = 400, {"error": str(message)}
        except TimeoutError as exc:
            status, payload = 408, {"error": str(exc) or "timed out"}
        except (ConnectionError, asyncio.IncompleteReadError):
            writer.close()
            return
        except Exception:
            log.exception("control request failed")
        data = json.dumps(payload).encode()
        head = (
            f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\nConnection: close\r\n"
        )
        head += f"Allow: {', '.join(allow)}\r\n" if allow else ""
        try:
            writer.write(head.encode() + b"\r\n" + data)
            await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    async def route(self, method: str, path: list[str], query: dict[str, str], body: dict) -> dict:
        """Serve one request `check_request` has let through (its method, path and field names are known):
        the route table's method for it, with the path's free segments."""
        for m, pattern, _, _, serve in _ROUTES:
            if m == method and _matches(pattern, path):
                args = [s for p, s in zip(pattern, path, strict=True) if p == "*"]
                handler: Callable[..., Awaitable[dict]] = getattr(self, f"_{serve}")
                return await handler(*args, query=query, body=body)
        raise HttpError(404, f"no route {method} /{'/'.join(path)}")

    # -- the routes (each: the path's free segments, then the query and body as keywords)

    async def _get_clock(self, *, query: dict[str, str], body: dict) -> dict:
        return {"now_ms": self.control.now_ms(), "virtual": self.control.virtual}

    async def _advance_clock(self, *, query: dict[str, str], body: dict) -> dict:
        if not self.control.virtual:
            raise HttpError(400, "the server runs on the wall clock; start it with --virtual-clock")
        ms = whole(body, "ms", minimum=0)
        assert ms is not None
        return {"now_ms": await self.control.advance(ms)}

    async def _list_groups(self, *, query: dict[str, str], body: dict) -> dict:
        return {"groups": sorted(self.control.group_ids())}

    async def _describe_group(self, group: str, *, query: dict[str, str], body: dict) -> dict:
        return self.control.describe(group).as_json()

    async def _wait_group(self, group: str, *, query: dict[str, str], body: dict) -> dict:
        timeout_ms = query_whole(query, "timeout_ms", 10_000)
        assert timeout_ms is not None
        view = await self.control.wait_group(
            group,
            state=query.get("state") or None,
            members=query_whole(query, "members"),
            generation=query_whole(query, "generation"),
            timeout=timeout_ms / 1000,
        )
        return view.as_json()

    async def _expire_member(self, group: str, member: str, *, query: dict[str, str], body: dict) -> dict:
        try:
            await self.control.expire_member(group, member)
        except KeyError as exc:
            raise HttpError(404, exc.args[0]) from None
        return {}

    async def _force_rebalance(self, group: str, *, query: dict[str, str], body: dict) -> dict:
        reason = text(body, "reason") or "forced"
        try:
            view = await self.control.force_rebalance(group, reason)
        except KeyError as exc:
            raise HttpError(404, exc.args[0]) from None
        except ValueError as exc:
            raise HttpError(409, str(exc)) from None
        return view.as_json()

    async def _subscribe_events(self, group: str, *, query: dict[str, str], body: dict) -> dict:
        self._stream_ids += 1
        self._streams[self._stream_ids] = self.control.events(group)
        return {"id": self._stream_ids, "group": group}

    async def _poll_events(self, sid: str, *, query: dict[str, str], body: dict) -> dict:
        stream = self._stream(sid)
        wait_ms = min(query_whole(query, "timeout_ms", 0) or 0, _LONG_POLL_MAX_MS)
        if stream.queue.empty() and wait_ms > 0:
            try:
                first = await asyncio.wait_for(stream.queue.get(), wait_ms / 1000)
            except TimeoutError:
                return {"events": []}
            return {"events": [first, *stream.drain()]}
        return {"events": stream.drain()}

    async def _unsubscribe_events(self, sid: str, *, query: dict[str, str], body: dict) -> dict:
        self._stream(sid).close()
        del self._streams[int(sid)]
        return {}

    async def _add_fault(self, *, query: dict[str, str], body: dict) -> dict:
        fault = self.control.fault(
            *names_or_codes(body, "apis" if "apis" in body else "api"),
            error=name_or_code(body, "error"),
            count=whole(body, "count", default=1, minimum=1, nullable=True),
            delay_ms=whole(body, "delay_ms", default=0, minimum=0) or 0,
            disconnect=flag(body, "disconnect"),
            group=text(body, "group"),
            client_id=text(body, "client_id"),
            for_ms=whole(body, "for_ms", default=None, minimum=0, nullable=True),
            hold=flag(body, "hold"),
            versions=wholes(body, "versions"),
            drop_response=flag(body, "drop_response"),
        )
        return fault.as_json()

    async def _list_faults(self, *, query: dict[str, str], body: dict) -> dict:
        return {"faults": [f.as_json() for f in self.control.faults.faults]}

    async def _clear_faults(self, *, query: dict[str, str], body: dict) -> dict:
        self.control.clear_faults()
        return {}

    async def _get_fault(self, fid: str, *, query: dict[str, str], body: dict) -> dict:
        return self._fault(fid).as_json()

    async def _remove_fault(self, fid: str, *, query: dict[str, str], body: dict) -> dict:
        fault = self._fault(fid)
        fault.remove()
        return fault.as_json()

    async def _release_fault(self, fid: str, *, query: dict[str, str], body: dict) -> dict:
        fault = self._fault(fid)
        return {"released": fault.release(), "fault": fault.as_json()}

    async def _get_versions(self, *, query: dict[str, str], body: dict) -> dict:
        return {"max_versions": self.control.max_versions()}

    async def _cap_version(self, *, query: dict[str, str], body: dict) -> dict:
        api = name_or_code(body, "api")
        if api is None:
            raise HttpError(400, "field 'api' is required")
        self.control.max_version(api, whole(body, "max_version", default=None, minimum=0, nullable=True))
        return {"max_versions": self.control.max_versions()}

    async def _clear_versions(self, *, query: dict[str, str], body: dict) -> dict:
        for name in self.control.max_versions():
            self.control.max_version(name, None)
        return {"max_versions": {}}

    async def _coordinator_unavailable(self, *, query: dict[str, str], body: dict) -> dict:
        for_ms = whole(body, "for_ms", minimum=0)
        assert for_ms is not None
        error = name_or_code(body, "error", "COORDINATOR_NOT_AVAILABLE")
        fault = self.control.coordinator_unavailable(
            for_ms, error or "COORDINATOR_NOT_AVAILABLE", text(body, "group")
        )
        return fault.as_json()

    async def _record(self, *, query: dict[str, str], body: dict) -> dict:
        self.control.record(flag(body, "on", True))
        return {"recording": self.control.faults.recording}

    async def _list_requests(self, *, query: dict[str, str], body: dict) -> dict:
        recorded = self.control.recorded(query.get("api"), query.get("group"))
        return {"requests": [r.as_json() for r in recorded]}

    async def _clear_requests(self, *, query: dict[str, str], body: dict) -> dict:
        self.control.clear_recorded()
        return {}

    def _fault(self, fid: str) -> Fault:
        """A fault by id, in force or not: one used up (or removed) still answers with its `fired` count."""
        fault = self.control.faults.known.get(int(fid)) if fid.isascii() and fid.isdigit() else None
        if fault is None:
            raise HttpError(404, f"no fault {fid}")
        return fault

    def _stream(self, sid: str) -> EventStream:
        stream = self._streams.get(int(sid)) if sid.isascii() and sid.isdigit() else None
        if stream is None:
            raise HttpError(404, f"no event subscription {sid}")
        return stream


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, str, dict]:
    try:
        line = (await reader.readline()).decode("utf-8").strip()  # escapes are ASCII; raw bytes are UTF-8
    except UnicodeDecodeError:
        raise HttpError(400, "the request line is not UTF-8") from None
    try:
        method, target, _ = line.split(" ", 2)
    except ValueError:
        raise HttpError(400, f"bad request line {line!r}") from None
    length = 0
    while True:
        header = (await reader.readline()).decode("latin-1").strip()
        if not header:
            break
        name, _, value = header.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    if length > _MAX_BODY:
        raise HttpError(400, "body too large")
    raw = await reader.readexactly(length) if length else b""
    try:
        body = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as exc:
        raise HttpError(400, f"body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise HttpError(400, "body must be a JSON object")
    return method.upper(), target, body


async def serve_http(control: Control, host: str, port: int) -> int:
    """Serve `control` as JSON over HTTP on host:port (0 picks a free port); returns the bound port."""
    endpoint = ControlHttp(control)
    bound = await endpoint.start(host, port)
    control.attach_http(endpoint, bound)
    log.info("control endpoint listening", host=host, port=bound)
    return bound
