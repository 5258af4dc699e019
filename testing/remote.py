"""A coordinator in a child process, controlled over its HTTP control endpoint.

For blocking clients (kafka-python, confluent-kafka), for a server shared by a whole session, and as the
reference user of the HTTP endpoint that Java, Go and JavaScript suites call the same way.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import deque
from pathlib import Path
from typing import Unpack
from urllib.parse import quote, urlencode

from groupcoord.server.control.faults import FaultSpec
from groupcoord.server.control.views import GroupView, member_from_json
from groupcoord.testing.ports import free_port

ARGS_DEFAULTS: dict[str, object] = {
    "group_initial_rebalance_delay_ms": 0,
    "group_min_session_timeout_ms": 1000,
    "storage": "memory",
}


def _seg(value: str) -> str:
    """One path segment, percent-encoded whole (`/`, `?`, `#`, `%`, spaces, non-ASCII as UTF-8)."""
    return quote(value, safe="")


def _query(**fields: object) -> str:
    pairs = {k: v for k, v in fields.items() if v is not None}
    return "?" + urlencode(pairs) if pairs else ""


class GroupCoordProcess:
    """`groupcoord serve --virtual-clock --control-port` in a child process; its log in `log_path`."""

    def __init__(self, data_dir: Path, virtual_clock: bool = True, **options: object) -> None:
        self.data_dir = Path(data_dir)
        self.host = "127.0.0.1"
        self.port = free_port()
        self.control_port = free_port()
        self.virtual_clock = virtual_clock
        self.options = {**ARGS_DEFAULTS, **options}
        self.log_path = self.data_dir.parent / f"{self.data_dir.name}-groupcoord.log"
        self.proc: subprocess.Popen | None = None

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def control_url(self) -> str:
        return f"http://{self.host}:{self.control_port}"

    def start(self, timeout: float = 60.0) -> GroupCoordProcess:
        cmd = [
            sys.executable,
            "-m",
            "groupcoord.server",
            "serve",
            "--host",
            self.host,
            "--port",
            str(self.port),
        ]
        cmd += ["--data-dir", str(self.data_dir), "--control-port", str(self.control_port)]
        cmd += ["--virtual-clock", "true" if self.virtual_clock else "false"]
        for name, value in self.options.items():
            cmd += [
                "--" + name.replace("_", "-"),
                str(value).lower() if isinstance(value, bool) else str(value),
            ]
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                cmd, stdout=log, stderr=log, env=dict(os.environ, PYTHONUNBUFFERED="1")
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"groupcoord exited with {self.proc.returncode}:\n{self.log()}")
            try:
                self.call("GET", "/v1/clock")
                return self
            except OSError:
                time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"groupcoord did not answer within {timeout}s:\n{self.log()}")

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-20000:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def kill(self) -> None:
        """kill -9: nothing is flushed (durability tests restart with `start()` on the same data_dir)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    # -- the controls, over HTTP

    def call(self, method: str, path: str, body: dict | None = None, timeout: float = 30.0) -> dict:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.control_url + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            try:
                message = json.loads(raw or b"{}").get("error", str(exc))
            except (ValueError, AttributeError):
                message = raw.decode(errors="replace") or str(exc)
            if exc.code == 408:
                raise TimeoutError(message) from None
            raise RuntimeError(f"{method} {path}: {exc.code} {message}") from None

    async def advance(self, ms: int) -> int:
        return await asyncio.to_thread(self.advance_sync, ms)

    def advance_sync(self, ms: int) -> int:
        """`advance` for tests that drive blocking clients (kafka-python, confluent-kafka) from threads."""
        return self.call("POST", "/v1/clock/advance", {"ms": ms})["now_ms"]

    def describe(self, group_id: str) -> GroupView:
        return _view(self.call("GET", f"/v1/groups/{_seg(group_id)}"))

    async def wait_group(
        self,
        group_id: str,
        state: str | None = "Stable",
        members: int | None = None,
        generation: int | None = None,
        timeout: float = 10.0,
    ) -> GroupView:
        return await asyncio.to_thread(self.wait_group_sync, group_id, state, members, generation, timeout)

    def wait_group_sync(
        self,
        group_id: str,
        state: str | None = "Stable",
        members: int | None = None,
        generation: int | None = None,
        timeout: float = 10.0,
    ) -> GroupView:
        query = _query(
            state=state or "", members=members, generation=generation, timeout_ms=int(timeout * 1000)
        )
        path = f"/v1/groups/{_seg(group_id)}/wait{query}"
        return _view(self.call("GET", path, None, timeout + 10))

    def events(self, group_id: str) -> RemoteEventStream:
        """The group's journal events from this call on, as `GroupCoord.events` gives them in-process: an async
        iterator with `drain()` and `close()`; blocking tests use `next_sync(timeout)`."""
        sub = self.call("POST", f"/v1/groups/{_seg(group_id)}/events", {})
        return RemoteEventStream(self, group_id, sub["id"])

    def fault(self, *apis: str | int, **spec: Unpack[FaultSpec]) -> RemoteFault:
        """See `GroupCoord.fault`; the handle reads `fired`, `holding` and `active` from the server."""
        return RemoteFault(self, self.call("POST", "/v1/faults", {"apis": list(apis), **spec}))

    def max_version(self, api: str | int, max_version: int | None) -> dict:
        return self.call("POST", "/v1/versions", {"api": api, "max_version": max_version})

    def coordinator_unavailable(
        self, for_ms: int, error: str | int = "COORDINATOR_NOT_AVAILABLE", group: str | None = None
    ) -> RemoteFault:
        body = {"for_ms": for_ms, "error": error, "group": group}
        return RemoteFault(self, self.call("POST", "/v1/coordinator/unavailable", body))

    def clear_faults(self) -> None:
        self.call("DELETE", "/v1/faults")

    async def expire_member(self, group_id: str, member_id: str) -> None:
        path = f"/v1/groups/{_seg(group_id)}/members/{_seg(member_id)}/expire"
        await asyncio.to_thread(self.call, "POST", path, {})

    async def force_rebalance(self, group_id: str, reason: str = "forced") -> GroupView:
        return await asyncio.to_thread(self.force_rebalance_sync, group_id, reason)

    def force_rebalance_sync(self, group_id: str, reason: str = "forced") -> GroupView:
        """Rebalance a Stable/CompletingRebalance group now (RuntimeError with 404/409 otherwise)."""
        return _view(self.call("POST", f"/v1/groups/{_seg(group_id)}/rebalance", {"reason": reason}))

    def record(self, on: bool = True) -> None:
        self.call("POST", "/v1/recording", {"on": on})

    def recorded(self, api: str | int | None = None, group: str | None = None) -> list[dict]:
        """The recorded requests as JSON (`Recorded.as_json()`: bytes base64, request/response as dicts)."""
        return self.call("GET", "/v1/requests" + _query(api=api, group=group))["requests"]


