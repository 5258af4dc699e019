"""The test controls as JSON over HTTP/1.1, for suites in Java, Go, JavaScript and compose stacks.

Opt-in (`--control-port`), loopback by default, no authentication: a test fixture, never a production port.
One request per connection (`Connection: close`), bodies are JSON. Routes (docs/testing.md has curl examples):

    GET    /v1/clock                                  {"now_ms", "virtual"}
    POST   /v1/clock/advance            {"ms"}        {"now_ms"}
    GET    /v1/groups                                 {"groups": [...]}
    GET    /v1/groups/{g}                             a group (state, generation, leader, members)
    GET    /v1/groups/{g}/wait?state=&members=&generation=&timeout_ms=   the group, or 408
    POST   /v1/groups/{g}/members/{m}/expire          {}
    POST   /v1/groups/{g}/rebalance     {"reason"}    the group (PreparingRebalance), 404 or 409
    POST   /v1/faults                   {"apis", "error", "count", "delay_ms", "disconnect", "group",
                                         "client_id", "for_ms", "hold", "versions",
                                         "drop_response"}   the fault with its id
    GET    /v1/faults                                 {"faults": [...]}
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
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, unquote, urlsplit

import structlog

if TYPE_CHECKING:
    from groupcoord.server.control.control import Control
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


class HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class ControlHttp:
    def __init__(self, control: Control) -> None:
        self.control = control
        self._server: asyncio.base_events.Server | None = None

    async def start(self, host: str, port: int) -> int:
        self._server = await asyncio.start_server(self._serve, host, port, reuse_address=True)
        return self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        status, payload = 500, {"error": "internal error"}
        try:
            method, target, body = await asyncio.wait_for(_read_request(reader), 30)
            parts = urlsplit(target)
            path = [unquote(p) for p in parts.path.strip("/").split("/") if p]
            query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
            status, payload = 200, await self.route(method, path, query, body)
        except HttpError as exc:
            status, payload = exc.status, {"error": str(exc)}
        except (ValueError, KeyError, TypeError) as exc:
            status, payload = 400, {"error": str(exc)}
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
            f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n"
        )
        try:
            writer.write(head.encode() + data)
            await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    async def route(self, method: str, path: list[str], query: dict[str, str], body: dict) -> dict:
        c = self.control
        match (method, path):
            case ("GET", ["v1", "clock"]):
                return {"now_ms": c.now_ms(), "virtual": c.virtual}
            case ("POST", ["v1", "clock", "advance"]):
                if not c.virtual:
                    raise HttpError(400, "the server runs on the wall clock; start it with --virtual-clock")
                return {"now_ms": await c.advance(int(body["ms"]))}
            case ("GET", ["v1", "groups"]):
                return {"groups": sorted(c.group_ids())}
            case ("GET", ["v1", "groups", group]):
                return c.describe(group).as_json()
            case ("GET", ["v1", "groups", group, "wait"]):
                view = await c.wait_group(
                    group,
                    state=query.get("state") or None,
                    members=int(query["members"]) if "members" in query else None,
                    generation=int(query["generation"]) if "generation" in query else None,
                    timeout=int(query.get("timeout_ms", "10000")) / 1000,
                )
                return view.as_json()
            case ("POST", ["v1", "groups", group, "members", member, "expire"]):
                try:
                    await c.expire_member(group, member)
                except KeyError as exc:
                    raise HttpError(404, exc.args[0]) from None
                return {}
            case ("POST", ["v1", "groups", group, "rebalance"]):
                try:
                    view = await c.force_rebalance(group, str(body.get("reason") or "forced"))
                except KeyError as exc:
                    raise HttpError(404, exc.args[0]) from None
                except ValueError as exc:
                    raise HttpError(409, str(exc)) from None
                return view.as_json()
            case ("POST", ["v1", "faults"]):
                apis = body.get("apis", body.get("api", ()))
                fault = c.fault(
                    *([apis] if isinstance(apis, str | int) else apis),
                    error=body.get("error"),
                    count=body.get("count", 1),
                    delay_ms=int(body.get("delay_ms", 0)),
                    disconnect=bool(body.get("disconnect", False)),
                    group=body.get("group"),
                    client_id=body.get("client_id"),
                    for_ms=body.get("for_ms"),
                    hold=bool(body.get("hold", False)),
                    versions=tuple(int(v) for v in body.get("versions", ())),
                    drop_response=bool(body.get("drop_response", False)),
                )
                return fault.as_json()
            case ("GET", ["v1", "faults"]):
                return {"faults": [f.as_json() for f in c.faults.faults]}
            case ("DELETE", ["v1", "faults"]):
                c.clear_faults()
                return {}
            case ("DELETE", ["v1", "faults", fid]):
                fault = self._fault(fid)
                fault.remove()
                return fault.as_json()
            case ("POST", ["v1", "faults", fid, "release"]):
                fault = self._fault(fid)
                return {"released": fault.release(), "fault": fault.as_json()}
            case ("GET", ["v1", "versions"]):
                return {"max_versions": c.max_versions()}
            case ("POST", ["v1", "versions"]):
                cap = body.get("max_version")
                c.max_version(body["api"], int(cap) if cap is not None else None)
                return {"max_versions": c.max_versions()}
            case ("DELETE", ["v1", "versions"]):
                for name in c.max_versions():
                    c.max_version(name, None)
                return {"max_versions": {}}
            case ("POST", ["v1", "coordinator", "unavailable"]):
                fault = c.coordinator_unavailable(
                    int(body["for_ms"]), body.get("error", "COORDINATOR_NOT_AVAILABLE"), body.get("group")
                )
                return fault.as_json()
            case ("POST", ["v1", "recording"]):
                c.record(bool(body.get("on", True)))
                return {"recording": c.faults.recording}
            case ("GET", ["v1", "requests"]):
                return {"requests": [r.as_json() for r in c.recorded(query.get("api"), query.get("group"))]}
            case ("DELETE", ["v1", "requests"]):
                c.clear_recorded()
                return {}
        raise HttpError(404, f"no route {method} /{'/'.join(path)}")

    def _fault(self, fid: str) -> Fault:
        for fault in self.control.faults.faults:
            if str(fault.id) == fid:
                return fault
        raise HttpError(404, f"no fault {fid}")


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, str, dict]:
    line = (await reader.readline()).decode("latin-1").strip()
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