class RemoteFault:
    """The handle `GroupCoordProcess.fault` returns: the names `Fault` has in-process (`id`, `fired`,
    `holding`, `active`, `release()`, `remove()`, `as_json()`), each read or done over HTTP, so it answers
    from the server's state also after the fault is used up. `fault["fired"]` reads a field of `as_json()`."""

    def __init__(self, coord: GroupCoordProcess, data: dict) -> None:
        self._coord = coord
        self._id: int = data["id"]

    @property
    def id(self) -> int:
        return self._id

    def as_json(self) -> dict:
        return self._coord.call("GET", f"/v1/faults/{self._id}")

    def __getitem__(self, field: str) -> object:
        return self.as_json()[field]

    @property
    def fired(self) -> int:
        return self.as_json()["fired"]

    @property
    def holding(self) -> int:
        return self.as_json()["held"]

    @property
    def active(self) -> bool:
        return self.as_json()["active"]

    def release(self) -> int:
        return self._coord.call("POST", f"/v1/faults/{self._id}/release", {})["released"]

    def remove(self) -> None:
        self._coord.call("DELETE", f"/v1/faults/{self._id}")

    def __repr__(self) -> str:
        return f"RemoteFault(id={self._id})"


class RemoteEventStream:
    """`GroupCoordProcess.events(group)`: the group's events over HTTP (a subscription the server keeps and
    long-polls), shaped like the in-process `EventStream`: `async for`, `drain()`, `close()`, `async with`."""

    _POLL_MS = (
        10_000  # one long poll; `__anext__` polls again until an event comes, as the in-process one waits
    )

    def __init__(self, coord: GroupCoordProcess, group_id: str, sub_id: int) -> None:
        self._coord = coord
        self.group_id = group_id
        self.id = sub_id
        self._buffer: deque[dict] = deque()
        self._closed = False

    def _fetch(self, timeout_ms: int) -> None:
        got = self._coord.call(
            "GET", f"/v1/events/{self.id}?timeout_ms={timeout_ms}", None, 30 + timeout_ms / 1000
        )
        self._buffer.extend(got["events"])

    def drain(self) -> list[dict]:
        """The events that happened by now, without waiting."""
        self._fetch(0)
        out = list(self._buffer)
        self._buffer.clear()
        return out

    def next_sync(self, timeout: float = 10.0) -> dict:
        """The next event, waiting up to `timeout` seconds (TimeoutError after)."""
        deadline = time.monotonic() + timeout
        while not self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no event of group {self.group_id!r} within {timeout}s")
            self._fetch(min(int(left * 1000) + 1, self._POLL_MS))
        return self._buffer.popleft()

    def __aiter__(self) -> RemoteEventStream:
        return self

    async def __anext__(self) -> dict:
        while not self._buffer:
            await asyncio.to_thread(self._fetch, self._POLL_MS)
        return self._buffer.popleft()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._coord.call("DELETE", f"/v1/events/{self.id}")

    async def __aenter__(self) -> RemoteEventStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.close)

    def __enter__(self) -> RemoteEventStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _view(data: dict) -> GroupView:
    return GroupView(**{**data, "members": tuple(member_from_json(m) for m in data["members"])})


def spawn_groupcoord(data_dir: Path, *, virtual_clock: bool = True, **options: object) -> GroupCoordProcess:
    """Start a coordinator process with its control endpoint; `options` are Kafka config names with
    underscores, passed as `--kafka-name-with-dashes` flags."""
    return GroupCoordProcess(data_dir, virtual_clock, **options).start()
